/**
 * Options are validated before any request: a bad value is a ConfigurationError (the stack) or a
 * ValidationError (sampling, per-request hints, tools) whose message names the option. A timer value that
 * Node cannot hold (Infinity, above 2^31-1 ms) used to fire after 1 ms.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChatService } from "../../src/chat/index.js";
import { createServiceFetch, ServiceClient } from "../../src/index.js";
import { CryptoRpcToolkit } from "../../src/crypto-rpc/index.js";
import { ConfigurationError, ServiceError, ValidationError } from "../../src/http/errors.js";
import { completion, json, startFixtureServer, type FixtureServer } from "../chat/fixture-server.js";

let fx: FixtureServer;
beforeAll(async () => {
  fx = await startFixtureServer((_req, res) => json(res, completion({ content: "ok" })));
});
afterAll(() => fx.close());

const MAX_TIMER_MS = 2 ** 31 - 1;

function thrown(fn: () => unknown): any {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

/** `fn` throws `cls` (a package error) whose message names `option`. */
function expectRefused(fn: () => unknown, cls: typeof ConfigurationError | typeof ValidationError, option: string) {
  const err = thrown(fn);
  expect(err, `${option} was accepted`).toBeInstanceOf(ServiceError);
  expect(err).toBeInstanceOf(cls);
  expect(err.message).toContain(option);
}

const stack = (o: Record<string, unknown>) => () => createServiceFetch({ baseUrl: fx.url, apiKey: "k", ...o } as never);

describe("the fetch stack's options", () => {
  it.each([Infinity, MAX_TIMER_MS + 1, 2 ** 40, 0, -5, Number.NaN, "1000"])("timeout %s", (timeout) => {
    expectRefused(stack({ timeout }), ConfigurationError, "timeout");
  });

  it("the longest timer Node holds is accepted", () => {
    expect(() => createServiceFetch({ baseUrl: fx.url, apiKey: "k", timeout: MAX_TIMER_MS })).not.toThrow();
  });

  it.each([
    ["retry.maxRetries", { maxRetries: -1 }],
    ["retry.maxRetries", { maxRetries: 1.5 }],
    ["retry.maxRetries", { maxRetries: Infinity }],
    ["retry.maxRetries", { maxRetries: "3" }],
    ["retry.baseDelayMs", { baseDelayMs: -1 }],
    ["retry.baseDelayMs", { baseDelayMs: Number.NaN }],
    ["retry.maxDelayMs", { maxDelayMs: Infinity }],
    ["retry.maxDelayMs", { maxDelayMs: MAX_TIMER_MS + 1 }],
    ["retry.maxRateLimitWaitMs", { maxRateLimitWaitMs: -1 }],
    ["retry.random", { random: 0.5 }],
    ["retry.sleep", { sleep: "no" }],
  ])("%s %j", (option, retry) => {
    expectRefused(stack({ retry }), ConfigurationError, option);
  });

  it.each([
    ["retry", { retry: true }],
    ["retry", { retry: 3 }],
    ["pacing", { pacing: "on" }],
    ["pacing.maxHoldMs", { pacing: { maxHoldMs: -1 } }],
    ["pacing.maxHoldMs", { pacing: { maxHoldMs: Infinity } }],
    ["pacing.resetMarginMs", { pacing: { resetMarginMs: Number.NaN } }],
    ["topUp.topUpTimeoutMs", { topUp: { topUpTimeoutMs: Infinity } }],
    ["topUp.maxResends", { topUp: { maxResends: -1 } }],
    ["topUp.resendDelayMs", { topUp: { resendDelayMs: MAX_TIMER_MS + 1 } }],
    ["defaultHeaders", { defaultHeaders: { "bad header": "x" } }],
    ["defaultHeaders", { defaultHeaders: { "x-ok": "a\r\nb" } }],
    ["defaultHeaders", { defaultHeaders: "x-a: b" }],
    ["fetch", { fetch: "https://example.com" }],
  ])("%s %j", (option, o) => {
    expectRefused(stack(o), ConfigurationError, option);
  });

  it("a per-request timeout Node cannot hold is refused before any request", async () => {
    const client = new ServiceClient({ baseUrl: fx.url, apiKey: "k", pacing: false, abuseGuard: false });
    const before = fx.requests.length;
    for (const timeout of [Infinity, MAX_TIMER_MS + 1, 0, -1]) {
      const err = await client.request("/models", { service: { timeout } }).catch((e) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect(err.message).toContain("timeout");
    }
    expect(fx.requests.length).toBe(before);
  });
});

describe("ChatService options", () => {
  const chat = (o: Record<string, unknown>) => () => new ChatService({ model: "fx-model", baseUrl: fx.url, apiKey: "k", ...o } as never);

  it("timeout: Infinity is refused at construction, not fired after 1 ms", () => {
    expectRefused(chat({ timeout: Infinity }), ConfigurationError, "timeout");
    expectRefused(chat({ timeout: MAX_TIMER_MS + 1 }), ConfigurationError, "timeout");
  });

  it.each([
    ["maxTokens", { maxTokens: -5 }],
    ["maxTokens", { maxTokens: 0 }],
    ["maxTokens", { maxTokens: 1.5 }],
    ["maxTokens", { maxTokens: Infinity }],
    ["maxCompletionTokens", { maxCompletionTokens: -1 }],
    ["topLogprobs", { topLogprobs: -1 }],
    ["n", { n: 0 }],
    ["streaming", { streaming: "yes" }],
    ["streamUsage", { streamUsage: 1 }],
    ["splitThinkTags", { splitThinkTags: "no" }],
    ["modelKwargs", { modelKwargs: "temperature=1" }],
  ])("%s %j", (option, o) => {
    expectRefused(chat(o), ValidationError, option);
  });

  it("maxTokens: -1 keeps ChatOpenAI's meaning (no limit): nothing is sent", async () => {
    const m = new ChatService({
      model: "fx-model",
      baseUrl: fx.url,
      apiKey: "k",
      retry: false,
      pacing: false,
      abuseGuard: false,
      maxTokens: -1,
    });
    await m.invoke("hi");
    const body = fx.requests.at(-1)!.body;
    expect(body).not.toHaveProperty("max_tokens");
  });
});

describe("crypto tool options", () => {
  const client = () => new ServiceClient({ baseUrl: fx.url, apiKey: "k" });
  it.each([
    ["maxLogBlockRange", { maxLogBlockRange: 0 }],
    ["maxLogBlockRange", { maxLogBlockRange: -10 }],
    ["maxLogBlockRange", { maxLogBlockRange: 1.5 }],
    ["networksTtlMs", { networksTtlMs: -1 }],
    ["networksTtlMs", { networksTtlMs: Number.NaN }],
  ])("%s %j", (option, o) => {
    expectRefused(() => new CryptoRpcToolkit({ client: client(), ...o }), ValidationError, option);
  });
});
