/**
 * Money edge cases found in review, with a scripted top-up endpoint (a fake `send`) so every branch is
 * deterministic: explicit top-ups obey payee pinning, an automatic top-up is not failed by a refused explicit
 * one, a kept payment whose first answer was lost and whose re-send is answered "already used" counts as
 * settled, and USD amounts never round up into atomic units.
 */
import { describe, expect, it } from "vitest";
import { PaymentFailedError, PaymentPolicyError } from "../../src/http/errors.js";
import { PaymentPolicy, USDC_BASE, X402PaymentController } from "../../src/x402/index.js";
import { EvmWallet } from "../../src/evm/index.js";
import { usdToAtomic } from "../../src/x402/encoding.js";

const TOP_UP = "http://127.0.0.1:1/api/v1/x402/top-up";
const PINNED = "0x1111111111111111111111111111111111111111";
const OTHER = "0x2222222222222222222222222222222222222222";
const offer = (payTo: string) => ({
  scheme: "exact",
  network: "eip155:8453",
  amount: "5000000",
  asset: USDC_BASE,
  payTo,
  maxTimeoutSeconds: 300,
  extra: { name: "USD Coin", version: "2" },
});

/** A top-up endpoint: 402 with `offered` without a signature; `answer(n)` for the n-th signed POST. */
function endpoint(offered: string, answer: (n: number) => Response | Error) {
  const signed: { payTo: string; amount: string; header: string }[] = [];
  const send = async (_url: unknown, init: { headers?: HeadersInit } = {}) => {
    // v2 in PAYMENT-SIGNATURE; an amount above the offer in the legacy v1 form, in X-402-Payment
    const h = new Headers(init.headers);
    const header = h.get("PAYMENT-SIGNATURE") ?? h.get("X-402-Payment");
    if (!header) return new Response(JSON.stringify({ x402Version: 2, accepts: [offer(offered)] }), { status: 402 });
    const payload = JSON.parse(Buffer.from(header, "base64").toString("utf8"));
    const { to, value } = payload.payload.authorization;
    signed.push({ payTo: to, amount: value, header });
    const out = answer(signed.length);
    if (out instanceof Error) throw out;
    return out;
  };
  return { send: send as never, signed };
}
const ok = (usd: number) =>
  new Response(JSON.stringify({ success: true, data: { amountCredited: usd, newBalance: usd } }), { status: 200 });

describe("explicit top-ups", () => {
  it("obey the payee pinned by an earlier payment (no allowedPayees): a changed payee is refused, nothing signed", async () => {
    const policy = new PaymentPolicy({ maxPerTopUpUsd: 20 });
    const wallet = EvmWallet.random();
    await policy.authorize([offer(PINNED)], { namespace: "eip155", walletAddress: wallet.address }); // paid PINNED before
    const { send, signed } = endpoint(OTHER, () => ok(7));
    const controller = new X402PaymentController({ wallet, policy });
    const err = await controller.explicitTopUp(send, TOP_UP, 7).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PaymentPolicyError);
    expect((err as PaymentPolicyError).rule).toBe("payee");
    expect(signed).toEqual([]);
    expect(await policy.spentUsd()).toBe(5); // only the earlier payment
  });

  it("pay the explicit amount to the pinned payee", async () => {
    const policy = new PaymentPolicy({ maxPerTopUpUsd: 20 });
    const { send, signed } = endpoint(PINNED, () => ok(7.5));
    const controller = new X402PaymentController({ wallet: EvmWallet.random(), policy });
    expect((await controller.explicitTopUp(send, TOP_UP, 7.5)).amountUsd).toBe(7.5);
    expect(signed.map((s) => [s.payTo, s.amount])).toEqual([[PINNED, "7500000"]]);
    expect(await controller.store.pins(policy.scopeKey)).toEqual({ "eip155:8453": PINNED.toLowerCase() });
  });

  it("a refused explicit amount does not fail an automatic top-up that joined it", async () => {
    const policy = new PaymentPolicy({ amountUsd: 5, maxPerTopUpUsd: 10 });
    const { send, signed } = endpoint(PINNED, () => ok(5));
    const controller = new X402PaymentController({ wallet: EvmWallet.random(), policy });
    const explicit = controller.explicitTopUp(send, TOP_UP, 50); // over the cap: refused
    const automatic = controller.topUp(send, TOP_UP); // a 402 meanwhile
    await expect(explicit).rejects.toMatchObject({ rule: "maxPerTopUp" });
    expect((await automatic).amountUsd).toBe(5);
    expect(signed).toHaveLength(1);
  });
});

describe("at most once across top-ups", () => {
  it("a kept payment re-sent by a later top-up and answered 'already used' is settled, never re-signed", async () => {
    const reset = Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNRESET" } });
    const { send, signed } = endpoint(PINNED, (n) =>
      n === 1 ? reset : new Response(JSON.stringify({ error: "PAYMENT_ALREADY_USED", message: "nonce used" }), { status: 400 }),
    );
    const controller = new X402PaymentController({
      wallet: EvmWallet.random(),
      policy: { allowedPayees: [PINNED] },
      maxResends: 0,
      resendDelayMs: 0,
    });
    await expect(controller.topUp(send, TOP_UP)).rejects.toBeInstanceOf(PaymentFailedError);
    expect(controller.hasPendingPayment).toBe(true);
    const result = await controller.topUp(send, TOP_UP);
    expect(result.amountUsd).toBe(5);
    expect(controller.hasPendingPayment).toBe(false);
    expect(new Set(signed.map((s) => s.header)).size).toBe(1); // one signature, sent twice
    expect(controller.completedTopUps).toBe(1);
  });
});

describe("amounts", () => {
  it("USD to atomic units rounds down and keeps the decimal digits asked for", () => {
    expect(usdToAtomic(9.9999996)).toBe(9_999_999n); // toFixed(6) rounded this up to 10
    expect(usdToAtomic(5.0000009)).toBe(5_000_000n);
    expect(usdToAtomic(5.1)).toBe(5_100_000n);
    expect(usdToAtomic(0.1 + 0.2)).toBe(300_000n);
    expect(usdToAtomic(7.123456789, 18)).toBe(7_123_456_789_000_000_000n); // not ...788999999567
    expect(usdToAtomic(1.5e-5)).toBe(15n);
    expect(() => usdToAtomic(NaN)).toThrow(RangeError);
  });

  it("an owner's amount with many decimals never pays more than asked, even at the cap", () => {
    const policy = new PaymentPolicy({ amountUsd: 9.9999996, maxPerTopUpUsd: 10 });
    const d = policy.decide([offer(PINNED)], { namespace: "eip155" });
    expect(d.requirement.amount).toBe("9999999");
  });
});

describe("keys", () => {
  it("an EVM key with a trailing newline or an uppercase 0X prefix (as read from a file) is accepted", () => {
    const wallet = EvmWallet.random();
    const key = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318";
    const address = new EvmWallet(key).address;
    expect(new EvmWallet(`${key}\n`).address).toBe(address);
    expect(new EvmWallet(`  0X${key.slice(2)}`).address).toBe(address);
    expect(wallet.address).toMatch(/^0x/);
  });
});
