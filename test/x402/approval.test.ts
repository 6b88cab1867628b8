/**
 * A person's approval before money moves, and deny-by-default policies, against the emulator and its local chain:
 * - `approve` is asked before every signature (automatic and explicit top-ups), with the payment as it would be
 *   signed; false, a throw, or no answer in time is a `PaymentPolicyError` (rule `approval`) with nothing signed
 *   and nothing reserved; 20 concurrent 402s ask once;
 * - `strict: true` pays only listed payees, assets and networks, and pins nothing on first use.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Emulator } from "langchain-service-emulator";
import { ServiceClient } from "../../src/client.js";
import { ConfigurationError, PaymentPolicyError } from "../../src/http/errors.js";
import {
  PaymentPolicy,
  USDC_BASE,
  type PaymentApprovalRequest,
  type PaymentEvent,
  type PaymentPolicyOptions,
} from "../../src/x402/index.js";
import { chatBody, payer, startPaidEmulator, testPolicy, unpacedRoutes, usdcBalance } from "./helpers.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startPaidEmulator({ chain: { accounts: 12 } });
});
afterAll(async () => {
  await emu?.close();
});

function walletClient(index: number, payment: PaymentPolicy | PaymentPolicyOptions) {
  const wallet = payer(emu, index);
  const events: PaymentEvent[] = [];
  const client = new ServiceClient({
    baseUrl: emu.url,
    wallet,
    payment,
    onPayment: (e) => events.push(e),
    abuseGuard: false,
    pacing: unpacedRoutes,
  });
  const chat = () => client.request("/chat/completions", { body: JSON.parse(chatBody()) });
  const topUps = () => (emu.account(wallet.address)?.entries ?? []).filter((e) => e.type === "TOP_UP");
  return { wallet, client, events, chat, topUps, signed: () => events.filter((e) => e.type === "payment.signed").length };
}

describe("approve: a person's answer before every signature", () => {
  it("refused: PaymentPolicyError (approval), nothing signed, no USDC moved, the reservation undone", async () => {
    const asked: PaymentApprovalRequest[] = [];
    const policy = new PaymentPolicy({ ...testPolicy(emu), approve: (r) => (asked.push(r), false) });
    const w = walletClient(1, policy);
    const before = await usdcBalance(emu, w.wallet.address);
    const err = await w.chat().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PaymentPolicyError);
    expect((err as PaymentPolicyError).rule).toBe("approval");
    expect((err as Error).message).toMatch(/not approved; nothing was signed/);
    expect(asked).toEqual([
      {
        amountUsd: 5,
        minimumUsd: 5,
        network: "eip155:8453",
        asset: USDC_BASE,
        payTo: emu.chain!.treasury,
        wallet: w.wallet.address,
        reason: expect.stringMatching(/402 Payment Required answered POST \/api\/v1\/chat\/completions/),
      },
    ]);
    expect(w.signed()).toBe(0);
    expect(w.events.map((e) => e.type)).toContain("payment.refused");
    expect(w.topUps()).toHaveLength(0);
    expect(await usdcBalance(emu, w.wallet.address)).toBe(before);
    expect(await policy.spentUsd()).toBe(0); // the reserved $5 was given back
  });

  it("approved: signs and pays exactly what was shown, and the request is served", async () => {
    const asked: PaymentApprovalRequest[] = [];
    const w = walletClient(2, { ...testPolicy(emu), approve: async (r) => (asked.push(r), true) });
    const res = await w.chat();
    expect(res.status).toBe(200);
    expect(asked).toHaveLength(1);
    expect(w.topUps().map((e) => e.amount)).toEqual([asked[0]!.amountUsd]);
    expect(w.signed()).toBe(1);
  });

  it("20 concurrent 402s of one wallet ask once (the single flight holds), then all are served", async () => {
    let asks = 0;
    const w = walletClient(3, {
      ...testPolicy(emu),
      approve: async () => {
        asks++;
        await new Promise((r) => setTimeout(r, 50)); // a person takes a moment
        return true;
      },
    });
    const results = await Promise.all(Array.from({ length: 20 }, () => w.chat()));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(asks).toBe(1);
    expect(w.topUps()).toHaveLength(1);
  });

  it("a throw, or no answer within approvalTimeoutMs, is a refusal with nothing signed", async () => {
    const threw = walletClient(4, {
      ...testPolicy(emu),
      approve: () => {
        throw new Error("the approver is offline");
      },
    });
    const e1 = await threw.chat().catch((e: unknown) => e);
    expect((e1 as PaymentPolicyError).rule).toBe("approval");
    expect((e1 as Error).message).toMatch(/approve threw: the approver is offline/);

    const silent = walletClient(5, { ...testPolicy(emu), approvalTimeoutMs: 100, approve: () => new Promise<boolean>(() => {}) });
    const e2 = await silent.chat().catch((e: unknown) => e);
    expect((e2 as PaymentPolicyError).rule).toBe("approval");
    expect((e2 as Error).message).toMatch(/no answer within 100 ms/);
    expect(threw.signed() + silent.signed()).toBe(0);
    expect(threw.topUps().length + silent.topUps().length).toBe(0);
  });

  it("an explicit top-up asks too, naming itself", async () => {
    const asked: PaymentApprovalRequest[] = [];
    const w = walletClient(6, { ...testPolicy(emu), approve: (r) => (asked.push(r), r.amountUsd <= 6) });
    await expect(w.client.topUp(7)).rejects.toMatchObject({ rule: "approval" });
    const done = await w.client.topUp(6);
    expect(done.amountUsd).toBe(6);
    expect(asked.map((r) => [r.amountUsd, r.reason])).toEqual([
      [7, "an explicit top-up of $7"],
      [6, "an explicit top-up of $6"],
    ]);
    expect(w.topUps().map((e) => e.amount)).toEqual([6]);
  });

  it("a truthy answer that is not true is no approval", async () => {
    const w = walletClient(7, { ...testPolicy(emu), approve: () => "yes" as unknown as boolean });
    await expect(w.chat()).rejects.toMatchObject({ rule: "approval" });
    expect(w.signed()).toBe(0);
  });

  it("approve must be a function; approvalTimeoutMs a positive number", () => {
    expect(() => new PaymentPolicy({ approve: true as unknown as () => boolean })).toThrow(ConfigurationError);
    expect(() => new PaymentPolicy({ approve: () => true, approvalTimeoutMs: 0 })).toThrow(ConfigurationError);
    expect(new PaymentPolicy({ approve: () => true }).toJSON()).toMatchObject({ approve: "[function]", approvalTimeoutMs: 300_000 });
  });
});

describe("strict: deny by default", () => {
  it("needs its lists: payees, and assets that name their networks", () => {
    expect(() => new PaymentPolicy({ strict: true })).toThrow(/strict needs allowedPayees/);
    expect(() => new PaymentPolicy({ strict: true, allowedPayees: ["0x1"] })).toThrow(/strict needs allowedAssets/);
    expect(() => new PaymentPolicy({ strict: true, allowedPayees: ["0x1"], allowedAssets: [USDC_BASE] })).toThrow(/names its network/);
    const p = new PaymentPolicy({ strict: true, allowedPayees: ["0x1"], allowedAssets: [{ network: "base", asset: USDC_BASE }] });
    expect(p.allowedNetworks).toEqual(["eip155:8453"]); // the assets' networks, not Base and Solana by default
    expect(p.pinPayees).toBe(false);
  });

  it("pays a listed payee; refuses an unlisted one (rule payee) where a default policy would pin it on first use", async () => {
    const listed = walletClient(8, {
      strict: true,
      allowedPayees: [emu.chain!.treasury],
      allowedAssets: [{ network: "eip155:8453", asset: USDC_BASE }],
    });
    expect((await listed.chat()).status).toBe(200);
    expect(listed.topUps()).toHaveLength(1);

    const other = "0x000000000000000000000000000000000000dEaD";
    const strict = walletClient(9, { strict: true, allowedPayees: [other], allowedAssets: [{ network: "eip155:8453", asset: USDC_BASE }] });
    const err = await strict.chat().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PaymentPolicyError);
    expect((err as PaymentPolicyError).rule).toBe("payee");
    expect(strict.topUps()).toHaveLength(0);

    // the same service under a default policy pins the first payee it meets and pays it
    const trusting = walletClient(10, {});
    expect((await trusting.chat()).status).toBe(200);
    expect(trusting.topUps()).toHaveLength(1);
  });

  it("refuses an asset or network not listed", async () => {
    const w = walletClient(11, {
      strict: true,
      allowedPayees: [emu.chain!.treasury],
      allowedAssets: [{ network: "eip155:84532", asset: USDC_BASE }],
    });
    const err = await w.chat().catch((e: unknown) => e);
    expect((err as PaymentPolicyError).rule).toBe("network");
    expect(w.topUps()).toHaveLength(0);
  });
});
