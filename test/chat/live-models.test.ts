/**
 * What a model's `/models` record says it can take, against the emulator in live mode over loopback: an offline
 * model is refused before sending (and its 503 is not retried), a region-restricted one is a typed 403, a
 * `reasoning_effort` outside `reasoningEffortOptions` is refused unsent (the top-level one wins), a parameter the
 * model refuses (`stop`, `seed`, `n`, penalties on an OpenAI-style reasoner) is a typed 400 naming the field and
 * refused unsent thereafter, and a deprecation is surfaced (profile, one warning) and followed only on request.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { ChatService, type ChatServiceInput } from "../../src/chat/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ModelAccessDeniedError, ModelOfflineError, UnsupportedCapabilityError, UnsupportedParameterError } from "../../src/index.js";
import { createServiceContext } from "../../src/http/context.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: ["k1"] });
});
afterAll(async () => {
  await emu?.close();
});
// each test its own context: no /models list or deprecation warning carried over from another
let context = createServiceContext();
beforeEach(() => {
  context = createServiceContext();
});

/** The chat request bodies that reach the wire. */
function wire() {
  const bodies: any[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    if (String(input).endsWith("/chat/completions") && typeof init?.body === "string") bodies.push(JSON.parse(init.body));
    return globalThis.fetch(input, init);
  };
  return { bodies, fetch };
}

function chat(fields: Partial<ChatServiceInput> & { model: string }, fetch?: ChatServiceInput["fetch"]) {
  return new ChatService({
    context,
    apiKey: "k1",
    baseUrl: emu.url,
    retry: { baseDelayMs: 1, maxDelayMs: 2 },
    ...(fetch ? { fetch } : {}),
    ...fields,
  });
}

describe("an offline model", () => {
  it("is refused before sending once its record is read", async () => {
    const { bodies, fetch } = wire();
    const m = chat({ model: "emu-offline" }, fetch);
    await m.loadProfile();
    const err = await m.invoke("hi").catch((e) => e);
    expect(err).toBeInstanceOf(ModelOfflineError);
    expect(err).toMatchObject({ model: "emu-offline", status: undefined });
    expect(bodies).toHaveLength(0);
  });

  it("answers a 503 that is typed and not retried when the record was not read yet", async () => {
    const { bodies, fetch } = wire();
    const err = await chat({ model: "emu-offline" }, fetch)
      .invoke("hi")
      .catch((e) => e);
    expect(err).toBeInstanceOf(ModelOfflineError);
    expect(err.status).toBe(503);
    expect(bodies).toHaveLength(1);
  });
});

describe("a region-restricted model", () => {
  it("is a typed 403 naming the region as the reason, sent once", async () => {
    const { bodies, fetch } = wire();
    const m = chat({ model: "emu-regional" }, fetch);
    const err = await m.invoke("hi").catch((e) => e);
    expect(err).toBeInstanceOf(ModelAccessDeniedError);
    expect(err).toMatchObject({ status: 403, reason: "region" });
    expect(bodies).toHaveLength(1);
  });
});

describe("reasoning efforts", () => {
  it("outside the record's reasoningEffortOptions are refused unsent; the top-level one wins", async () => {
    const { bodies, fetch } = wire();
    const m = chat({ model: "emu-o-reasoner" }, fetch);
    await m.loadProfile();
    await expect(m.invoke("hi", { reasoningEffort: "xhigh" })).rejects.toMatchObject({
      name: "UnsupportedCapabilityError",
      field: "reasoning_effort",
    });
    await expect(m.invoke("hi", { reasoning: { effort: "max" } })).rejects.toMatchObject({ field: "reasoning.effort" });
    // the top-level effort is the one the service reads: a nested one it overrides is not checked
    await expect(m.invoke("hi", { reasoningEffort: "max", reasoning: { effort: "low" } })).rejects.toBeInstanceOf(
      UnsupportedCapabilityError,
    );
    expect(bodies).toHaveLength(0);
    const ok = await m.invoke("hi", { reasoningEffort: "low", reasoning: { effort: "xhigh" } });
    expect(typeof ok.content).toBe("string");
    expect(bodies).toHaveLength(1);
  });

  it("the service's 400 for one is typed and names the field", async () => {
    const err = await chat({ model: "emu-o-reasoner" })
      .invoke("hi", { reasoningEffort: "xhigh" })
      .catch((e) => e);
    expect(err).toBeInstanceOf(UnsupportedParameterError);
    expect(err).toMatchObject({ status: 400, field: "reasoning_effort" });
  });
});

describe("parameters an OpenAI-style reasoner refuses", () => {
  it.each([
    ["stop", { stop: ["END"] }],
    ["seed", { seed: 7 }],
    ["n", { n: 2 }],
    ["presence_penalty", { presencePenalty: 0.5 }],
    ["frequency_penalty", { frequencyPenalty: -0.5 }],
  ] as const)("%s: the service's 400 is typed with the field, and the next such call is refused unsent", async (field, options) => {
    const { bodies, fetch } = wire();
    const m = chat({ model: "emu-o-reasoner" }, fetch);
    const first = await m.invoke("hi", options as any).catch((e) => e);
    expect(first).toBeInstanceOf(UnsupportedParameterError);
    expect(first).toMatchObject({ status: 400, field });
    expect(bodies).toHaveLength(1);
    const second = await m.invoke("hi", options as any).catch((e) => e);
    expect(second).toBeInstanceOf(UnsupportedCapabilityError);
    expect(second).toMatchObject({ field, model: "emu-o-reasoner" });
    expect(bodies).toHaveLength(1);
  });

  it("n = 1 and zero penalties are what the model takes", async () => {
    // (the refusals learned above are of non-zero penalties and n > 1 only)
    const m = chat({ model: "emu-o-reasoner" });
    const ok = await m.invoke("hi", { n: 1, presencePenalty: 0, frequencyPenalty: 0 });
    expect(typeof ok.content).toBe("string");
  });
});

describe("a deprecated model", () => {
  it("is surfaced on the profile and warned once, and sent as configured", async () => {
    const { bodies, fetch } = wire();
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const m = chat({ model: "emu-sunset" }, fetch);
      const profile = await m.loadProfile();
      expect(profile.deprecation).toMatchObject({ replacementModelId: "emu-s", removesAt: "2030-06-01T00:00:00.000Z", autoRemap: false });
      const msg = await m.invoke("hi");
      await m.invoke("again");
      expect(bodies.map((b) => b.model)).toEqual(["emu-sunset", "emu-sunset"]);
      expect(msg.response_metadata.model_name).toBe("emu-sunset");
      const ours = warn.mock.calls.filter((c) => String(c[0]).includes("emu-sunset"));
      expect(ours).toHaveLength(1);
      expect(String(ours[0]![0])).toContain("emu-s");
    } finally {
      warn.mockRestore();
    }
  });

  it("is replaced by its replacementModelId only with followDeprecation (the feature suffix kept)", async () => {
    const { bodies, fetch } = wire();
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const m = chat({ model: "emu-sunset:enable_web_search=off", followDeprecation: true }, fetch);
      await m.loadProfile();
      const msg = await m.invoke("hi");
      expect(bodies.map((b) => b.model)).toEqual(["emu-s:enable_web_search=off"]);
      expect(msg.response_metadata.model_name).toBe("emu-s");
      expect(String(warn.mock.calls.find((c) => String(c[0]).includes("emu-sunset"))?.[0])).toContain("sending emu-s");
    } finally {
      warn.mockRestore();
    }
  });

  it("followDeprecation must be a boolean", () => {
    expect(() => chat({ model: "emu-sunset", followDeprecation: "yes" as any })).toThrow(/followDeprecation must be a boolean/);
  });
});
