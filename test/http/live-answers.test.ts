/**
 * The fetch stack against the live service's answers, through the emulator in its live mode (the default):
 * a wallet's requests in flight kept at 5 (none sent to be refused), a "too many in flight" 429 that still
 * arrives re-sent and never counted as a failure, an overloaded model's 429 waited out by its `Retry-After`,
 * token resets in Unix ms read right, the error budget headers tightening the abuse guard, and the plain 402,
 * 404 and 422 answers typed. A scripted loopback server plays what the emulator never says (a 422, `request_id`).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Wallet } from "ethers";
import { ChatService } from "../../src/chat/index.js";
import { createServiceFetch } from "../../src/stack.js";
import { EvmWallet } from "../../src/evm/index.js";
import {
  AbuseBlockError,
  ContentPolicyError,
  InsufficientBalanceError,
  ModelNotFoundError,
  ModelOverloadedError,
  ServiceError,
} from "../../src/http/errors.js";
import { AbuseGuard } from "../../src/http/abuse-guard.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { startFixtureServer, type FixtureServer } from "../chat/fixture-server.js";

/**
 * a fetch that records each answer's status and (for 429s) body, as they were on the wire; the chat model's read of
 * the public `/models` listing (its profile, in the background on its first call) is not what these tests count
 */
function wire() {
  const seen: { path: string; status: number; body?: string }[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await globalThis.fetch(input, init);
    const path = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url).pathname.replace(
      /^\/api\/v1/,
      "",
    );
    if (path === "/models") return res;
    seen.push({ path, status: res.status, body: res.status === 429 ? await res.clone().text() : undefined });
    return res;
  };
  return { fetch, seen, count: (status: number) => seen.filter((s) => s.status === status).length };
}

const newWallet = () => new EvmWallet(Wallet.createRandom().privateKey);
const chat = (model: string, content: string) => JSON.stringify({ model, messages: [{ role: "user", content }] });

describe("a wallet's requests in flight (the live service allows 5)", () => {
  let emu: Emulator;
  beforeAll(async () => {
    // 150 ms of model time per chat request: a batch of 10 has all of them in flight at once unless queued
    emu = await startEmulator({ walletStartingUsd: 50, faults: { latencyMs: 150, paths: ["/chat/completions"] } });
  });
  afterAll(() => emu?.close());

  it("model.batch() of 10 prompts on one wallet: all answered, 0 429s on the wire", async () => {
    const w = wire();
    const model = new ChatService({ model: "emu-xs", baseUrl: emu.url, wallet: newWallet(), fetch: w.fetch });
    const prompts = Array.from({ length: 10 }, (_, i) => `prompt ${i}`);
    const answers = await model.batch(prompts);
    expect(answers.map((a) => a.content)).toEqual(prompts.map((p) => `Echo: ${p}`));
    expect(w.count(429)).toBe(0);
    expect(w.count(200)).toBe(10);
  });

  it("one queue for every face and client object of the wallet: two models and a plain stack share the 5", async () => {
    const wallet = newWallet();
    const w = wire();
    const a = new ChatService({ model: "emu-xs", baseUrl: emu.url, wallet, fetch: w.fetch });
    const b = new ChatService({ model: "emu-s", baseUrl: emu.url, wallet, fetch: w.fetch });
    const plain = createServiceFetch({ baseUrl: emu.url, wallet, fetch: w.fetch });
    const results = await Promise.all([
      ...Array.from({ length: 4 }, (_, i) => a.invoke(`a${i}`)),
      ...Array.from({ length: 4 }, (_, i) => b.invoke(`b${i}`)),
      ...Array.from({ length: 4 }, (_, i) =>
        plain(`${emu.url}/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: chat("emu-xs", `p${i}`),
        }),
      ),
    ]);
    expect(results).toHaveLength(12);
    expect(w.count(429)).toBe(0);
  });

  it("an X402_CONCURRENCY_LIMIT 429 that still arrives is waited out and re-sent, and never counted by the guard", async () => {
    // a client that allows itself 10 (as two processes without a shared store would): the service refuses some
    const w = wire();
    // the guard lets at most maxFailures sends be in flight (all may fail): 8 lets more than 5 go at once
    const guard = new AbuseGuard({ maxFailures: 8 });
    const model = new ChatService({
      model: "emu-xs",
      baseUrl: emu.url,
      wallet: newWallet(),
      fetch: w.fetch,
      concurrency: { perWallet: 10 },
      abuseGuard: guard,
    });
    const prompts = Array.from({ length: 10 }, (_, i) => `again ${i}`);
    const answers = await model.batch(prompts);
    expect(answers.map((a) => a.content)).toEqual(prompts.map((p) => `Echo: ${p}`));
    const refusals = w.seen.filter((s) => s.status === 429);
    expect(refusals.length).toBeGreaterThan(0);
    expect(refusals.every((s) => s.body?.includes("X402_CONCURRENCY_LIMIT"))).toBe(true);
    expect(guard.failureCount()).toBe(0);
  });
});

describe("an overloaded model (429 with Retry-After)", () => {
  let emu: Emulator;
  afterEach(() => emu?.close());

  it("waits what Retry-After says and retries: the caller gets one clean answer", async () => {
    emu = await startEmulator({ apiKeys: ["k"], faults: { overload: { first: 2, retryAfterSeconds: 1 } } });
    const w = wire();
    const model = new ChatService({ model: "emu-xs", apiKey: "k", baseUrl: emu.url, fetch: w.fetch });
    expect((await model.invoke("busy?")).content).toBe("Echo: busy?");
    expect(w.seen.map((s) => s.status)).toEqual([429, 429, 200]);
  });

  it("past the retries it is a ModelOverloadedError carrying the wait", async () => {
    emu = await startEmulator({ apiKeys: ["k"], faults: { overload: { first: 10, retryAfterSeconds: 1 } } });
    const model = new ChatService({ model: "emu-xs", apiKey: "k", baseUrl: emu.url, maxRetries: 1 });
    const err = await model.invoke("busy?").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelOverloadedError);
    expect((err as ModelOverloadedError).retryAfterMs).toBeGreaterThan(0);
    expect((err as ModelOverloadedError).retryAfterMs).toBeLessThanOrEqual(1_000);
  });
});

describe("reset headers in Unix ms", () => {
  let emu: Emulator;
  afterEach(() => emu?.close());

  it("near a token limit the pacer waits for the real reset (about a second), not a blind hold", async () => {
    // 2 s windows and 60 tokens each: the second request would overrun the first's window
    emu = await startEmulator({ apiKeys: ["k"], rateLimits: { windowMs: 2_000, tiers: { XS: { tokens: 60 } } } });
    const w = wire();
    const send = createServiceFetch({ apiKey: "k", baseUrl: emu.url, fetch: w.fetch, pacing: { maxHoldMs: 60_000 } });
    const request = (content: string) =>
      send(`${emu.url}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: chat("emu-xs", content),
        service: { model: "emu-xs", estimatedTokens: 40 },
      });
    await (await request("one two three four five six seven eight nine ten")).json();
    const second = await request("again");
    expect(second.status).toBe(200);
    expect(w.count(429)).toBe(0);
  }, 10_000);
});

describe("the error budget (x-ratelimit-remaining / -resets) tightens the guard", () => {
  let emu: Emulator;
  afterEach(() => emu?.close());

  it("a service budget of 5 failures holds the client at 5 although its own rule allows 20; the key is never blocked", async () => {
    emu = await startEmulator({ apiKeys: ["k"], rateLimits: { abuseMaxFailures: 5 } });
    const send = createServiceFetch({ apiKey: "k", baseUrl: emu.url, retry: false });
    const outcomes: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      outcomes.push(
        await send(`${emu.url}/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: chat("no-such-model", "x"),
        }).catch((e: unknown) => e),
      );
    }
    expect(outcomes.slice(0, 5).every((e) => e instanceof ModelNotFoundError)).toBe(true);
    expect(outcomes.slice(5).every((e) => e instanceof AbuseBlockError && e.source === "client")).toBe(true);
    expect(emu.rateLimiter.blockedFor("key:k")).toBe(0);
  });
});

describe("answers the live guides name, typed", () => {
  let emu: Emulator;
  let fixture: FixtureServer;
  beforeAll(async () => {
    emu = await startEmulator({ apiKeys: [{ key: "broke", usd: 0, diem: 0 }, "k"] });
    fixture = await startFixtureServer();
  });
  afterAll(async () => {
    await emu?.close();
    await fixture?.close();
  });

  it("an API key's 402 without a code is InsufficientBalanceError", async () => {
    const model = new ChatService({ model: "emu-xs", apiKey: "broke", baseUrl: emu.url });
    const err = await model.invoke("hi").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InsufficientBalanceError);
    expect((err as ServiceError).status).toBe(402);
  });

  it("404 for an unknown model is ModelNotFoundError", async () => {
    const model = new ChatService({ model: "no-such-model", apiKey: "k", baseUrl: emu.url });
    const err = await model.invoke("hi").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelNotFoundError);
    expect((err as ServiceError).message).toMatch(/Specified model not found/);
  });

  it("422 content policy is ContentPolicyError with suggested_prompt; request_id before X-Request-ID before CF-RAY", async () => {
    fixture.script = (_req, res) => {
      res.writeHead(422, { "content-type": "application/json", "x-request-id": "xrid-1", "cf-ray": "ray-1" });
      res.end(JSON.stringify({ error: "Your prompt violates the content policy", suggested_prompt: "a calm sea", request_id: "body-1" }));
    };
    const send = createServiceFetch({ apiKey: "k", baseUrl: fixture.url, retry: false });
    const call = () =>
      send(`${fixture.url}/audio/queue`, { method: "POST", body: "{}" }).then(
        () => new ServiceError("no error"),
        (e: unknown) => e as ServiceError,
      );
    const policy = await call();
    expect(policy).toBeInstanceOf(ContentPolicyError);
    expect((policy as ContentPolicyError).suggestedPrompt).toBe("a calm sea");
    expect(policy.requestId).toBe("body-1");

    fixture.script = (_req, res) => {
      res.writeHead(400, { "content-type": "application/json", "x-request-id": "xrid-2", "cf-ray": "ray-2" });
      res.end(JSON.stringify({ error: "bad" }));
    };
    expect((await call()).requestId).toBe("xrid-2");
    fixture.script = (_req, res) => {
      res.writeHead(400, { "content-type": "application/json", "cf-ray": "ray-3" });
      res.end(JSON.stringify({ error: "bad" }));
    };
    expect((await call()).requestId).toBe("ray-3");
  });
});
