/**
 * ServiceEmbeddings paid by a wallet, no API key: the first request meets the 402 of a wallet with no credit,
 * the stack tops up with an x402 payment within the owner's policy and sends the request again; the answer
 * carries `X-Balance-Remaining`, and the charge lands on the wallet's ledger account.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceEmbeddings } from "../../src/embeddings/index.js";
import { ChatService } from "../../src/chat/index.js";
import { createServiceFetch } from "../../src/stack.js";
import { PaymentPolicyError } from "../../src/http/errors.js";
import type { Emulator } from "langchain-service-emulator";
import { payer, startPaidEmulator, testPolicy, usdcBalance } from "../x402/helpers.js";

let emu: Emulator;
beforeAll(async () => {
  // a deployment that sends X-Balance-Remaining (the live service does not)
  emu = await startPaidEmulator({ x402: { balanceHeader: true } });
});
afterAll(async () => {
  await emu?.close();
});

describe("ServiceEmbeddings with a wallet", () => {
  it("402 -> top-up -> retry, then X-Balance-Remaining and a charge on the wallet", async () => {
    const wallet = payer(emu, 3);
    const statuses: number[] = [];
    const events: string[] = [];
    const e = new ServiceEmbeddings({
      baseUrl: emu.url,
      wallet,
      payment: testPolicy(emu, { maxPerTopUpUsd: 5 }),
      onPayment: (event) => events.push(event.type),
      fetch: async (input, init) => {
        const res = await globalThis.fetch(input, init);
        if (String(input).endsWith("/embeddings")) statuses.push(res.status);
        return res;
      },
    });
    const before = await usdcBalance(emu, wallet.address);
    const vectors = await e.embedDocuments(["paid by my own wallet", "no API key anywhere"]);
    expect(vectors).toHaveLength(2);
    expect(statuses).toEqual([402, 200]); // refused for credit, then served after the top-up
    expect(events.length).toBeGreaterThan(0);
    expect(await usdcBalance(emu, wallet.address)).toBe(before - 5_000_000n);

    const account = emu.ledger.wallet(wallet.address);
    const totals = emu.ledger.totals(account);
    expect(totals).toMatchObject({ topUps: 1, charges: 1 });
    expect(account.entries.at(-1)).toMatchObject({ type: "CHARGE", kind: "embedding" });
    const remaining = e.lastUsage?.balanceRemainingUsd;
    expect(remaining).toBeCloseTo(account.usd, 6);
    expect(remaining).toBeLessThanOrEqual(5);

    // the next call is served from that credit: no second payment
    await e.embedQuery("again");
    expect(statuses).toEqual([402, 200, 200]);
    expect(emu.ledger.totals(account).topUps).toBe(1);
  });

  it("shares one stack (wallet, policy, credit) with ChatService", async () => {
    const wallet = payer(emu, 4);
    const serviceFetch = createServiceFetch({ baseUrl: emu.url, wallet, payment: testPolicy(emu, { maxPerTopUpUsd: 5 }) });
    const chat = new ChatService({ model: "emu-xs", serviceFetch });
    const e = new ServiceEmbeddings({ serviceFetch });
    expect((await chat.invoke("hello")).text).toBe("Echo: hello");
    await e.embedQuery("served from the credit chat's call bought");
    expect(emu.ledger.totals(emu.ledger.wallet(wallet.address))).toMatchObject({ topUps: 1, charges: 2 });
  });

  it("a policy that refuses the payment refuses before any money moves", async () => {
    const wallet = payer(emu, 7);
    const e = new ServiceEmbeddings({ baseUrl: emu.url, wallet, payment: testPolicy(emu, { maxPerTopUpUsd: 1 }) });
    const before = await usdcBalance(emu, wallet.address);
    await expect(e.embedQuery("too expensive")).rejects.toBeInstanceOf(PaymentPolicyError);
    expect(await usdcBalance(emu, wallet.address)).toBe(before);
  });
});
