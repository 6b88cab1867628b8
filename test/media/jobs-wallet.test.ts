/**
 * A wallet-paid job on a local chain: a wallet above the service's $0.10 floor but short of the quote gets the live
 * service's plain 402 on the queue, which no automatic top-up follows: a `CreditBelowQuoteError` that says so (not the
 * API-key account's wording). The run checks the quote against the wallet's credit first and tops up once within its
 * policy, then queues once; when the credit it knew was spent meanwhile, the queue's plain 402 is met the same way
 * (a top-up within the policy, then one more queue). The ledger: one TOP_UP, one video CHARGE.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Emulator } from "langchain-service-emulator";
import { InsufficientBalanceError } from "../../src/http/errors.js";
import { CreditBelowQuoteError } from "../../src/media/errors.js";
import { payer, startPaidEmulator, testPolicy } from "../x402/helpers.js";
import { decodeMp4 } from "./mp4-reader.js";
import { recordingClient } from "./helpers.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startPaidEmulator({ jobs: { processingMs: 300 } });
}, 120_000);
afterAll(async () => {
  await emu?.close();
});

describe("a wallet short of the quote", () => {
  it("the queue alone gets the plain 402 (no top-up follows it)", async () => {
    const wallet = payer(emu, 3);
    const { client, count } = recordingClient(emu, { wallet, payment: testPolicy(emu) });
    emu.context.ledger.wallet(wallet.address).usd = 0.15; // above the floor, under the quote
    const err = await client.video
      .queue({ model: "emu-video", prompt: "a long pan over the hills", duration: "10s", resolution: "720p" })
      .catch((e: unknown) => e);
    // typed for a wallet: its credit is under the quote (still an InsufficientBalanceError), not an API-key account's
    expect(err).toBeInstanceOf(CreditBelowQuoteError);
    expect(err).toBeInstanceOf(InsufficientBalanceError);
    expect(err).toMatchObject({ status: 402, kind: "video", model: "emu-video" });
    expect((err as Error).message).toMatch(/wallet's credit is under this video job's quote/);
    expect((err as Error).message).not.toMatch(/API-key/);
    expect(count("/x402/top-up")).toBe(0);
  });

  it("generate, the credit it knew spent meanwhile: the queue's plain 402 is topped up within the policy and queued once more", async () => {
    const wallet = payer(emu, 5);
    const account = emu.context.ledger.wallet(wallet.address);
    account.usd = 2;
    let reads = 0;
    const paths: string[] = [];
    const { client } = recordingClient(emu, {
      wallet,
      payment: testPolicy(emu, { maxPerTopUpUsd: 5, maxPerPeriodUsd: 10 }),
      fetch: async (input, init) => {
        paths.push(new URL(String(input)).pathname.replace(/^\/api\/v1/, ""));
        const res = await globalThis.fetch(input, init);
        // the run's balance read says $2, enough for the quote; right after, another program of the wallet spends it
        if (String(input).includes("/x402/balance/") && reads++ === 0) account.usd = 0.15;
        return res;
      },
    });
    const result = await client.video.generate(
      { model: "emu-video", prompt: "a long pan over the hills", duration: "10s", resolution: "720p" },
      { pollIntervalMs: { initial: 0 } },
    );
    expect(decodeMp4(result.bytes).durationSeconds).toBe(10);
    expect(paths.filter((p) => p === "/video/queue")).toHaveLength(2); // the refused one (nothing queued, nothing charged), then the job
    expect(emu.account(wallet.address)!.entries.map((e) => [e.type, e.kind ?? null, e.amount])).toEqual([
      ["TOP_UP", null, 5],
      ["CHARGE", "video", -0.7],
    ]);
  });

  it("generate tops up once within the policy first, then queues once: one TOP_UP, one video CHARGE, the MP4", async () => {
    const wallet = payer(emu, 4);
    const { client, count } = recordingClient(emu, { wallet, payment: testPolicy(emu, { maxPerTopUpUsd: 5, maxPerPeriodUsd: 10 }) });
    emu.context.ledger.wallet(wallet.address).usd = 0.15;
    const result = await client.video.generate(
      { model: "emu-video", prompt: "a long pan over the hills", duration: "10s", resolution: "720p" },
      { pollIntervalMs: { initial: 0 } },
    );
    expect(decodeMp4(result.bytes).durationSeconds).toBe(10);
    expect(result.quoteUsd).toBe(0.7);
    expect(count("/video/queue")).toBe(1);
    const rows = emu.account(wallet.address)!.entries;
    expect(rows.map((e) => [e.type, e.kind ?? null, e.amount])).toEqual([
      ["TOP_UP", null, 5],
      ["CHARGE", "video", -0.7],
    ]);
    expect(emu.account(wallet.address)!.usd).toBeCloseTo(4.45, 6);
  });
});
