/**
 * The emulator refuses per model what the live service refuses from its `/models` records (live mode; the seed,
 * or `modelGates: false` / `chat.capabilityGates: false`, serves them): an offline model is a 503, a
 * region-restricted one a 403, a `reasoning_effort` outside `reasoningEffortOptions` a 400 (the top-level one wins
 * over `reasoning.effort`), and `stop`, `seed`, `n` ≠ 1 and non-zero penalties on an OpenAI-style reasoner a 400
 * whose `issues[]` entry reads "<field> is not supported by this model"; nothing is charged.
 * `/models/compatibility_mapping` is a 400 for `type=all` and `type=code`. The records carry what is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Emulator } from "langchain-service-emulator";
import { chat, KEY, startModelsEmulator, user } from "./helpers.js";

let live: Emulator;
let seed: Emulator;
let ungated: Emulator;
beforeAll(async () => {
  [live, seed, ungated] = await Promise.all([
    startModelsEmulator(),
    startModelsEmulator({ mode: "seed" }),
    startModelsEmulator({ modelGates: false, chat: { capabilityGates: false } }),
  ]);
});
afterAll(async () => {
  await Promise.all([live?.close(), seed?.close(), ungated?.close()]);
});

const charges = (emu: Emulator) => emu.ledger.apiKey(KEY)!.entries.length;
const hi = [user("hi")];

describe("models the records say are unavailable (live)", () => {
  it("an offline model is a 503 saying so, uncharged; the seed and modelGates: false serve it", async () => {
    const before = charges(live);
    const r = await chat(live, { model: "emu-offline", messages: hi });
    expect(r.status).toBe(503);
    expect(r.json.error).toMatch(/offline/);
    expect(charges(live)).toBe(before);
    expect((await chat(seed, { model: "emu-offline", messages: hi })).status).toBe(200);
    expect((await chat(ungated, { model: "emu-offline", messages: hi })).status).toBe(200);
  });

  it("a region-restricted model is a 403 naming the region", async () => {
    const r = await chat(live, { model: "emu-regional", messages: hi });
    expect(r.status).toBe(403);
    expect(r.json.error).toMatch(/region/);
    expect((await chat(seed, { model: "emu-regional", messages: hi })).status).toBe(200);
  });

  it("the records carry offline, regionRestrictions, the deprecation's replacement and the effort options", async () => {
    const { data } = (await (await fetch(`${live.url}/models`)).json()) as { data: any[] };
    const spec = (id: string) => data.find((d) => d.id === id).model_spec;
    expect(spec("emu-offline").offline).toBe(true);
    expect(spec("emu-s").offline).toBe(false);
    expect(spec("emu-regional").regionRestrictions).toEqual(["ZZ"]);
    expect(spec("emu-s").regionRestrictions).toBeUndefined();
    expect(spec("emu-sunset").deprecation).toMatchObject({
      autoRemap: false,
      removesAt: "2030-06-01T00:00:00.000Z",
      replacementModelId: "emu-s",
    });
    expect(spec("emu-o-reasoner").capabilities).toMatchObject({
      supportsReasoningEffort: true,
      reasoningEffortOptions: ["low", "medium", "high"],
    });
    expect(spec("emu-reasoner").capabilities.reasoningEffortOptions).toEqual(["none", "low", "medium", "high"]);
  });
});

describe("reasoning efforts (live)", () => {
  it("outside the options: a 400 naming the field; the top-level effort wins", async () => {
    const r = await chat(live, { model: "emu-o-reasoner", messages: hi, reasoning_effort: "xhigh" });
    expect(r.status).toBe(400);
    expect(r.json.issues).toEqual([
      expect.objectContaining({
        path: ["reasoning_effort"],
        message: expect.stringContaining("reasoning_effort is not supported by this model"),
      }),
    ]);
    const nested = await chat(live, { model: "emu-reasoner", messages: hi, reasoning: { effort: "max" } });
    expect(nested.status).toBe(400);
    expect(nested.json.issues[0].path).toEqual(["reasoning", "effort"]);
    expect(
      (await chat(live, { model: "emu-o-reasoner", messages: hi, reasoning_effort: "low", reasoning: { effort: "xhigh" } })).status,
    ).toBe(200);
    expect((await chat(seed, { model: "emu-o-reasoner", messages: hi, reasoning_effort: "xhigh" })).status).toBe(200);
  });
});

describe("parameters an OpenAI-style reasoner refuses (live)", () => {
  it.each([
    ["stop", { stop: "END" }],
    ["seed", { seed: 3 }],
    ["n", { n: 2 }],
    ["presence_penalty", { presence_penalty: 0.2 }],
    ["frequency_penalty", { frequency_penalty: -1 }],
  ])("%s: a 400 whose issue names it, uncharged, in the unsupported-feature budget", async (field, extra) => {
    const before = charges(live);
    const r = await chat(live, { model: "emu-o-reasoner", messages: hi, ...extra });
    expect(r.status).toBe(400);
    expect(r.json.issues).toEqual([{ code: "custom", path: [field], message: `${field} is not supported by this model` }]);
    expect(charges(live)).toBe(before);
    expect((await chat(live, { model: "emu-s", messages: hi, ...extra })).status).toBe(200);
    expect((await chat(seed, { model: "emu-o-reasoner", messages: hi, ...extra })).status).toBe(200);
  });

  it("n = 1 and zero penalties are taken", async () => {
    expect((await chat(live, { model: "emu-o-reasoner", messages: hi, n: 1, presence_penalty: 0, frequency_penalty: 0 })).status).toBe(200);
  });
});

describe("GET /models/compatibility_mapping (live)", () => {
  it("is a 400 for type=all and type=code; per-list types answer", async () => {
    for (const type of ["all", "code"]) {
      const r = await fetch(`${live.url}/models/compatibility_mapping?type=${type}`);
      expect(r.status).toBe(400);
      expect(((await r.json()) as any).error).toContain(type);
      expect((await fetch(`${seed.url}/models/compatibility_mapping?type=${type}`)).status).toBe(200);
    }
    expect((await fetch(`${live.url}/models/compatibility_mapping?type=text`)).status).toBe(200);
  });
});
