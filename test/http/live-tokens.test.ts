/**
 * Token limits as the live service keeps them, through the emulator in its live mode: a token window of its own
 * (here 1.5 s) beside a request window of a minute, each with its own reset in Unix ms. A token-limit 429 (requests
 * left, no tokens) is waited out until the token reset, not the request window's; ChatService tells the pacing
 * layer each request's tokens (input plus `maxTokens`), so a burst near the token limit waits instead of drawing 429s.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChatService } from "../../src/chat/index.js";
import { RateLimitError } from "../../src/http/errors.js";
import { createServiceFetch } from "../../src/stack.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";

/** a fetch that records each chat answer's status as it was on the wire (the `/models` read is not counted) */
function wire() {
  const seen: number[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await globalThis.fetch(input, init);
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (url.endsWith("/chat/completions")) seen.push(res.status);
    return res;
  };
  return { fetch, seen, count: (status: number) => seen.filter((s) => s === status).length };
}

/** the emulator opens a window on a whole second: a 1.5 s window has at least 0.5 s left after the request that opens it */
const TOKEN_WINDOW_MS = 1_500;
const REQUEST_WINDOW_MS = 60_000;

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({
    apiKeys: ["k-window", "k-spent", "k-error", "k-burst", "k-plain"],
    rateLimits: { windowMs: REQUEST_WINDOW_MS, tokenWindowMs: TOKEN_WINDOW_MS, tiers: { XS: { requests: 1_000, tokens: 400 } } },
  });
});
afterAll(() => emu?.close());

/** spends the key's token window with a request the client never saw (another process on the same key) */
async function spendTokenWindow(key: string): Promise<Headers> {
  const res = await fetch(`${emu.url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: "emu-xs", messages: [{ role: "user", content: "spend [[emu:tokens=400]]" }] }),
  });
  await res.arrayBuffer();
  expect(res.status).toBe(200);
  return res.headers;
}

describe("a token-limit 429 (requests left, no tokens)", () => {
  it("the emulator's token window resets on its own, apart from the request window", async () => {
    const h = await spendTokenWindow("k-window");
    const now = Date.now();
    expect(Number(h.get("x-ratelimit-remaining-tokens"))).toBe(0);
    expect(Number(h.get("x-ratelimit-remaining-requests"))).toBeGreaterThan(0);
    expect(Number(h.get("x-ratelimit-reset-tokens")) - now).toBeLessThanOrEqual(TOKEN_WINDOW_MS);
    expect(Number(h.get("x-ratelimit-reset-requests")) - now).toBeGreaterThan(REQUEST_WINDOW_MS - 1_500);
  });

  it("is served after about the token reset (1.5 s at most), not the request window's (a minute)", async () => {
    await spendTokenWindow("k-spent");
    const w = wire();
    const model = new ChatService({ model: "emu-xs", apiKey: "k-spent", baseUrl: emu.url, fetch: w.fetch });
    const started = Date.now();
    const answer = await model.invoke("after the reset");
    const elapsed = Date.now() - started;
    expect(answer.content).toBe("Echo: after the reset");
    expect(w.seen).toEqual([429, 200]);
    expect(elapsed).toBeLessThan(TOKEN_WINDOW_MS + 1_000);
  }, 15_000);

  it("without retries, its RateLimitError names the token reset", async () => {
    await spendTokenWindow("k-error");
    const model = new ChatService({ model: "emu-xs", apiKey: "k-error", baseUrl: emu.url, maxRetries: 0 });
    const err = await model.invoke("now").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).resetAt!.getTime() - Date.now()).toBeLessThanOrEqual(TOKEN_WINDOW_MS);
  });
});

describe("pacing on the token window", () => {
  it("a send without an estimate waits when the window has no tokens left, instead of drawing the 429", async () => {
    const w = wire();
    const send = createServiceFetch({ apiKey: "k-plain", baseUrl: emu.url, fetch: w.fetch });
    const request = (content: string) =>
      send(`${emu.url}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "emu-xs", messages: [{ role: "user", content }] }),
        service: { model: "emu-xs" },
      }).then((r) => r.json() as Promise<unknown>);
    await request("spend it all [[emu:tokens=400]]");
    await request("then this one");
    expect(w.seen).toEqual([200, 200]);
  }, 15_000);
});

describe("ChatService's token estimate", () => {
  it("a burst near the token limit draws 0 429s on the wire: the sends wait for the token reset", async () => {
    const w = wire();
    // retries off: a 429 is the answer, counted on the wire and in the outcomes
    const model = new ChatService({ model: "emu-xs", apiKey: "k-burst", baseUrl: emu.url, fetch: w.fetch, maxTokens: 60, maxRetries: 0 });
    // about 100 tokens each (the prompt, the service's system prompt, 5 completion tokens): 8 need 2 token windows or more
    const prompt = (i: number) => `request ${i}: ${"many words to fill the prompt of this request ".repeat(5)} [[emu:tokens=5]]`;
    const outcomes = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => model.invoke(prompt(i))));
    expect(w.count(429)).toBe(0);
    expect(outcomes.every((o) => o.status === "fulfilled")).toBe(true);
    expect(w.seen).toHaveLength(8);
  }, 15_000);
});
