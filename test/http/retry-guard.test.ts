import { describe, expect, it } from "vitest";
import { asksForStream, backoffDelay, rateLimitWaitMs } from "../../src/http/retry.js";
import { AbuseGuard } from "../../src/http/abuse-guard.js";
import { AbuseBlockError } from "../../src/http/errors.js";

describe("backoff", () => {
  const o = { baseDelayMs: 100, maxDelayMs: 1000 };
  it("grows exponentially with jitter and stays within the ceiling", () => {
    expect(backoffDelay(0, { ...o, random: () => 0 })).toBe(50);
    expect(backoffDelay(0, { ...o, random: () => 1 })).toBe(100);
    expect(backoffDelay(3, { ...o, random: () => 0 })).toBe(400);
    expect(backoffDelay(10, { ...o, random: () => 1 })).toBe(1000);
  });
  it("reads the 429 reset as a Unix timestamp in seconds", () => {
    const now = 1_700_000_000_000;
    expect(rateLimitWaitMs(new Headers({ "x-ratelimit-reset-requests": "1700000003" }), now)).toBe(3000);
    expect(rateLimitWaitMs(new Headers({ "x-ratelimit-reset-requests": "1699999999" }), now)).toBe(0);
    expect(rateLimitWaitMs(new Headers({ "retry-after": "2" }), now)).toBe(2000);
    expect(rateLimitWaitMs(new Headers(), now)).toBeUndefined();
  });
  it("reads the crypto RPC proxy's X-RateLimit-Reset (seconds or milliseconds), and waits for the latest instant named", () => {
    const now = 1_700_000_000_000;
    expect(rateLimitWaitMs(new Headers({ "x-ratelimit-reset": "1700000004" }), now)).toBe(4000);
    expect(rateLimitWaitMs(new Headers({ "x-ratelimit-reset": "1700000004500" }), now)).toBe(4500);
    expect(
      rateLimitWaitMs(
        new Headers({ "x-ratelimit-reset-requests": "1700000002", "x-ratelimit-reset": "1700000003", "retry-after": "1" }),
        now,
      ),
    ).toBe(3000);
    expect(rateLimitWaitMs(new Headers({ "x-ratelimit-reset-requests": "1700000002", "retry-after": "5" }), now)).toBe(5000);
  });
  it("tells a streaming request by its JSON body (a 504 is re-sent only for one)", () => {
    expect(asksForStream(JSON.stringify({ model: "m", stream: true }))).toBe(true);
    expect(asksForStream(new TextEncoder().encode(JSON.stringify({ stream: true })))).toBe(true);
    expect(asksForStream(JSON.stringify({ model: "m", stream: false }))).toBe(false);
    expect(asksForStream(JSON.stringify({ messages: [{ content: '"stream": true' }] }))).toBe(false);
    expect(asksForStream(undefined)).toBe(false);
    expect(asksForStream("not json")).toBe(false);
  });
});

describe("AbuseGuard", () => {
  it("lets sends through while failures plus sends in flight stay within the limit", async () => {
    const g = new AbuseGuard({ maxFailures: 3, windowMs: 1000 });
    expect(g.waitNeeded()).toBe(0);
    await g.acquire();
    await g.acquire();
    expect(g.waitNeeded()).toBe(0);
    await g.acquire(); // 3 in flight: an outage now would fail all 3, the 4th must wait for one to answer
    expect(g.waitNeeded()).toBeGreaterThan(0);
    g.release(false);
    expect(g.waitNeeded()).toBe(0);
  });
  it("refuses the send that could be failure number max+1, and frees up as failures age out", async () => {
    const g = new AbuseGuard({ maxFailures: 3, windowMs: 10_000 });
    const t = Date.now();
    g.recordFailure(t - 9_000);
    g.recordFailure(t);
    g.recordFailure(t);
    expect(g.failureCount(t)).toBe(3);
    expect(g.waitNeeded(t)).toBeGreaterThan(900);
    await expect(g.acquire()).rejects.toBeInstanceOf(AbuseBlockError);
    await expect(g.acquire()).rejects.toMatchObject({ source: "client" });
    expect(g.waitNeeded(t + 1_100)).toBe(0);
  });
  it("counts sends in flight once failures appear", async () => {
    const g = new AbuseGuard({ maxFailures: 3, windowMs: 10_000 });
    g.recordFailure();
    await g.acquire();
    expect(g.waitNeeded()).toBe(0); // 1 failure + 1 in flight + this send: at most 3 failures
    await g.acquire();
    expect(g.waitNeeded()).toBeGreaterThan(0); // 1 + 2 in flight + this send could be 4 > 3
    g.release(false);
    expect(g.waitNeeded()).toBe(0);
  });
});
