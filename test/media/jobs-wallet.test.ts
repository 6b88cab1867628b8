/**
 * A wallet-paid job on a local chain: a wallet above the service's $0.10 floor but short of the quote gets the live
 * service's plain 402 on the queue, which no automatic top-up follows; the run checks the quote against the wallet's
 * credit first and tops up once within its policy, then queues once. The ledger: one TOP_UP, one video CHARGE.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Emulator } from "../../src/emulator/index.js";
import { InsufficientBalanceError } from "../../src/http/errors.js";
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
    await expect(client.video.queue({ model: "emu-video", prompt: "a long pan over the hills", duration: "10s", resolution: "720p" })).rejects.toBeInstanceOf(
      InsufficientBalanceError,
    );
    expect(count("/x402/top-up")).toBe(0);
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
