/**
 * The members live `/models` records carry beyond the seed's, parsed with zod (src/models/facts.ts): `offline`,
 * `privacy`, `beta`, `regionRestrictions`, `deprecation { autoRemap, removesAt, replacementModelId }`,
 * `reasoningEffortOptions`, `maxImages` / `maxVideos`, `context_length`, and the prices' `cache_write` and
 * `extended` tier; records without them (the seed's) and a member of another shape read as absent, never as a
 * list that cannot be read. Over loopback: the emulator in live mode, and a scripted server for the odd records.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { createServiceFetch, modelFacts, modelPricing } from "../../src/index.js";
import { modelRecordsFor } from "../../src/models/records.js";
import { startFixtureServer, type FixtureServer } from "../chat/fixture-server.js";
import { createServiceContext } from "../../src/http/context.js";

let emu: Emulator;
let fx: FixtureServer;
beforeAll(async () => {
  [emu, fx] = await Promise.all([startEmulator({ apiKeys: ["k1"] }), startFixtureServer()]);
});
afterAll(async () => {
  await Promise.all([emu?.close(), fx?.close()]);
});
// each test its own context: no /models list carried over from another
let context = createServiceContext();
beforeEach(() => {
  context = createServiceContext();
});

const recordsOf = (baseUrl: string) => modelRecordsFor(createServiceFetch({ context, baseUrl, apiKey: "k1", retry: false }));

describe("live record members", () => {
  it("are typed: offline, region restrictions, deprecation, effort options, media caps, context length", async () => {
    const records = recordsOf(emu.url);
    await records.load();
    expect(modelFacts(records.get("emu-offline"))).toMatchObject({ offline: true, privacy: "private", beta: false });
    expect(modelFacts(records.get("emu-regional")).regionRestrictions).toEqual(["ZZ"]);
    expect(modelFacts(records.get("emu-sunset")).deprecation).toMatchObject({
      autoRemap: false,
      removesAt: "2030-06-01T00:00:00.000Z",
      replacementModelId: "emu-s",
    });
    expect(modelFacts(records.get("emu-o-reasoner")).reasoningEffortOptions).toEqual(["low", "medium", "high"]);
    expect(modelFacts(records.get("emu-m"))).toMatchObject({ maxImages: 10, maxVideos: 3, contextLength: 131_072, offline: false });
    expect(modelFacts(records.get("emu-s")).regionRestrictions).toBeUndefined();
  });

  it("absent (a seed record) or of another shape read as absent; the list is still read", async () => {
    fx.models = [
      { id: "bare", object: "model" },
      {
        id: "odd",
        model_spec: {
          offline: "yes",
          regionRestrictions: "US",
          deprecation: { autoRemap: "no", replacementModelId: 7 },
          capabilities: { reasoningEffortOptions: ["huge"], maxImages: -1, supportsVision: true },
        },
      },
      {
        id: "priced",
        context_length: 200_000,
        model_spec: {
          pricing: {
            input: { usd: 3, diem: 3 },
            output: { usd: 15, diem: 15 },
            cache_input: { usd: 0.3, diem: 0.3 },
            cache_write: { usd: 3.75, diem: 3.75 },
            extended: {
              context_token_threshold: 200_000,
              input: { usd: 6, diem: 6 },
              output: { usd: 22.5, diem: 22.5 },
              cache_write: { usd: 7.5, diem: 7.5 },
            },
          },
        },
      },
    ];
    const records = recordsOf(fx.url);
    await records.load();
    expect(modelFacts(records.get("bare"))).toEqual({});
    // a deprecation is still one (the model is deprecated); its members of another shape are absent
    expect(modelFacts(records.get("odd"))).toEqual({ deprecation: {} });
    expect(records.get("odd")!.model_spec!.capabilities!.supportsVision).toBe(true);
    expect(modelFacts(records.get("priced"))).toEqual({ contextLength: 200_000 });
    expect(modelPricing(records.get("priced"))).toEqual({
      input: { usd: 3, diem: 3 },
      output: { usd: 15, diem: 15 },
      cacheInput: { usd: 0.3, diem: 0.3 },
      cacheWrite: { usd: 3.75, diem: 3.75 },
      extended: {
        contextTokenThreshold: 200_000,
        input: { usd: 6, diem: 6 },
        output: { usd: 22.5, diem: 22.5 },
        cacheWrite: { usd: 7.5, diem: 7.5 },
      },
    });
    expect(modelPricing(records.get("bare"))).toBeUndefined();
  });
});
