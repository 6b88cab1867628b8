/**
 * Long-running jobs through the emulator: `client.video` / `client.audio` (quote, queue, retrieve, complete) and the
 * whole run (`generate`): progress in order, polls never closer than the route's floor, the media deleted as it is
 * delivered (a video by retrieve's `delete_media_on_completion`: the live service refuses `/video/complete` for every
 * queue id, so it is never called). Money: a quote over `maxQuoteUsd` or beyond the wallet policy's reach is refused with nothing queued; a
 * lost queue answer is found again in the ledger (a wallet's transactions, an admin key's usage) with exactly one
 * charge and one queue request, and never queued again when the ledger cannot tell; a failed job's error carries its
 * refund; a cancelled run stops polling and names its queue id.
 */
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { InsufficientBalanceError, ValidationError } from "../../src/http/errors.js";
import { JobCancelledError, JobFailedError, JobOutcomeUnknownError, QuoteRefusedError } from "../../src/media/errors.js";
import { POLL_FLOOR_MS, type JobProgress } from "../../src/media/job-runner.js";
import { EvmWallet } from "../../src/evm/index.js";
import { decodeWav } from "../tools/helpers.js";
import { decodeMp4 } from "./mp4-reader.js";
import { recordingClient } from "./helpers.js";
import { testClock } from "../emulator/helpers.js";

let emu: Emulator;
// real time plus what a test moves it on by: the runs below poll in real time, the single retrieves move it on
const clock = testClock();
beforeAll(async () => {
  emu = await startEmulator({
    now: clock.now,
    apiKeys: [
      { key: "admin", usd: 20, diem: 0 },
      { key: "inference", usd: 20, diem: 0, admin: false },
      { key: "poor", usd: 0.15, diem: 0 },
    ],
    walletStartingUsd: 2,
    x402: { solana: false },
    // video jobs end before the first poll (its floor is 1.5 s); audio jobs are still running at their first polls
    jobs: { processingMs: { video: 1_000, audio: 2_000 } },
    rateLimits: { abuseMaxFailures: 10_000 },
  });
});
afterAll(async () => {
  await emu?.close();
});

const fast = { pollIntervalMs: { initial: 0 } }; // the floor then decides: 1.5 s for video, 0.5 s for audio
const video = { model: "emu-video", prompt: "waves rolling onto a beach", duration: "2s" as const, resolution: "480p" };
const videoCharges = (id: string) => emu.account(id)!.entries.filter((e) => e.type === "CHARGE" && e.kind === "video");

describe("client.video and client.audio: the four routes", () => {
  it("quote, queue, retrieve (PROCESSING, then the bytes, deleted as delivered); complete refused unsent", async () => {
    const { client, count } = recordingClient(emu, { apiKey: "admin" });
    expect((await client.video.quote(video)).quoteUsd).toBe(0.1);
    const queued = await client.video.queue(video);
    expect(queued).toMatchObject({ kind: "video", model: "emu-video", queueId: expect.any(String) });
    const running = await client.video.retrieve(queued);
    expect(running).toMatchObject({
      status: "PROCESSING",
      averageExecutionTimeMs: expect.any(Number),
      executionDurationMs: expect.any(Number),
    });
    clock.advance(1_000); // the video's processing time
    const done = await client.video.retrieve({ ...queued, deleteMediaOnCompletion: true });
    expect(done.status).toBe("COMPLETED");
    expect(done.status === "COMPLETED" && decodeMp4(done.bytes!).durationSeconds).toBe(2);
    await expect(client.video.retrieve(queued)).rejects.toMatchObject({ status: 404 });
    // the service refuses /video/complete for every queue id: refused here, before sending
    await expect(client.video.complete(queued)).rejects.toBeInstanceOf(ValidationError);
    expect(count("/video/complete")).toBe(0);
  });

  it("client.audio: quote (by duration, or by characters for the voice model), queue, retrieve, complete", async () => {
    const { client } = recordingClient(emu, { apiKey: "admin" });
    expect((await client.audio.quote({ model: "emu-music", prompt: "a calm piano melody", durationSeconds: 20 })).quoteUsd).toBe(0.2);
    expect((await client.audio.quote({ model: "emu-narrator", prompt: "x".repeat(1000) })).quoteUsd).toBe(0.3);
    const queued = await client.audio.queue({ model: "emu-narrator", prompt: "Chapter one.", voice: "Sarah" });
    expect(queued).toMatchObject({ kind: "audio", model: "emu-narrator" });
    expect((await client.audio.retrieve(queued)).status).toBe("PROCESSING");
    clock.advance(2_000); // the audio's processing time
    const done = await client.audio.retrieve({ ...queued, deleteMediaOnCompletion: false });
    expect(done.status === "COMPLETED" && done.contentType).toBe("audio/wav");
    expect(await client.audio.complete(queued)).toBe(true);
    await expect(client.audio.retrieve(queued)).rejects.toMatchObject({ status: 404 });
  });

  it("refuses bad parameters before any request", async () => {
    const { client, sent } = recordingClient(emu, { apiKey: "admin" });
    await expect(client.video.quote({ ...video, duration: "7 seconds" as "2s" })).rejects.toBeInstanceOf(ValidationError);
    await expect(client.video.queue({ ...video, imageUrl: "file:///etc/passwd" })).rejects.toThrow(/https URL or a base64 data URL/);
    await expect(client.audio.queue({ model: "emu-music", prompt: "x", lyricsOptimizer: true, lyricsPrompt: "la" })).rejects.toBeInstanceOf(
      ValidationError,
    );
    await expect(client.video.retrieve({ model: "emu-video", queueId: "" })).rejects.toBeInstanceOf(ValidationError);
    await expect(client.video.generate({ ...video, model: "" })).rejects.toBeInstanceOf(ValidationError);
    expect(sent).toEqual([]);
  });
});

describe("generate: the whole run", () => {
  it("reports quoted, queued, completed; polls no closer than the floor; the media is deleted as delivered", async () => {
    const { client, sent } = recordingClient(emu, { apiKey: "admin" });
    const steps: JobProgress[] = [];
    const result = await client.video.generate({ ...video, duration: "4s" }, { ...fast, onProgress: (p) => void steps.push(p) });
    expect(decodeMp4(result.bytes)).toMatchObject({ durationSeconds: 4, width: 160, height: 90 });
    expect(result).toMatchObject({ kind: "video", model: "emu-video", quoteUsd: 0.2, contentType: "video/mp4", recovered: false });
    expect(steps[0]).toMatchObject({ phase: "quoted", quoteUsd: 0.2 });
    expect(steps[1]).toMatchObject({ phase: "queued", queueId: result.queueId });
    expect(steps.at(-1)).toMatchObject({ phase: "completed", fraction: 1, polls: result.polls });
    const retrieves = sent.filter((s) => s.path === "/video/retrieve");
    const queuedAt = sent.find((s) => s.path === "/video/queue")!.at;
    expect(retrieves[0]!.at - queuedAt).toBeGreaterThanOrEqual(POLL_FLOOR_MS.video - 5);
    for (let i = 1; i < retrieves.length; i++)
      expect(retrieves[i]!.at - retrieves[i - 1]!.at).toBeGreaterThanOrEqual(POLL_FLOOR_MS.video - 5);
    expect(sent.filter((s) => s.path === "/video/complete")).toHaveLength(0); // delete_media_on_completion did it
    await expect(client.video.retrieve(result)).rejects.toMatchObject({ status: 404 });
    expect(videoCharges("admin").filter((e) => e.requestId === result.queueId)).toHaveLength(1);
  });

  it("audio jobs: progress while processing (the service's elapsed over its estimate, growing), a real WAV of the asked length; polls no closer than audio's floor", async () => {
    const { client, sent } = recordingClient(emu, { apiKey: "admin" });
    const steps: JobProgress[] = [];
    const result = await client.audio.generate(
      { model: "emu-music", prompt: "a calm piano melody", durationSeconds: 3 },
      { ...fast, onProgress: (p) => void steps.push(p) },
    );
    expect(decodeWav(result.bytes).durationSeconds).toBeCloseTo(3, 3);
    expect(result.quoteUsd).toBe(0.03);
    expect(steps.map((p) => p.phase)[0]).toBe("quoted");
    const processing = steps.filter((p) => p.phase === "processing");
    expect(processing.length).toBeGreaterThanOrEqual(1);
    for (const p of processing) {
      expect(p.fraction).toBeGreaterThan(0);
      expect(p.fraction).toBeLessThan(1);
      expect(p.averageExecutionTimeMs).toBeGreaterThan(2_000);
    }
    const fractions = processing.map((p) => p.fraction!);
    expect(fractions).toEqual([...fractions].sort((a, b) => a - b));
    expect(steps.at(-1)).toMatchObject({ phase: "completed", fraction: 1 });
    const retrieves = sent.filter((s) => s.path === "/audio/retrieve");
    for (let i = 1; i < retrieves.length; i++)
      expect(retrieves[i]!.at - retrieves[i - 1]!.at).toBeGreaterThanOrEqual(POLL_FLOOR_MS.audio - 5);
  });

  it("a privately hosted model's file is fetched from its download_url; /video/complete is never called", async () => {
    const { client, sent } = recordingClient(emu, { apiKey: "admin" });
    const result = await client.video.generate({ model: "emu-video-private", prompt: "a harbour at dawn", duration: "2s" }, fast);
    expect(decodeMp4(result.bytes).durationSeconds).toBe(2);
    expect(sent.filter((s) => s.path.startsWith("/video/download/"))).toHaveLength(1);
    expect(sent.filter((s) => s.path === "/video/complete")).toHaveLength(0);
    // retrieve asked the service to delete it instead
    expect(sent.filter((s) => s.path === "/video/retrieve").length).toBeGreaterThan(0);
  });
});

describe("the quote against the owner's limits", () => {
  it("maxQuoteUsd: a QuoteRefusedError before the queue; nothing queued, nothing charged", async () => {
    const { client, count } = recordingClient(emu, { apiKey: "admin" });
    const before = emu.account("admin")!.entries.length;
    const err = await client.video
      .generate({ ...video, duration: "10s", resolution: "720p" }, { maxQuoteUsd: 0.5 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QuoteRefusedError);
    expect(err).toMatchObject({ rule: "maxQuoteUsd", quoteUsd: 0.7, limitUsd: 0.5, kind: "video", model: "emu-video" });
    expect(count("/video/quote")).toBe(1);
    expect(count("/video/queue")).toBe(0);
    expect(emu.account("admin")!.entries.length).toBe(before);
  });

  it("a wallet whose credit is short and whose policy cannot top up enough: refused before anything is signed or queued", async () => {
    const wallet = new EvmWallet(Wallet.createRandom().privateKey);
    const { client, count } = recordingClient(emu, { wallet, payment: { maxPerTopUpUsd: 4, maxPerPeriodUsd: 4 } });
    // 2 USD of credit at first sight; a 10 s 720p video costs 0.70: fine. Spend it down first.
    emu.account(wallet.address) ?? (await client.getX402Balance());
    emu.account(wallet.address)!.usd = 0.5;
    const err = await client.video.generate({ ...video, duration: "10s", resolution: "720p" }, fast).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QuoteRefusedError);
    expect((err as QuoteRefusedError).rule).toMatch(/^maxPer(TopUp|Period)$/);
    expect((err as Error).message).toMatch(/costs \$0\.7 .*credit \(\$0\.5\)/);
    expect(count("/x402/top-up")).toBe(0);
    expect(count("/video/queue")).toBe(0);
  });

  it("an API key short of the quote: the service's plain 402 (InsufficientBalanceError), nothing charged", async () => {
    const { client } = recordingClient(emu, { apiKey: "poor" });
    await expect(client.video.generate({ ...video, duration: "4s" }, fast)).rejects.toBeInstanceOf(InsufficientBalanceError);
    expect(videoCharges("poor")).toHaveLength(0);
  });
});

describe("a lost queue answer is found again, never queued again", () => {
  it("wallet: the queue's answer is cut; the job is found in /x402/transactions and polled: one queue request, one charge, the video", async () => {
    emu.setFaults({ paths: ["/video/queue"], loseAnswers: { first: 1 } });
    try {
      const wallet = new EvmWallet(Wallet.createRandom().privateKey);
      const { client, count } = recordingClient(emu, { wallet, payment: { dryRun: true } });
      const steps: string[] = [];
      const result = await client.video.generate(video, { ...fast, onProgress: (p) => void steps.push(p.phase) });
      expect(result.recovered).toBe(true);
      expect(decodeMp4(result.bytes).durationSeconds).toBe(2);
      expect(steps).toEqual(expect.arrayContaining(["quoted", "recovering", "recovered", "completed"]));
      expect(steps).not.toContain("queued");
      expect(count("/video/queue")).toBe(1);
      expect(count(`/x402/transactions/${wallet.address}`)).toBeGreaterThanOrEqual(1);
      const charges = videoCharges(wallet.address);
      expect(charges).toHaveLength(1);
      expect(charges[0]!.requestId).toBe(result.queueId);
    } finally {
      emu.setFaults({});
    }
  });

  it("admin API key: found in /billing/usage-history; an INFERENCE key cannot read its ledger: JobOutcomeUnknownError, still one queue request", async () => {
    emu.setFaults({ paths: ["/video/queue"], loseAnswers: { first: 2 } });
    try {
      const admin = recordingClient(emu, { apiKey: "admin" });
      const result = await admin.client.video.generate(video, fast);
      expect(result.recovered).toBe(true);
      expect(admin.count("/video/queue")).toBe(1);
      expect(admin.count("/billing/usage-history")).toBeGreaterThanOrEqual(1);
      expect(videoCharges("admin").filter((e) => e.requestId === result.queueId)).toHaveLength(1);

      const inference = recordingClient(emu, { apiKey: "inference" });
      const err = await inference.client.video.generate(video, fast).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(JobOutcomeUnknownError);
      expect((err as Error).message).toMatch(/cannot read its ledger/);
      expect(inference.count("/video/queue")).toBe(1);
      expect(videoCharges("inference")).toHaveLength(1); // the job exists and was charged: nothing was queued twice
    } finally {
      emu.setFaults({});
    }
  });
});

describe("a failed job and a cancelled run", () => {
  it("a job that fails carries its REFUND row in the error (wallet and admin key); the model's 422 keeps its status", async () => {
    const wallet = new EvmWallet(Wallet.createRandom().privateKey);
    for (const { client } of [recordingClient(emu, { wallet, payment: { dryRun: true } }), recordingClient(emu, { apiKey: "admin" })]) {
      const err = await client.video.generate({ ...video, prompt: "a storm [[emu:fail=422]]" }, fast).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(JobFailedError);
      const failed = err as JobFailedError;
      expect(failed).toMatchObject({ status: 422, kind: "video", model: "emu-video", quoteUsd: 0.1 });
      expect(failed.refund).toMatchObject({ amountUsd: 0.1 });
      expect(failed.refund!.source).toBe(client.wallet ? "x402-transactions" : "billing-usage");
      expect(failed.message).toMatch(/refunded \$0\.1/);
    }
    const rows = emu.account(wallet.address)!.entries.filter((e) => e.kind === "video");
    expect(rows.map((e) => e.type)).toEqual(["CHARGE", "REFUND"]);
  });

  it("a failed job's error is asked once per poll (the stack does not re-send it); a busy queue's 503 is polled through", async () => {
    const { client, count } = recordingClient(emu, { apiKey: "admin" }); // its stack would re-send a 500 once
    const err = await client.video.generate({ ...video, prompt: "a storm [[emu:fail=500]]" }, fast).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: "JobFailedError", status: 500 });
    expect(count("/video/retrieve")).toBe(1); // the job had ended by the first poll (1.5 s), and failed

    // the first poll meets a 503 (the fault is lifted as soon as it was answered): the run polls on and completes
    let busy = 0;
    const { client: polled } = recordingClient(emu, {
      apiKey: "admin",
      fetch: async (input, init) => {
        const response = await globalThis.fetch(input, init);
        if (response.status === 503 && String(input).endsWith("/video/retrieve")) {
          busy++;
          emu.setFaults({});
        }
        return response;
      },
    });
    emu.setFaults({ paths: ["/video/retrieve"], errorRate: 1, statuses: [503] });
    try {
      const result = await polled.video.generate(video, fast);
      expect(decodeMp4(result.bytes).durationSeconds).toBe(2);
      expect(busy).toBe(1);
    } finally {
      emu.setFaults({});
    }
  });

  it("the run's signal cancels the wait: a JobCancelledError with the queue id, no poll after it", async () => {
    const { client, count } = recordingClient(emu, { apiKey: "admin" });
    const controller = new AbortController();
    const err = await client.video
      .generate(video, { ...fast, signal: controller.signal, onProgress: (p) => void (p.phase === "queued" && controller.abort()) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JobCancelledError);
    expect((err as JobCancelledError).queueId).toMatch(/^[0-9a-f-]{36}$/);
    expect(count("/video/retrieve")).toBe(0);
  });
});
