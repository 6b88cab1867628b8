/**
 * A hostile service: its 402s ask for payment to an unknown payee, in an unknown asset, on the wrong chain, or
 * for too much. The payment layer refuses before signing: no PAYMENT-SIGNATURE ever reaches the server.
 * A real loopback HTTP server plays the hostile service.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PaymentFailedError, PaymentPolicyError } from "../../src/http/errors.js";
import { USDC_BASE, withX402, type PaymentEvent } from "../../src/x402/index.js";
import { EvmWallet } from "../../src/evm/index.js";

let server: Server;
let base: string;
let offer: Record<string, unknown>[] = [];
let signaturesReceived = 0;
let topUpDiscoveries = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.headers["payment-signature"] || req.headers["x-payment"]) signaturesReceived++;
    if (req.url?.endsWith("/x402/top-up") && !req.headers["payment-signature"]) topUpDiscoveries++;
    const body = req.url?.endsWith("/x402/top-up")
      ? { x402Version: 2, accepts: [] }
      : { error: "Payment required", code: "PAYMENT_REQUIRED", suggestedTopUpUsd: 10 };
    const required = Buffer.from(JSON.stringify({ x402Version: 2, accepts: offer })).toString("base64");
    res.writeHead(402, { "content-type": "application/json", "payment-required": required });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const GOOD_PAYEE = "0x1111111111111111111111111111111111111111";
const entry = (over: Record<string, unknown>) => ({
  scheme: "exact",
  network: "eip155:8453",
  amount: "5000000",
  asset: USDC_BASE,
  payTo: GOOD_PAYEE,
  maxTimeoutSeconds: 300,
  extra: { name: "USD Coin", version: "2" },
  ...over,
});

async function attempt(accepts: Record<string, unknown>[]) {
  offer = accepts;
  signaturesReceived = 0;
  const events: PaymentEvent[] = [];
  const f = withX402(fetch, { wallet: EvmWallet.random(), policy: { allowedPayees: [GOOD_PAYEE] }, onPayment: (e) => events.push(e) });
  const err = await f(`${base}/chat/completions`, { method: "POST", body: "{}" }).catch((e: unknown) => e);
  return { err, events };
}

describe("malicious 402s: nothing is signed", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["unknown payee", { payTo: "0x9999999999999999999999999999999999999999" }, "payee"],
    ["unknown asset", { asset: "0x8888888888888888888888888888888888888888" }, "asset"],
    ["wrong chain", { network: "eip155:1" }, "network"],
    ["amount over the cap", { amount: "50000000" }, "maxPerTopUp"],
    ["absurd amount", { amount: "999999999999999999999999" }, "maxPerTopUp"],
    ["malformed amount", { amount: "5.0" }, "amount"],
  ];
  for (const [name, over, rule] of cases) {
    it(`${name} -> PaymentPolicyError(${rule}), no signature sent`, async () => {
      const { err, events } = await attempt([entry(over)]);
      expect(err).toBeInstanceOf(PaymentPolicyError);
      expect((err as PaymentPolicyError).rule).toBe(rule);
      expect(signaturesReceived).toBe(0);
      expect(events.map((e) => e.type)).toEqual(["payment.refused"]);
      expect(events[0]!.rule).toBe(rule);
    });
  }

  it("no requirements anywhere -> PaymentFailedError after asking the top-up endpoint once", async () => {
    topUpDiscoveries = 0;
    const { err } = await attempt([]);
    expect(err).toBeInstanceOf(PaymentFailedError);
    expect(topUpDiscoveries).toBe(1);
    expect(signaturesReceived).toBe(0);
  });
});

describe("payee pinning (no allowedPayees)", () => {
  it("pays the first payee, then refuses a 402 that names another one on the same network", async () => {
    const { PaymentPolicy } = await import("../../src/x402/policy.js");
    const { MemoryStore } = await import("../../src/store/memory.js");
    const store = new MemoryStore();
    const OTHER = "0x9999999999999999999999999999999999999999";
    const ctx = { namespace: "eip155" as const, walletAddress: "0x00000000000000000000000000000000000000b1", store };
    const policy = new PaymentPolicy();
    await policy.authorize([entry({})], ctx);
    expect(await store.pins(policy.scopeKey)).toEqual({ "eip155:8453": GOOD_PAYEE.toLowerCase() });
    // the same payee again: fine
    expect((await policy.authorize([entry({})], ctx)).decision.payTo).toBe(GOOD_PAYEE);
    // another payee: refused, naming the rule
    const err = await policy.authorize([entry({ payTo: OTHER })], ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PaymentPolicyError);
    expect((err as PaymentPolicyError).rule).toBe("payee");
    // a reservation released before signing pins nothing
    const fresh = new PaymentPolicy();
    const freshCtx = { ...ctx, walletAddress: "0x00000000000000000000000000000000000000b2" };
    await (await fresh.authorize([entry({ payTo: OTHER })], freshCtx)).release();
    expect((await fresh.authorize([entry({})], freshCtx)).decision.payTo).toBe(GOOD_PAYEE);
    // opting out allows any payee
    const open = new PaymentPolicy({ pinPayees: false });
    const openCtx = { ...ctx, walletAddress: "0x00000000000000000000000000000000000000b3" };
    await open.authorize([entry({})], openCtx);
    expect((await open.authorize([entry({ payTo: OTHER })], openCtx)).decision.payTo).toBe(OTHER);
  });
});
