/**
 * A job under a spend budget, through the emulator: the quote is what the budget holds and settles (the service
 * charges it at the queue); a budget that cannot fit the quote refuses the run before anything is queued or paid, and
 * a wallet short of credit does not top up for a job its budget would refuse.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { BudgetExceededError } from "../../src/http/errors.js";
import { SpendBudget } from "../../src/spend/budget.js";
import { SpendLog } from "../../src/spend/log.js";
import { EvmWallet } from "../../src/evm/index.js";
import { recordingClient } from "./helpers.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({
    apiKeys: [{ key: "jobs", usd: 20, diem: 0 }],
    jobs: { processingMs: { video: 500, audio: 500 } },
    x402: { solana: false },
  });
});
afterAll(async () => {
  await emu?.close();
});

const video = { model: "emu-video", prompt: "waves rolling onto a beach", duration: "2s" as const, resolution: "480p" };

describe("jobs under a SpendBudget", () => {
  it("holds the quote as the job is queued and settles to it: spent is the ledger's charge; the log has it under the job's id", async () => {
    const budget = new SpendBudget({ maxUsd: 1, name: "jobs" });
    const log = new SpendLog();
    const { client } = recordingClient(emu, { apiKey: "jobs", budget, spendLog: log });
    const quote = (await client.video.quote(video)).quoteUsd;
    const result = await client.video.generate(video, { pollIntervalMs: { initial: 0 } });
    expect(budget.spentUsd).toBe(quote);
    expect(budget.reservedUsd).toBe(0);
    const charge = emu.account("jobs")!.entries.find((e) => e.type === "CHARGE" && e.kind === "video")!;
    expect(-charge.amount).toBe(quote);
    expect(log.charges).toEqual([expect.objectContaining({ kind: "job", source: "priced", costUsd: quote, requestId: charge.requestId })]);
    expect(result.queueId).toBeTruthy();
  });

  it("a budget that cannot fit the quote refuses the run: nothing queued, nothing charged", async () => {
    const budget = new SpendBudget({ maxUsd: 0.05, name: "small" });
    const { client, count } = recordingClient(emu, { apiKey: "jobs", budget });
    const before = emu.account("jobs")!.entries.length;
    const err = await client.video.generate(video).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BudgetExceededError);
    expect((err as BudgetExceededError).estimateUsd).toBe(0.1);
    expect(count("/video/quote")).toBe(1);
    expect(count("/video/queue")).toBe(0);
    expect(emu.account("jobs")!.entries.length).toBe(before);
  });

  it("a wallet short of the quote does not top up for a job its budget refuses", async () => {
    const wallet = EvmWallet.random();
    const budget = new SpendBudget({ maxUsd: 0.05, name: "wallet-small" });
    const { client, count } = recordingClient(emu, { wallet, budget });
    const err = await client.video.generate(video).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BudgetExceededError);
    expect(count("/x402/top-up")).toBe(0);
    expect(count("/video/queue")).toBe(0);
  });
});
