/**
 * State on objects: a stack shares its abuse guard, pacing windows, in-flight gates, clock and wallet states with
 * the stacks of its own context only. Two contexts in one process share nothing, so each test builds its own and
 * needs no reset hook; many models over one client send through one stack. Over loopback to the emulator.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ChatService } from "../../src/chat/index.js";
import { ServiceClient } from "../../src/client.js";
import { ServiceEmbeddings } from "../../src/embeddings/index.js";
import { createServiceFetch } from "../../src/stack.js";
import { createServiceContext, defaultServiceContext, ServiceContext } from "../../src/http/context.js";
import { AbuseBlockError, ConfigurationError, ModelNotFoundError, RateLimitError } from "../../src/http/errors.js";
import { stateOf } from "../../src/x402/wallet-state.js";
import type { X402Wallet } from "../../src/x402/wallets.js";

let emu: Emulator;
beforeAll(async () => {
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
  await emu?.close();
});

describe("two contexts in one process share nothing", () => {
  it("an abuse guard: a caller blocked by the client in one context is still sent in another", async () => {
    const [a, b] = [createServiceContext(), createServiceContext()];
    const options = { apiKey: "guard-key", baseUrl: emu.url, retry: false as const, abuseGuard: { maxFailures: 3, windowMs: 30_000 } };
    const typo = (context: ServiceContext) => new ChatService({ model: "emu-no-such-model", context, ...options });
    const errors: unknown[] = [];
    for (let i = 0; i < 4; i++) errors.push(await typo(a).invoke(`typo ${i}`).catch((e: unknown) => e));
    expect(errors.slice(0, 3).every((e) => e instanceof ModelNotFoundError)).toBe(true);
    expect(errors[3]).toBeInstanceOf(AbuseBlockError);
    // a new model of context a finds the guard its failures tripped; one of context b was never told of them
    await expect(typo(a).invoke("again")).rejects.toMatchObject({ name: "AbuseBlockError", source: "client" });
    await expect(typo(b).invoke("elsewhere")).rejects.toBeInstanceOf(ModelNotFoundError);
  });

  it("a pacing window: a spent window holds the next request of its context, and not another context's", async () => {
    const [a, b] = [createServiceContext(), createServiceContext()];
    const model = (context: ServiceContext) => new ChatService({ model: "emu-xs", apiKey: "pace-key", baseUrl: emu.url, retry: false, context });
    await model(a).invoke("one");
    await model(a).invoke("two"); // its answer says: no request left in this minute
    // the same context waits for the window (until the call gives up, unsent); the other sends, and the service answers 429
    await expect(model(a).invoke("three", { signal: AbortSignal.timeout(500) })).rejects.toMatchObject({ name: expect.stringMatching(/Abort|Timeout/) });
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

  it("the /models lists: a list read by one context's stack is not another's", async () => {
    const [a, b] = [createServiceContext(), createServiceContext()];
    await new ServiceClient({ baseUrl: emu.url, context: a }).models().resolve("emu-xs");
    expect(a.parts).toContain("model lists");
    expect(b.parts).not.toContain("model lists");
    new ServiceClient({ baseUrl: emu.url, context: b }).models();
    expect(b.parts).toContain("model lists");
  });

  it("a clock: each context has its own, the default one the process's", () => {
    const [a, b] = [createServiceContext(), createServiceContext()];
    expect(a.clock).not.toBe(b.clock);
    expect(createServiceFetch({ apiKey: "k", baseUrl: emu.url }).context).toBe(defaultServiceContext());
    expect(createServiceFetch({ apiKey: "k", baseUrl: emu.url, context: a }).context).toBe(a);
  });

  it("a context that is not one is refused before any request", () => {
    expect(() => createServiceFetch({ apiKey: "k", baseUrl: emu.url, context: {} as ServiceContext })).toThrow(ConfigurationError);
    expect(() => new ChatService({ model: "emu-xs", apiKey: "k", baseUrl: emu.url, context: { clock: 1 } as unknown as ServiceContext })).toThrow(/context must be a ServiceContext/);
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
    await expect(models[2]!.invoke("three", { signal: AbortSignal.timeout(500) })).rejects.toMatchObject({ name: expect.stringMatching(/Abort|Timeout/) });
    expect(client.fetch.context.parts).toEqual(expect.arrayContaining(["abuse guards", "rate limiters"]));
  });

  it("a client that is not a ServiceClient is refused", () => {
    const bad = { model: "emu-xs", apiKey: "k", baseUrl: emu.url };
    expect(() => new ChatService({ ...bad, client: { fetch: 1 } as unknown as ServiceClient })).toThrow(/client must be a ServiceClient/);
    const other = new ServiceClient({ apiKey: "k", baseUrl: emu.url });
    expect(() => new ChatService({ ...bad, client: other, serviceFetch: createServiceFetch(bad) })).toThrow(ConfigurationError);
  });
});
