/**
 * The emulator knobs the money model needs, over loopback HTTP and the local chain: `wrongOffer` (the top-up
 * endpoint offers another payee, asset or amount: a policy that pins the treasury refuses it before signing; a
 * payment signed for it anyway is refused as not offered, nothing moves) and `countsEpoch` (the counted answers start
 * again when it changes, so a test sets them anew on a running emulator).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Emulator } from "langchain-service-emulator";
import type { X402EmulatorOptions } from "../../packages/langchain-service-emulator/src/x402/index.js";
import { ChatService, PaymentPolicyError, ServiceClient, TopUpRejectedError } from "../../src/index.js";
import { EvmWallet } from "../../src/evm/index.js";
import { signPayment } from "../../src/x402/payment.js";
import { PaymentPolicy } from "../../src/x402/policy.js";
import { payer, startPaidEmulator, testPolicy, unpacedRoutes, usdcBalance } from "../x402/helpers.js";

const STRANGER = "0x000000000000000000000000000000000000dEaD";
let emu: Emulator;
const x402: X402EmulatorOptions = {};

beforeAll(async () => {
  emu = await startPaidEmulator({ chain: { accounts: 8 }, x402: x402 as Record<string, unknown> });
});
afterAll(() => emu?.close());

const topUpUrl = () => `${emu.url}/x402/top-up`;
async function offer(): Promise<Record<string, unknown>> {
  const res = await fetch(topUpUrl(), { method: "POST" });
  expect(res.status).toBe(402);
  return ((await res.json()) as { accepts: Record<string, unknown>[] }).accepts[0]!;
}

describe("wrongOffer", () => {
  it("the first N reads offer the wrong payee, asset or amount, then the service's own terms again", async () => {
    const own = await offer();
    Object.assign(x402, { countsEpoch: 1, wrongOffer: { first: 1, payTo: STRANGER } });
    expect((await offer()).payTo).toBe(STRANGER);
    expect(await offer()).toEqual(own);
    Object.assign(x402, { countsEpoch: 2, wrongOffer: { first: 1, asset: "0x1111111111111111111111111111111111111111", amountUsd: 50 } });
    const wrong = await offer();
    expect(wrong).toMatchObject({ asset: "0x1111111111111111111111111111111111111111", amount: "50000000", payTo: own.payTo });
    expect(await offer()).toEqual(own);
    delete x402.wrongOffer;
  });

  it("a policy pinned to the treasury refuses a wrong payee before signing: nothing signed, nothing moved", async () => {
    Object.assign(x402, { countsEpoch: 3, wrongOffer: { first: 5, payTo: STRANGER } });
    try {
      const wallet = payer(emu, 1);
      const before = await usdcBalance(emu, wallet.address);
      const model = new ChatService({ model: "emu-xs", wallet, payment: testPolicy(emu), baseUrl: emu.url, pacing: unpacedRoutes });
      const err = await model.invoke("hi").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PaymentPolicyError);
      expect((err as PaymentPolicyError).rule).toBe("payee");
      expect(await usdcBalance(emu, wallet.address)).toBe(before);
    } finally {
      delete x402.wrongOffer;
    }
  });

  it("a payment signed for a wrong offer is refused as not offered: the chain does not move", async () => {
    Object.assign(x402, { countsEpoch: 4, wrongOffer: { first: 1, payTo: STRANGER } });
    const wrong = await offer();
    delete x402.wrongOffer;
    const wallet = payer(emu, 2);
    const before = await usdcBalance(emu, wallet.address);
    // a policy that would pay anyone: the signature a careless client gives away
    const decision = new PaymentPolicy({ pinPayees: false }).decide([wrong], { namespace: "eip155" });
    const signed = await signPayment(wallet, decision, { resource: { url: topUpUrl() } });
    const res = await fetch(topUpUrl(), { method: "POST", headers: { [signed.headerName]: signed.header } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe("PAYMENT_VERIFICATION_FAILED");
    expect(await usdcBalance(emu, wallet.address)).toBe(before);
  });
});

describe("countsEpoch", () => {
  it("counted answers start again when it changes", async () => {
    const wallet = new EvmWallet(emu.chain!.accounts[3]!.privateKey);
    const client = new ServiceClient({ baseUrl: emu.url, wallet, payment: testPolicy(emu), pacing: unpacedRoutes, retry: false });
    Object.assign(x402, { countsEpoch: 10, settlementFailures: 1 });
    try {
      expect(await client.topUp(5).catch((e: unknown) => e)).toBeInstanceOf(TopUpRejectedError);
      expect((await client.topUp(5)).amountUsd).toBe(5); // the one failure was used
      x402.countsEpoch = 11; // a new epoch: one more failure
      expect(await client.topUp(5).catch((e: unknown) => e)).toBeInstanceOf(TopUpRejectedError);
      expect((await client.topUp(5)).amountUsd).toBe(5);
    } finally {
      delete x402.settlementFailures;
    }
  });
});
