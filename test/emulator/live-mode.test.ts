/**
 * The emulator as the live service behaves today (its default, `mode: "live"`), where the service's current
 * guides differ from the seed contract: reset headers in Unix ms, the error budget (50 non-429 4xx per 30 s, told
 * by `x-ratelimit-remaining` / `-resets`), 404 for an unknown model, an API key's 402 without a code, at most 5
 * requests in flight per wallet, the overloaded model's 429 with `Retry-After`, and 413 above 35 MiB of JSON. The
 * seed's own answers are checked in contract.test.ts and limits.test.ts (`mode: "seed"`).
 */
import { afterEach, describe, expect, it } from "vitest";
import { Wallet } from "ethers";
import { MAX_BODY_BYTES, SEED_MAX_BODY_BYTES, startEmulator, type Emulator } from "langchain-service-emulator";
import { EvmWallet } from "../../src/evm/index.js";
import { createSiwxHeader } from "../../src/x402/siwx.js";
import { main } from "../../packages/langchain-service-emulator/src/cli.js";
import { bearer, probeRoute } from "./helpers.js";

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

const probe = (model = "emu-xs", extra: Record<string, unknown> = {}) => ({
  method: "POST",
  body: JSON.stringify({ model, ...extra }),
});

describe("live mode (the default)", () => {
  it("reset headers are Unix milliseconds, the seed's are seconds", async () => {
    emu = await startEmulator({ apiKeys: ["k"], routes: [probeRoute] });
    const before = Date.now();
    const res = await fetch(`${emu.url}/probe/inference`, { ...probe(), headers: bearer("k") });
    expect(res.status).toBe(200);
    const resetRequests = Number(res.headers.get("x-ratelimit-reset-requests"));
    const resetTokens = Number(res.headers.get("x-ratelimit-reset-tokens"));
    expect(resetRequests).toBeGreaterThan(before); // ms, a minute ahead at most
    expect(resetRequests).toBeLessThanOrEqual(before + 61_000);
    expect(resetTokens).toBe(resetRequests);

    const seed = await startEmulator({ mode: "seed", apiKeys: ["k"], routes: [probeRoute] });
    try {
      const old = await fetch(`${seed.url}/probe/inference`, { ...probe(), headers: bearer("k") });
      expect(Number(old.headers.get("x-ratelimit-reset-requests"))).toBeLessThan(1e11); // Unix seconds
      expect(Number(old.headers.get("x-ratelimit-reset-tokens"))).toBeLessThanOrEqual(60); // seconds from now
      expect(old.headers.get("x-ratelimit-resets")).toBeNull();
    } finally {
      await seed.close();
    }
  });

  it("the error budget: 4xx spend it and the headers tell it; 429s and 5xx do not; > 50 blocks", async () => {
    emu = await startEmulator({ apiKeys: ["k"], routes: [probeRoute], faults: { statuses: [503], paths: ["/probe/fail5xx"] } });
    const ok = await fetch(`${emu.url}/probe/inference`, { ...probe(), headers: bearer("k") });
    expect(ok.headers.get("x-ratelimit-remaining")).toBe("50");
    expect(Number(ok.headers.get("x-ratelimit-resets"))).toBeGreaterThan(Date.now());
    // a 404 (unknown model) is a failure: the next answer tells 49 left
    const missing = await fetch(`${emu.url}/probe/inference`, { ...probe("no-such-model"), headers: bearer("k") });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: expect.stringMatching(/^Specified model not found: no-such-model/) });
    const after = await fetch(`${emu.url}/probe/inference`, { ...probe(), headers: bearer("k") });
    expect(after.headers.get("x-ratelimit-remaining")).toBe("49");
    // 49 more failures reach the threshold without a block; the 51st blocks with the live wording
    for (let i = 0; i < 49; i++)
      await (await fetch(`${emu.url}/probe/inference`, { ...probe("no-such-model"), headers: bearer("k") })).arrayBuffer();
    const last = await fetch(`${emu.url}/probe/inference`, { ...probe(), headers: bearer("k") });
    expect(last.status).toBe(200);
    expect(last.headers.get("x-ratelimit-remaining")).toBe("0");
    await (await fetch(`${emu.url}/probe/inference`, { ...probe("no-such-model"), headers: bearer("k") })).arrayBuffer();
    const blocked = await fetch(`${emu.url}/probe/inference`, { ...probe(), headers: bearer("k") });
    expect(blocked.status).toBe(429);
    expect((await blocked.json()).error).toBe(
      "Too many failed attempts (> 50) resulting in a non-success status code. Please wait 30 seconds and try again.",
    );
  });

  it("429s never count toward the block (the seed counts every non-success)", async () => {
    emu = await startEmulator({
      apiKeys: ["k"],
      routes: [probeRoute],
      rateLimits: { abuseMaxFailures: 2, tiers: { XS: { requests: 1 } } },
    });
    for (let i = 0; i < 6; i++) await (await fetch(`${emu.url}/probe/inference`, { ...probe(), headers: bearer("k") })).arrayBuffer();
    expect(emu.rateLimiter.recentFailures("key:k")).toBe(0);
    expect(emu.rateLimiter.countsAsFailure(503)).toBe(false);
    const seed = await startEmulator({ mode: "seed", apiKeys: ["k"] });
    try {
      expect(seed.rateLimiter.countsAsFailure(429)).toBe(true);
      expect(seed.rateLimiter.countsAsFailure(503)).toBe(true);
    } finally {
      await seed.close();
    }
  });

  it("an API key without balance gets a plain 402 with no code (the seed: INSUFFICIENT_BALANCE)", async () => {
    emu = await startEmulator({ apiKeys: [{ key: "broke", usd: 0, diem: 0 }], routes: [probeRoute] });
    const res = await fetch(`${emu.url}/probe/inference`, { ...probe(), headers: bearer("broke") });
    expect(res.status).toBe(402);
    const body = await res.json();
    expect(body.code).toBeUndefined();
    expect(body.error).toMatch(/^Insufficient USD or Diem balance/);
  });

  it("a wallet has at most 5 requests in flight: the 6th is 429 X402_CONCURRENCY_LIMIT, not a failure", async () => {
    emu = await startEmulator({ walletStartingUsd: 10, routes: [probeRoute] });
    const wallet = new EvmWallet(Wallet.createRandom().privateKey);
    const siwx = async () => ({ "SIGN-IN-WITH-X": await createSiwxHeader(wallet, `${emu!.url}/probe/inference`) });
    // five streams still being sent (150 ms between chunks), then a sixth request
    const open = await Promise.all(
      Array.from({ length: 5 }, async () =>
        fetch(`${emu!.url}/probe/inference`, { ...probe("emu-xs", { stream: true, chunks: 3, delayMs: 150 }), headers: await siwx() }),
      ),
    );
    expect(open.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const sixth = await fetch(`${emu.url}/probe/inference`, { ...probe(), headers: await siwx() });
    expect(sixth.status).toBe(429);
    expect(await sixth.json()).toMatchObject({ code: "X402_CONCURRENCY_LIMIT" });
    expect(emu.rateLimiter.recentFailures(`wallet:${wallet.address.toLowerCase()}`)).toBe(0);
    // a stream that ended frees its place (before its last byte reaches the client)
    await open[0]!.text();
    const next = await fetch(`${emu.url}/probe/inference`, { ...probe(), headers: await siwx() });
    expect(next.status).toBe(200);
    await Promise.all(open.slice(1).map((r) => r.text()));

    // the seed has no such limit
    const seed = await startEmulator({ mode: "seed", walletStartingUsd: 10, routes: [probeRoute] });
    try {
      const seedSiwx = async () => ({ "SIGN-IN-WITH-X": await createSiwxHeader(wallet, `${seed.url}/probe/inference`) });
      const many = await Promise.all(
        Array.from({ length: 7 }, async () =>
          fetch(`${seed.url}/probe/inference`, { ...probe("emu-xs", { stream: true }), headers: await seedSiwx() }),
        ),
      );
      expect(many.map((r) => r.status)).toEqual(Array(7).fill(200));
      await Promise.all(many.map((r) => r.text()));
    } finally {
      await seed.close();
    }
  });

  it("an overloaded model: 429 with Retry-After and the live wording (fault knob)", async () => {
    emu = await startEmulator({ apiKeys: ["k"], routes: [probeRoute], faults: { overload: { first: 1, retryAfterSeconds: 7 } } });
    const res = await fetch(`${emu.url}/probe/inference`, { ...probe(), headers: bearer("k") });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("7");
    expect(res.headers.get("x-ratelimit-limit-requests")).not.toBeNull(); // it carries the rate-limit headers too
    expect((await res.json()).error).toBe("The model is currently overloaded. Please try again later.");
    const again = await fetch(`${emu.url}/probe/inference`, { ...probe(), headers: bearer("k") });
    expect(again.status).toBe(200);
  });

  it("413 above 35 MiB of JSON, in the live words, before the error budget (the seed keeps 10 MiB; maxBodyBytes wins)", async () => {
    emu = await startEmulator({ apiKeys: ["k"], routes: [probeRoute] });
    expect(MAX_BODY_BYTES).toBe(35 * 1024 * 1024);
    const head = '{"model":"emu-xs","pad":"';
    const pad = "x".repeat(MAX_BODY_BYTES - head.length - 2);
    // exactly the limit is served
    const at = await fetch(`${emu.url}/probe/inference`, { method: "POST", headers: bearer("k"), body: `${head}${pad}"}` });
    expect(at.status).toBe(200);
    // one byte more is not
    const over = await fetch(`${emu.url}/probe/inference`, { method: "POST", headers: bearer("k"), body: `${head}${pad}x"}` });
    expect(over.status).toBe(413);
    expect(await over.json()).toEqual({ error: "Request body exceeds the maximum allowed size.", code: "PAYLOAD_TOO_LARGE" });
    expect(emu.rateLimiter.recentFailures("key:k")).toBe(0);

    const small = await startEmulator({ apiKeys: ["k"], routes: [probeRoute], maxBodyBytes: 1_000 });
    try {
      const res = await fetch(`${small.url}/probe/inference`, {
        method: "POST",
        headers: bearer("k"),
        body: JSON.stringify({ model: "emu-xs", pad: "x".repeat(1_000) }),
      });
      expect(res.status).toBe(413);
      await res.arrayBuffer();
    } finally {
      await small.close();
    }
    await expect(startEmulator({ maxBodyBytes: 0 })).rejects.toThrow(/maxBodyBytes/);
    const seed = await startEmulator({ mode: "seed", apiKeys: ["k"], routes: [probeRoute] });
    try {
      const res = await fetch(`${seed.url}/probe/inference`, {
        method: "POST",
        headers: bearer("k"),
        body: `${head}${pad.slice(0, SEED_MAX_BODY_BYTES)}"}`,
      });
      expect(res.status).toBe(413);
      expect((await res.json()).error).toBe(`Request body exceeds ${SEED_MAX_BODY_BYTES} bytes`);
    } finally {
      await seed.close();
    }
  });

  it("the CLI takes --mode and refuses another word", async () => {
    const out: string[] = [];
    const io = { out: (line: string) => void out.push(line), err: () => undefined };
    await expect(main(["--mode", "later", "--no-chain", "--port", "0"], { io })).rejects.toThrow(/--mode/);
    const started = await main(["--mode", "seed", "--no-chain", "--port", "0"], { io });
    try {
      expect(started?.context.options.mode).toBe("seed");
    } finally {
      await started?.close();
    }
  });
});
