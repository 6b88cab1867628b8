/**
 * State on objects: a stack shares its abuse guard, pacing windows, in-flight gates, clock and wallet states with
 * the stacks of its own context only. Two contexts in one process share nothing, so each test builds its own and
 * needs no reset hook; many models over one client send through one stack. Over loopback to the emulator.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ChatService } from "../../src/chat/index.js";
import { ServiceClient } from "../../src/client.js";
import { ServiceEmbeddings } from "../../src/embeddings/index.js";
import { WebSearchTool } from "../../src/tools/web-search.js";
import { createServiceFetch } from "../../src/stack.js";
import { createServiceContext, defaultServiceContext, type ServiceContext } from "../../src/http/context.js";
import { AbuseBlockError, ConfigurationError, ModelNotFoundError, RateLimitError } from "../../src/http/errors.js";
import { stateOf } from "../../src/x402/wallet-state.js";
import type { X402Wallet } from "../../src/x402/wallets.js";
import { rememberQueueId, seenQueueId } from "../../src/media/jobs.js";
import { completion, json, startFixtureServer, type FixtureServer } from "../chat/fixture-server.js";
import { topUp } from "../../src/x402/client.js";
import { X402PaymentController } from "../../src/x402/layer.js";
import { EvmWallet } from "../../src/evm/index.js";
import { payer, startPaidEmulator, testPolicy } from "../x402/helpers.js";

let emu: Emulator;
let fx: FixtureServer;
beforeAll(async () => {
  fx = await startFixtureServer();
  emu = await startEmulator({
    apiKeys: [
      { key: "guard-key", usd: 100 },
      { key: "pace-key", usd: 100 },
      { key: "shared-key", usd: 100 },
    ],
    rateLimits: { windowMs: 60_000, tiers: { XS: { requests: 2, tokens: 1_000_000_000 } } },
  });
});
afterAll(async () => {
  await Promise.all([emu?.close(), fx?.close()]);
});

describe("two contexts in one process share nothing", () => {
  it("an abuse guard: a caller blocked by the client in one context is still sent in another", async () => {
    const [a, b] = [createServiceContext(), createServiceContext()];
    const options = { apiKey: "guard-key", baseUrl: emu.url, retry: false as const, abuseGuard: { maxFailures: 3, windowMs: 30_000 } };
    const typo = (context: ServiceContext) => new ChatService({ model: "emu-no-such-model", context, ...options });
    const errors: unknown[] = [];
    for (let i = 0; i < 4; i++)
      errors.push(
        await typo(a)
          .invoke(`typo ${i}`)
          .catch((e: unknown) => e),
      );
    expect(errors.slice(0, 3).every((e) => e instanceof ModelNotFoundError)).toBe(true);
    expect(errors[3]).toBeInstanceOf(AbuseBlockError);
    // a new model of context a finds the guard its failures tripped; one of context b was never told of them
    await expect(typo(a).invoke("again")).rejects.toMatchObject({ name: "AbuseBlockError", source: "client" });
    await expect(typo(b).invoke("elsewhere")).rejects.toBeInstanceOf(ModelNotFoundError);
  });

  it("a pacing window: a spent window holds the next request of its context, and not another context's", async () => {
    const [a, b] = [createServiceContext(), createServiceContext()];
    const model = (context: ServiceContext) =>
      new ChatService({ model: "emu-xs", apiKey: "pace-key", baseUrl: emu.url, retry: false, context });
    await model(a).invoke("one");
    await model(a).invoke("two"); // its answer says: no request left in this minute
    // the same context waits for the window (until the call gives up, unsent); the other sends, and the service answers 429
    await expect(model(a).invoke("three", { signal: AbortSignal.timeout(500) })).rejects.toMatchObject({
      name: expect.stringMatching(/Abort|Timeout/),
    });
    await expect(model(b).invoke("three", { signal: AbortSignal.timeout(5_000) })).rejects.toBeInstanceOf(RateLimitError);
  });

  it("a wallet state: one per address within a context, apart between contexts", () => {
    const wallet = { address: "0x1111111111111111111111111111111111111111", network: "eip155:8453" } as unknown as X402Wallet;
    const twin = { ...wallet } as X402Wallet;
    const [a, b] = [createServiceContext(), createServiceContext()];
    expect(stateOf(twin, a)).toBe(stateOf(wallet, a));
    expect(stateOf(wallet, b)).not.toBe(stateOf(wallet, a));
    expect(stateOf(wallet)).not.toBe(stateOf(wallet, a));
    expect(a.parts).toEqual(["wallet states"]);
  });

  it("the /models lists: read once for the stacks of a context, again for another context's", async () => {
    const [a, b] = [createServiceContext(), createServiceContext()];
    let reads = 0;
    const fetch = async (input: string | URL | Request, init?: RequestInit) => {
      if (new URL(String(input)).pathname.endsWith("/models")) reads++;
      return globalThis.fetch(input, init);
    };
    await new ServiceClient({ baseUrl: emu.url, context: a, fetch }).models().load();
    await new ServiceClient({ baseUrl: emu.url, context: a, fetch }).models().load();
    expect(reads).toBe(1);
    expect(new ServiceClient({ baseUrl: emu.url, context: b, fetch }).models().loaded).toBe(false);
    await new ServiceClient({ baseUrl: emu.url, context: b, fetch }).models().load();
    expect(reads).toBe(2);
  });

  it("a deprecation warning: once per model in a context, once more in another", async () => {
    fx.script = (_req, res) =>
      json(res, completion({ content: "old" }), {
        "x-service-model-id": "fx-old",
        "x-service-model-deprecation-warning": "fx-old retires soon",
      });
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const [a, b] = [createServiceContext(), createServiceContext()];
      const model = (context: ServiceContext) => new ChatService({ model: "fx-old", apiKey: "k", baseUrl: fx.url, retry: false, context });
      await model(a).invoke("one");
      await model(a).invoke("two");
      expect(warn.mock.calls.filter((c) => String(c[0]).includes("fx-old"))).toHaveLength(1);
      await model(b).invoke("three");
      expect(warn.mock.calls.filter((c) => String(c[0]).includes("fx-old"))).toHaveLength(2);
    } finally {
      warn.mockRestore();
    }
  });

  it("a refused parameter: refused unsent in the context that drew the 400, still sent in another", async () => {
    fx.script = (req, res) =>
      req.body?.seed !== undefined
        ? json(res, { error: "seed is not supported by this model" }, {}, 400)
        : json(res, completion({ content: "ok" }));
    const [a, b] = [createServiceContext(), createServiceContext()];
    const model = (context: ServiceContext) =>
      new ChatService({ model: "fx-noseed", apiKey: "k", baseUrl: fx.url, retry: false, abuseGuard: false, seed: 7, context });
    await expect(model(a).invoke("one")).rejects.toMatchObject({ name: "UnsupportedParameterError", field: "seed" });
    const sent = fx.requests.length;
    await expect(model(a).invoke("two")).rejects.toMatchObject({ name: "UnsupportedCapabilityError", field: "seed" });
    expect(fx.requests.length).toBe(sent);
    await expect(model(b).invoke("three")).rejects.toMatchObject({ name: "UnsupportedParameterError" });
    expect(fx.requests.length).toBe(sent + 1);
  });

  it("a character catalog: a slug the service answered 404 is refused unsent in its context, asked again in another", async () => {
    fx.script = (_req, res) => json(res, { error: "Character not found" }, {}, 404);
    const [a, b] = [createServiceContext(), createServiceContext()];
    const model = (context: ServiceContext) =>
      new ChatService({ model: "fx-model:character_slug=ghost", apiKey: "k", baseUrl: fx.url, retry: false, abuseGuard: false, context });
    await expect(model(a).invoke("one")).rejects.toMatchObject({ name: "CharacterNotFoundError" });
    const sent = fx.requests.length;
    await expect(model(a).invoke("two")).rejects.toMatchObject({
      name: "CharacterNotFoundError",
      message: expect.stringContaining("answered 404"),
    });
    expect(fx.requests.length).toBe(sent);
    await expect(model(b).invoke("three")).rejects.toMatchObject({ name: "CharacterNotFoundError" });
    expect(fx.requests.length).toBe(sent + 1);
  });

  it("the queue ids seen: a context knows its own jobs only", () => {
    const [a, b] = [createServiceContext(), createServiceContext()];
    const stack = (context: ServiceContext) => createServiceFetch({ apiKey: "queue-key", baseUrl: emu.url, context });
    rememberQueueId(stack(a), "q-1");
    expect(seenQueueId(stack(a), "q-1")).toBe(true);
    expect(seenQueueId(stack(b), "q-1")).toBe(false);
  });

  it("a clock: each context has its own, the default one the process's", () => {
    const [a, b] = [createServiceContext(), createServiceContext()];
    expect(a.clock).not.toBe(b.clock);
    expect(createServiceFetch({ apiKey: "k", baseUrl: emu.url }).context).toBe(defaultServiceContext());
    expect(createServiceFetch({ apiKey: "k", baseUrl: emu.url, context: a }).context).toBe(a);
  });

  it("a context that is not one is refused before any request", () => {
    expect(() => createServiceFetch({ apiKey: "k", baseUrl: emu.url, context: {} as ServiceContext })).toThrow(ConfigurationError);
    expect(
      () => new ChatService({ model: "emu-xs", apiKey: "k", baseUrl: emu.url, context: { clock: 1 } as unknown as ServiceContext }),
    ).toThrow(/context must be a ServiceContext/);
  });
});

describe("many models over one client", () => {
  it("N ChatService over one ServiceClient send through its one stack: one pacing window for all of them", async () => {
    const client = new ServiceClient({ apiKey: "shared-key", baseUrl: emu.url, retry: false, context: createServiceContext() });
    const models = ["emu-xs", "emu-xs", "emu-xs"].map((model) => new ChatService({ model, client }));
    for (const m of models) expect(m.serviceFetch).toBe(client.fetch);
    expect(new ServiceEmbeddings({ model: "emu-embed", client }).serviceFetch).toBe(client.fetch);
    await models[0]!.invoke("one");
    await models[1]!.invoke("two");
    // the third model's request waits in the window the first two spent (a stack of its own would draw a 429)
    await expect(models[2]!.invoke("three", { signal: AbortSignal.timeout(500) })).rejects.toMatchObject({
      name: expect.stringMatching(/Abort|Timeout/),
    });
    expect(client.fetch.context.parts).toEqual(expect.arrayContaining(["abuse guards", "rate limiters"]));
  });

  it("a client that is not a ServiceClient is refused", () => {
    const bad = { model: "emu-xs", apiKey: "k", baseUrl: emu.url };
    expect(() => new ChatService({ ...bad, client: { fetch: 1 } as unknown as ServiceClient })).toThrow(/client must be a ServiceClient/);
    const other = new ServiceClient({ apiKey: "k", baseUrl: emu.url });
    expect(() => new ChatService({ ...bad, client: other, serviceFetch: createServiceFetch(bad) })).toThrow(ConfigurationError);
  });

  it("a context beside a client is refused unless it is the client's own (it would be ignored)", () => {
    const context = createServiceContext();
    const client = new ServiceClient({ apiKey: "k", baseUrl: emu.url, context });
    expect(() => new ChatService({ model: "emu-xs", client, context: createServiceContext() })).toThrow(/context differs/);
    expect(() => new ServiceEmbeddings({ client, context: createServiceContext() })).toThrow(/context differs/);
    expect(new ChatService({ model: "emu-xs", client, context }).serviceFetch).toBe(client.fetch);
  });

  it("so is one beside a tool's client or a client's serviceFetch (the same rule on every face)", () => {
    const context = createServiceContext();
    const client = new ServiceClient({ apiKey: "k", baseUrl: emu.url, context });
    expect(() => new WebSearchTool({ client, context: createServiceContext() })).toThrow(/context differs/);
    expect(() => new ServiceClient({ serviceFetch: client.fetch, context: createServiceContext() })).toThrow(/context differs/);
    expect(new WebSearchTool({ client, context }).client).toBe(client);
    expect(new ServiceClient({ serviceFetch: client.fetch, context }).fetch).toBe(client.fetch);
  });
});

describe("a top-up through a client", () => {
  it("counts in the wallet state of the client's context (its stacks' single flight), not the process's", async () => {
    const paid = await startPaidEmulator();
    try {
      const wallet = payer(paid, 3);
      const [a, b] = [createServiceContext(), createServiceContext()];
      const client = new ServiceClient({ baseUrl: paid.url, wallet, abuseGuard: false, context: a });
      const done = await topUp(client, 5, { wallet, policy: testPolicy(paid) });
      expect(done.amountUsd).toBe(5);
      expect(stateOf(wallet, a).epoch).toBe(1);
      expect(stateOf(wallet, b).epoch).toBe(0);
      expect(stateOf(wallet).epoch).toBe(0);
    } finally {
      await paid.close();
    }
  });

  it("a payment controller given a context that is not one is refused before any request", () => {
    expect(() => new X402PaymentController({ wallet: EvmWallet.random(), context: {} as ServiceContext })).toThrow(
      /context must be a ServiceContext/,
    );
  });
});
