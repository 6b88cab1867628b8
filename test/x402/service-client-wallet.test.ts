/**
 * ServiceClient with a wallet: the same stack signs in, pays on 402 and tops up on demand within one policy;
 * balance, transactions and X-Balance-Remaining come back through it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceClient, ChatService, PaymentPolicy, PaymentPolicyError, ConfigurationError } from "../../src/index.js";
import type { Emulator } from "langchain-service-emulator";
import { payer, startPaidEmulator, testPolicy, usdcBalance } from "./helpers.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startPaidEmulator();
});
afterAll(async () => {
  await emu?.close();
});

describe("ServiceClient with a wallet", () => {
  it("tops up on demand, reports balance and transactions, and tracks X-Balance-Remaining", async () => {
    const wallet = payer(emu, 5);
    const payment = new PaymentPolicy(testPolicy(emu, { maxPerTopUpUsd: 10, maxPerPeriodUsd: 15 }));
    const client = new ServiceClient({ baseUrl: emu.url, wallet, payment });
    const before = await usdcBalance(emu, wallet.address);

    const result = await client.topUp(7);
    expect(result.amountUsd).toBe(7);
    expect(await usdcBalance(emu, wallet.address)).toBe(before - 7_000_000n);

    const balance = await client.getX402Balance();
    expect(balance.walletAddress.toLowerCase()).toBe(wallet.address.toLowerCase());
    expect(balance.balanceUsd).toBe(7);

    // a chat call through a model sharing the wallet: served from that credit, no new payment
    const model = new ChatService({ model: "emu-xs", baseUrl: emu.url, wallet, payment });
    expect((await model.invoke("hello")).text).toBe("Echo: hello");
    const { transactions } = await client.getX402Transactions();
    expect(transactions.filter((t) => t.type === "TOP_UP")).toHaveLength(1);
    expect(transactions.some((t) => t.type === "CHARGE")).toBe(true);

    // X-Balance-Remaining of the client's own paid calls is tracked (shared per wallet)
    await client.cryptoRpc("base-mainnet", { method: "eth_chainId" });
    const last = await client.lastBalanceUsd();
    expect(last).toBeGreaterThan(6.9);
    expect(last).toBeLessThan(7);

    // the period cap is the policy's: 7 + 10 would exceed 15, refused before signing
    const err = await client.topUp(10).catch((e) => e);
    expect(err).toBeInstanceOf(PaymentPolicyError);
    expect(await usdcBalance(emu, wallet.address)).toBe(before - 7_000_000n);
  });

  it("refuses wallet actions without a wallet, before any request", async () => {
    const client = new ServiceClient({ baseUrl: emu.url, apiKey: "k" });
    await expect(client.topUp(5)).rejects.toBeInstanceOf(ConfigurationError);
    await expect(client.getX402Balance()).rejects.toBeInstanceOf(ConfigurationError);
  });
});

describe("the stack under the openai SDK", () => {
  it("signs in with the wallet (the SDK's own Authorization is dropped), pays on 402, and answers", async () => {
    const { default: OpenAI } = await import("openai");
    const { createServiceFetch } = await import("../../src/index.js");
    const wallet = payer(emu, 6);
    const sdk = new OpenAI({
      baseURL: emu.url,
      apiKey: "not-a-key",
      fetch: createServiceFetch({ baseUrl: emu.url, wallet, payment: testPolicy(emu) }) as never,
      maxRetries: 0,
    });
    const r = await sdk.chat.completions.create({ model: "emu-xs", messages: [{ role: "user", content: "paid by wallet" }] });
    expect(r.choices[0]!.message.content).toBe("Echo: paid by wallet");
    expect(emu.ledger.totals(emu.ledger.wallet(wallet.address)).topUps).toBe(1);
  });
});
