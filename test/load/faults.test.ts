/**
 * Holding up under injected faults, over loopback HTTP against the emulator:
 * - 500 non-streamed `ChatService` calls against 20% injected 500/503 with added latency all succeed, within
 *   bounded retries, and the client's abuse guard keeps the emulator from ever blocking the key (while the
 *   same failure rate without the guard does trip the block: the guard is what holds);
 * - a stream cut mid-way surfaces a typed `StreamError` after the chunks that did arrive, with exactly one
 *   request sent (no blind retry of a partly consumed stream); an in-band error does the same.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AIMessageChunk } from "@langchain/core/messages";
import { ABUSE_BLOCK_MESSAGE, startEmulator, type Emulator } from "langchain-service-emulator";
import { ChatService } from "../../src/chat/index.js";
import { AbuseBlockError, ServerError, StreamError } from "../../src/http/errors.js";
import type { FetchLike } from "../../src/http/fetch-stack.js";

const KEY = "load-key";
const UNGUARDED_KEY = "load-unguarded-key";
const STREAM_KEY = "load-stream-key";
/** the emulator's abuse rule, shortened so the test runs in seconds (the service's is 20 in 30 s) */
const ABUSE_WINDOW_MS = 1_000;
const ABUSE_MAX_FAILURES = 20;
const MAX_RETRIES = 6;

let emu: Emulator;

beforeAll(async () => {
  emu = await startEmulator({
    // the seed's rule, under which 5xx answers count toward the abuse block (the live budget counts 4xx only)
    mode: "seed",
    apiKeys: [
      { key: KEY, usd: 1_000 },
      { key: UNGUARDED_KEY, usd: 1_000 },
      { key: STREAM_KEY, usd: 1_000 },
    ],
    rateLimits: {
      windowMs: 1_000,
      abuseMaxFailures: ABUSE_MAX_FAILURES,
      abuseWindowMs: ABUSE_WINDOW_MS,
      abuseBlockMs: 2_000,
      // request limits out of the way: this test is about faults, not pacing
      tiers: { XS: { requests: 1_000_000, tokens: 1_000_000_000 } },
    },
    faults: { errorRate: 0.2, latencyMs: [0, 5], seed: 7, paths: ["/chat/completions"] },
  });
});
afterAll(async () => {
  await emu?.close();
});

interface Send {
  prompt: string;
  status: number;
  body?: string;
}

/** The wire, seen from below the whole stack: one entry per HTTP request that reached the emulator. */
function countingFetch(): { fetch: FetchLike; sends: Send[] } {
  const sends: Send[] = [];
  const fetch: FetchLike = async (input, init) => {
    const body = JSON.parse(String(init?.body)) as { messages: { content: string }[] };
    const prompt = body.messages.at(-1)!.content;
    const response = await globalThis.fetch(input, init);
    const send: Send = { prompt, status: response.status };
    sends.push(send);
    if (response.status === 429) send.body = await response.clone().text();
    return response;
  };
  return { fetch, sends };
}

/** Runs `task(i)` for i in 0..n-1 with at most `concurrency` at a time; settles every one. */
async function pool<T>(n: number, concurrency: number, task: (i: number) => Promise<T>): Promise<PromiseSettledResult<T>[]> {
  const results: PromiseSettledResult<T>[] = new Array(n);
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      try {
        results[i] = { status: "fulfilled", value: await task(i) };
      } catch (reason) {
        results[i] = { status: "rejected", reason };
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return results;
}

const identity = (key: string) => `key:${key}`;

describe("500 non-streamed requests against 20% injected 500/503 and latency", () => {
  it("all succeed within bounded retries, and the emulator never blocks the key", async () => {
    const { fetch, sends } = countingFetch();
    const model = new ChatService({
      model: "emu-xs",
      apiKey: KEY,
      baseUrl: emu.url,
      fetch,
      retry: { maxRetries: MAX_RETRIES, baseDelayMs: 10, maxDelayMs: 200 },
      // the emulator's rule, mirrored on the client; waiting for the window is fine, refusing is not
      abuseGuard: { windowMs: ABUSE_WINDOW_MS, maxFailures: ABUSE_MAX_FAILURES, maxWaitMs: 20_000 },
    });
    const results = await pool(500, 10, (i) => model.invoke(`request ${i}`));

    const rejected = results.filter((r) => r.status === "rejected");
    expect(rejected.map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
    results.forEach((r, i) => {
      const message = (r as PromiseFulfilledResult<AIMessageChunk>).value;
      expect(message.content).toBe(`Echo: request ${i}`);
    });

    // What reached the wire: every answer is a success or an injected fault; never a 429 of any kind.
    const statuses = new Map<number, number>();
    for (const s of sends) statuses.set(s.status, (statuses.get(s.status) ?? 0) + 1);
    expect([...statuses.keys()].sort()).toEqual([200, 500, 503]);
    expect(statuses.get(200)).toBe(500);
    const failures = sends.length - 500;
    // the faults were real: about a fifth of the sends failed, far more than one abuse window allows
    expect(failures / sends.length).toBeGreaterThan(0.12);
    expect(failures / sends.length).toBeLessThan(0.28);
    expect(failures).toBeGreaterThan(3 * ABUSE_MAX_FAILURES);

    // Bounded retries: no request was sent more than 1 + maxRetries times, and each was re-sent only after
    // a 5xx (a success is never sent again).
    const perPrompt = new Map<string, Send[]>();
    for (const s of sends) perPrompt.set(s.prompt, [...(perPrompt.get(s.prompt) ?? []), s]);
    expect(perPrompt.size).toBe(500);
    for (const attempts of perPrompt.values()) {
      expect(attempts.length).toBeLessThanOrEqual(1 + MAX_RETRIES);
      expect(attempts.filter((a) => a.status === 200)).toHaveLength(1);
      expect(attempts.at(-1)!.status).toBe(200);
    }

    // The emulator's own view: no block now, none logged, and nothing in flight counted against the key.
    expect(emu.rateLimiter.blockedFor(identity(KEY))).toBe(0);
    expect(emu.rateLimiter.logFor(identity(KEY)).filter((e) => e.rateLimitType === "FAILED_REQUESTS")).toEqual([]);
    expect(sends.some((s) => s.body?.includes(ABUSE_BLOCK_MESSAGE))).toBe(false);
    // the ledger charged each answer exactly once (faults are answered before any route runs)
    const charges = emu.account(KEY)!.entries.filter((e) => e.type === "CHARGE");
    expect(charges).toHaveLength(500);
  });

  it("a sudden outage under 40 concurrent calls does not get the key blocked: sends in flight count", async () => {
    const outage = await startEmulator({
      mode: "seed",
      apiKeys: [{ key: "outage-key", usd: 100 }],
      rateLimits: { abuseMaxFailures: ABUSE_MAX_FAILURES, abuseWindowMs: 30_000, abuseBlockMs: 30_000, enabled: true },
      faults: { errorRate: 1, statuses: [503], paths: ["/chat/completions"] },
    });
    try {
      const wire = countingFetch();
      const model = new ChatService({
        model: "emu-xs",
        apiKey: "outage-key",
        baseUrl: outage.url,
        fetch: wire.fetch,
        retry: false,
        abuseGuard: { maxFailures: ABUSE_MAX_FAILURES, windowMs: 30_000 },
      });
      const results = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => model.invoke(`outage ${i}`)));
      // every call fails (the service is down): at most 20 reached it, the rest were refused by the client
      expect(results.every((r) => r.status === "rejected")).toBe(true);
      expect(wire.sends.length).toBeLessThanOrEqual(ABUSE_MAX_FAILURES);
      const refused = results.filter((r) => r.status === "rejected" && r.reason instanceof AbuseBlockError);
      expect(refused.length).toBe(40 - wire.sends.length);
      expect(refused.every((r) => (r as PromiseRejectedResult).reason.source === "client")).toBe(true);
      // and the service never blocked the key
      expect(outage.rateLimiter.blockedFor(identity("outage-key"))).toBe(0);
      expect(wire.sends.every((s) => s.status === 503)).toBe(true);
    } finally {
      await outage.close();
    }
  });

  it("the same faults without the client's guard trip the emulator's abuse block (the guard is what holds)", async () => {
    const { fetch, sends } = countingFetch();
    const model = new ChatService({
      model: "emu-xs",
      apiKey: UNGUARDED_KEY,
      baseUrl: emu.url,
      fetch,
      retry: false,
      abuseGuard: false,
    });
    const results = await pool(200, 10, (i) => model.invoke(`unguarded ${i}`));
    const reasons = results.filter((r) => r.status === "rejected").map((r) => (r as PromiseRejectedResult).reason as Error);
    expect(reasons.some((e) => e instanceof AbuseBlockError && e.source === "service")).toBe(true);
    expect(reasons.every((e) => e instanceof AbuseBlockError || e instanceof ServerError)).toBe(true);
    expect(sends.some((s) => s.status === 429 && s.body?.includes(ABUSE_BLOCK_MESSAGE))).toBe(true);
    const log = emu.rateLimiter.logFor(identity(UNGUARDED_KEY));
    expect(log.some((e) => e.rateLimitType === "FAILED_REQUESTS")).toBe(true);
  });
});

describe("a stream cut mid-way", () => {
  function streamModel() {
    const { fetch, sends } = countingFetch();
    const model = new ChatService({
      model: "emu-xs",
      apiKey: STREAM_KEY,
      baseUrl: emu.url,
      fetch,
      retry: { maxRetries: MAX_RETRIES, baseDelayMs: 5, maxDelayMs: 20 },
      abuseGuard: false,
    });
    return { model, sends };
  }

  it("raises a typed StreamError after the chunks that arrived; exactly one request is sent (no blind retry)", async () => {
    emu.setFaults({ streamCutAfter: 3, paths: ["/chat/completions"] });
    try {
      const { model, sends } = streamModel();
      const received: string[] = [];
      let error: unknown;
      try {
        for await (const chunk of await model.stream("[[emu:tokens=500]]")) received.push(String(chunk.content));
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(StreamError);
      expect((error as StreamError).message).toMatch(/before \[DONE\]|cut/);
      // the first chunks were yielded (role chunk + content), never the whole answer, never a usage chunk
      const text = received.join("");
      expect(text.length).toBeGreaterThan(0);
      expect(text.split(/\s+/).filter(Boolean).length).toBeLessThan(500);
      expect(sends).toHaveLength(1);
      expect(sends[0]!.status).toBe(200);
    } finally {
      emu.setFaults({});
    }
  });

  it("invoke() with streaming on also fails typed instead of returning a truncated answer", async () => {
    emu.setFaults({ streamCutAfter: 3, paths: ["/chat/completions"] });
    try {
      const { fetch, sends } = countingFetch();
      const model = new ChatService({ model: "emu-xs", apiKey: STREAM_KEY, baseUrl: emu.url, fetch, streaming: true, abuseGuard: false });
      await expect(model.invoke("[[emu:tokens=500]]")).rejects.toBeInstanceOf(StreamError);
      expect(sends).toHaveLength(1);
    } finally {
      emu.setFaults({});
    }
  });

  it("an in-band error event raises StreamError with the service's message, after the content before it", async () => {
    const { model, sends } = streamModel();
    const received: string[] = [];
    let error: unknown;
    try {
      for await (const chunk of await model.stream("tell me something [[emu:error]]")) received.push(String(chunk.content));
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(StreamError);
    expect((error as StreamError).message).toMatch(/in-band error/);
    expect(received.join("").length).toBeGreaterThan(0);
    expect(sends).toHaveLength(1);
  });

  it("with the faults off, the same stream completes (the cut was the fault, not the client)", async () => {
    const { model, sends } = streamModel();
    let tokens = 0;
    let last: AIMessageChunk | undefined;
    for await (const chunk of await model.stream("[[emu:tokens=500]]")) {
      last = chunk;
      if (chunk.content) tokens++;
    }
    expect(last?.usage_metadata?.output_tokens).toBe(500);
    expect(tokens).toBeGreaterThan(0);
    expect(sends).toHaveLength(1);
  });
});
