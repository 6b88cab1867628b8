/**
 * Spec part 8 (rate limits per tier, x-ratelimit-* headers, 429 with the reset time, the log of exceeded
 * limits) and part 7's abuse block. Where time is what is tested (a window's end, a block's end), the emulator runs on
 * a test clock (testClock) that the test moves on instead of waiting.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ABUSE_BLOCK_MESSAGE, RateLimiter, startEmulator, type Emulator } from "langchain-service-emulator";
import { bearer, postJson, probeRoute, testClock } from "./helpers.js";

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

const infer = (e: Emulator, key: string, model: string, extra: Record<string, unknown> = {}) =>
  postJson(`${e.url}/probe/inference`, { model, ...extra }, bearer(key));

describe("request limits per (caller, tier)", () => {
  it("counts down, answers 429 with the reset time in Unix seconds, and logs it", async () => {
    // 2 s windows: the window starts at the first request's whole second, so at least 1 s of it is left
    const clock = testClock({ frozen: true });
    emu = await startEmulator({
      now: clock.now,
      mode: "seed",
      apiKeys: ["a", "b"],
      routes: [probeRoute],
      rateLimits: { windowMs: 2_000, tiers: { L: { requests: 2 } } },
    });
    const before = Math.floor(clock.now() / 1000);
    const r1 = await infer(emu, "a", "emu-l");
    const r2 = await infer(emu, "a", "emu-l");
    expect([r1.status, r2.status]).toEqual([200, 200]);
    expect(r1.headers.get("x-ratelimit-limit-requests")).toBe("2");
    expect(r1.headers.get("x-ratelimit-remaining-requests")).toBe("1");
    expect(r2.headers.get("x-ratelimit-remaining-requests")).toBe("0");

    const r3 = await infer(emu, "a", "emu-l");
    expect(r3.status).toBe(429);
    expect(await r3.json()).toEqual({ error: "Rate limit exceeded" });
    expect(r3.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    expect(r3.headers.get("x-ratelimit-type")).toBe("api_key");
    const reset = r3.headers.get("x-ratelimit-reset-requests")!;
    expect(reset).toMatch(/^\d{10}$/); // Unix seconds, not ms, not a duration
    expect(Number(reset)).toBeGreaterThanOrEqual(before);
    expect(Number(reset)).toBeLessThanOrEqual(Math.ceil(clock.now() / 1000) + 2);
    // nothing was charged for the refused request
    expect(emu.ledger.totals(emu.account("a")!).charges).toBe(2);

    // other tiers and other callers have their own buckets
    expect((await infer(emu, "a", "emu-s")).status).toBe(200);
    expect((await infer(emu, "b", "emu-l")).status).toBe(200);

    const log = await (await fetch(`${emu.url}/api_keys/rate_limit_logs`, { headers: bearer("a") })).json();
    expect(log.object).toBe("list");
    expect(log.data).toHaveLength(1);
    expect(log.data[0]).toMatchObject({ modelId: "emu-l", rateLimitType: "RPM", rateLimitTier: "paid" });
    expect(Object.keys(log.data[0]).sort()).toEqual(["apiKeyId", "modelId", "rateLimitTier", "rateLimitType", "timestamp"]);
    expect(log.data[0].apiKeyId).toMatch(/^key_[0-9a-f]{16}$/); // a hash, never the key itself
    expect(Number.isNaN(Date.parse(log.data[0].timestamp))).toBe(false);
    const sameLog = await (await fetch(`${emu.url}/api_keys/rate_limits/log`, { headers: bearer("a") })).json();
    expect(sameLog).toEqual(log);
    const otherLog = await (await fetch(`${emu.url}/api_keys/rate_limit_logs`, { headers: bearer("b") })).json();
    expect(otherLog.data).toEqual([]);

    // still refused just before the window's end; once it has passed, the caller is served again
    clock.advance(Number(reset) * 1000 - clock.now() - 100);
    expect((await infer(emu, "a", "emu-l")).status).toBe(429);
    clock.advance(150);
    expect((await infer(emu, "a", "emu-l")).status).toBe(200);
  });

  it("token limits: tokens reported by the route count; 429 TPM when spent", async () => {
    emu = await startEmulator({
      mode: "seed",
      apiKeys: ["a"],
      routes: [probeRoute],
      rateLimits: { windowMs: 10_000, tiers: { M: { tokens: 100 } } },
    });
    const r1 = await infer(emu, "a", "emu-m", { tokens: 60 });
    expect(r1.headers.get("x-ratelimit-limit-tokens")).toBe("100");
    expect(r1.headers.get("x-ratelimit-remaining-tokens")).toBe("40");
    const resetTokens = Number(r1.headers.get("x-ratelimit-reset-tokens"));
    expect(resetTokens).toBeGreaterThan(0);
    expect(resetTokens).toBeLessThanOrEqual(10); // seconds from now, not a timestamp
    const r2 = await infer(emu, "a", "emu-m", { tokens: 60 });
    expect(r2.status).toBe(200);
    expect(r2.headers.get("x-ratelimit-remaining-tokens")).toBe("0");
    const r3 = await infer(emu, "a", "emu-m", { tokens: 1 });
    expect(r3.status).toBe(429);
    const log = await (await fetch(`${emu.url}/api_keys/rate_limits/log`, { headers: bearer("a") })).json();
    expect(log.data[0]).toMatchObject({ rateLimitType: "TPM", modelId: "emu-m" });
  });

  it("partner keys get the partner numbers of their tier", async () => {
    emu = await startEmulator({ mode: "seed", apiKeys: [{ key: "p", partner: true }], routes: [probeRoute] });
    const res = await infer(emu, "p", "emu-l");
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("60");
    expect(res.headers.get("x-ratelimit-limit-tokens")).toBe("1000000");
  });

  it("rateLimits.enabled=false serves without limits or headers", async () => {
    emu = await startEmulator({
      mode: "seed",
      apiKeys: ["a"],
      routes: [probeRoute],
      rateLimits: { enabled: false, tiers: { L: { requests: 1 } } },
    });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await infer(emu, "a", "emu-l")).status);
    expect(statuses).toEqual([200, 200, 200]);
  });
});

describe("abuse block", () => {
  it("more than 20 failures in the window block the caller with the spec's message, then lift", async () => {
    const clock = testClock({ frozen: true });
    emu = await startEmulator({
      now: clock.now,
      mode: "seed",
      apiKeys: ["a", "b"],
      rateLimits: { abuseWindowMs: 10_000, abuseBlockMs: 700 },
    });
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) {
      const res = await fetch(`${emu.url}/no/such/path`, { headers: bearer("a") });
      statuses.push(res.status);
      await res.arrayBuffer();
    }
    // the 21st failure is still answered normally: the block starts after it
    expect(statuses).toEqual(Array(21).fill(404));

    const blocked = await fetch(`${emu.url}/models`, { headers: bearer("a") });
    expect(blocked.status).toBe(429);
    expect(await blocked.json()).toEqual({ error: ABUSE_BLOCK_MESSAGE });
    expect(blocked.headers.get("cf-ray")).toMatch(/-EMU$/);

    // another caller is not affected
    expect((await fetch(`${emu.url}/models`, { headers: bearer("b") })).status).toBe(200);

    // the block is in the log as FAILED_REQUESTS
    clock.advance(750);
    const log = await (await fetch(`${emu.url}/api_keys/rate_limit_logs`, { headers: bearer("a") })).json();
    expect(log.data.map((e: { rateLimitType: string }) => e.rateLimitType)).toEqual(["FAILED_REQUESTS"]);
    expect((await fetch(`${emu.url}/models`, { headers: bearer("a") })).status).toBe(200);
  });

  it("20 failures do not block; failures outside the window are forgotten", async () => {
    const clock = testClock({ frozen: true });
    emu = await startEmulator({ now: clock.now, mode: "seed", apiKeys: ["a"], rateLimits: { abuseWindowMs: 500, abuseBlockMs: 10_000 } });
    for (let i = 0; i < 20; i++) await (await fetch(`${emu.url}/nope`, { headers: bearer("a") })).arrayBuffer();
    expect((await fetch(`${emu.url}/models`, { headers: bearer("a") })).status).toBe(200);
    clock.advance(550);
    for (let i = 0; i < 5; i++) await (await fetch(`${emu.url}/nope`, { headers: bearer("a") })).arrayBuffer();
    expect((await fetch(`${emu.url}/models`, { headers: bearer("a") })).status).toBe(200);
  });

  it("anonymous callers and bad keys are counted by address", async () => {
    emu = await startEmulator({ mode: "seed", apiKeys: ["good"], rateLimits: { abuseMaxFailures: 3, abuseBlockMs: 10_000 } });
    for (let i = 0; i < 4; i++) expect((await fetch(`${emu.url}/models`, { headers: bearer("wrong") })).status).toBe(401);
    const anon = await fetch(`${emu.url}/models`);
    expect(anon.status).toBe(429);
    expect((await anon.json()).error).toBe(ABUSE_BLOCK_MESSAGE);
    // a valid key is its own identity
    expect((await fetch(`${emu.url}/models`, { headers: bearer("good") })).status).toBe(200);
  });
});

describe("RateLimiter (unit)", () => {
  it("a window starts at the first request's whole second and resets windowMs later, so the reset header is exact", () => {
    let t = 1_000_000;
    const limiter = new RateLimiter({ windowMs: 1_000, tiers: { S: { requests: 1 } } }, () => t);
    expect(limiter.admit("x", "S").allowed).toBe(true);
    expect(limiter.admit("x", "S")).toMatchObject({ allowed: false, exceeded: "RPM" });
    expect(limiter.headers("x", "S")["x-ratelimit-reset-requests"]).toBe(String(Math.ceil(1_001_000 / 1000)));
    t += 999;
    expect(limiter.admit("x", "S").allowed).toBe(false);
    t += 1;
    expect(limiter.admit("x", "S").allowed).toBe(true);
    // a first request mid-second: the window is taken down to its second
    t = 2_000_400;
    const fresh = new RateLimiter({ windowMs: 2_000, tiers: { S: { requests: 1 } } }, () => t);
    expect(fresh.admit("y", "S").allowed).toBe(true);
    expect(fresh.headers("y", "S")["x-ratelimit-reset-requests"]).toBe("2002");
    t = 2_001_999;
    expect(fresh.admit("y", "S").allowed).toBe(false);
    t = 2_002_000;
    expect(fresh.admit("y", "S").allowed).toBe(true);
  });

  it("the token window is its own (tokenWindowMs): a token-limit 429 has requests left and names the near token reset", () => {
    let t = 1_790_000_000_000;
    const limiter = new RateLimiter({ windowMs: 60_000, tokenWindowMs: 1_500, tiers: { S: { requests: 100, tokens: 50 } } }, () => t, true);
    expect(limiter.admit("x", "S").allowed).toBe(true);
    limiter.addTokens("x", "S", 50);
    const refused = limiter.admit("x", "S");
    expect(refused).toMatchObject({ allowed: false, exceeded: "TPM" });
    expect(refused.headers).toMatchObject({
      "x-ratelimit-remaining-requests": "99",
      "x-ratelimit-reset-requests": String(t + 60_000),
      "x-ratelimit-remaining-tokens": "0",
      "x-ratelimit-reset-tokens": String(t + 1_500),
    });
    t += 1_500;
    const served = limiter.admit("x", "S");
    expect(served.allowed).toBe(true);
    // the next token window opens at this request's whole second; the request window runs on
    expect(served.headers).toMatchObject({
      "x-ratelimit-remaining-requests": "98",
      "x-ratelimit-reset-requests": String(t - 1_500 + 60_000),
      "x-ratelimit-remaining-tokens": "50",
      "x-ratelimit-reset-tokens": String(t - 500 + 1_500),
    });
  });

  it("a prompt's tokens count on arrival, so a burst sent at once is refused once they spend the window", () => {
    const t = 1_790_000_000_000;
    const limiter = new RateLimiter({ tiers: { S: { tokens: 100 } } }, () => t, true);
    expect(limiter.admit("x", "S", false, 60).allowed).toBe(true);
    expect(limiter.admit("x", "S", false, 60).headers["x-ratelimit-remaining-tokens"]).toBe("0");
    expect(limiter.admit("x", "S", false, 60)).toMatchObject({ allowed: false, exceeded: "TPM" });
  });

  it("the default bucket uses the XS numbers", () => {
    const limiter = new RateLimiter();
    expect(limiter.limitsFor("default")).toEqual({ requests: 500, tokens: 1_000_000 });
    expect(limiter.limitsFor("M", true)).toEqual({ requests: 100, tokens: 1_500_000 });
  });
});
