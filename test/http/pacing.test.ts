/**
 * Pacing under a burst: 3× a tier's requests-per-window against the emulator (short windows) draws no 429,
 * with one limiter shared by concurrent calls of the same key and model. Same for tokens per window.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { createServiceFetch, type FetchLike } from "../../src/index.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({
    apiKeys: ["k-burst", "k-tokens"],
    rateLimits: { windowMs: 1000, tiers: { S: { requests: 10 }, M: { requests: 1000, tokens: 600 } } },
  });
});
afterAll(() => emu?.close());

function recorder(): { fetch: FetchLike; statuses: number[] } {
  const statuses: number[] = [];
  return {
    statuses,
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      statuses.push(res.status);
      return res;
    },
  };
}

const body = (model: string, i: number) =>
  JSON.stringify({ model, messages: [{ role: "user", content: `burst request number ${i}` }], max_tokens: 20 });

describe("pacing", () => {
  it("a 3× burst over the request limit draws no 429 and every request succeeds", async () => {
    const rec = recorder();
    // two client objects for the same key share one limiter
    const a = createServiceFetch({ baseUrl: emu.url, apiKey: "k-burst", fetch: rec.fetch, retry: false });
    const b = createServiceFetch({ baseUrl: emu.url, apiKey: "k-burst", fetch: rec.fetch, retry: false });
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (i % 2 ? a : b)(a.url("/chat/completions"), {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: body("emu-s", i),
          service: { model: "emu-s" },
        }).then((r) => r.status),
      ),
    );
    expect(results.every((s) => s === 200)).toBe(true);
    expect(rec.statuses.filter((s) => s === 429)).toHaveLength(0);
    expect(rec.statuses).toHaveLength(30);
  });

  it("holds requests on the token window too", async () => {
    const rec = recorder();
    const f = createServiceFetch({ baseUrl: emu.url, apiKey: "k-tokens", fetch: rec.fetch, retry: false });
    // each request uses roughly 30–60 tokens; the window has 600
    const results = await Promise.all(
      Array.from({ length: 36 }, (_, i) =>
        f(f.url("/chat/completions"), {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: body("emu-m", i),
          service: { model: "emu-m", estimatedTokens: 60 },
        }).then((r) => r.status),
      ),
    );
    expect(results.every((s) => s === 200)).toBe(true);
    expect(rec.statuses.filter((s) => s === 429)).toHaveLength(0);
  });
});
