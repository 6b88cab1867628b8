/**
 * `ChatService#profile` is a LangChain `ModelProfile` built from the service's `/models` record of the model, read
 * once per base URL for every instance (with a key or a wallet), in the background on a model's first call, or
 * by `await loadProfile()`; the `profile` option overrides it field by field. With a profile, a request needing a
 * capability the model lacks is refused before anything is sent (`UnsupportedCapabilityError`), and
 * `withStructuredOutput` / `createAgent` pick the method the model can do. Against the emulator, whose models lack
 * what the live service's models can lack and which gates like it.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { tool } from "@langchain/core/tools";
import { HumanMessage } from "@langchain/core/messages";
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { createAgent } from "langchain";
import { ChatService, type ChatServiceInput } from "../../src/chat/index.js";
import { startEmulator, MODELS, type Emulator } from "langchain-service-emulator";
import { BadRequestError, UnsupportedCapabilityError, ValidationError } from "../../src/http/errors.js";
import { ServiceClient } from "../../src/index.js";
import { EvmWallet } from "../../src/evm/index.js";
import { completion, json, startFixtureServer, type FixtureServer } from "./fixture-server.js";
import { createServiceContext } from "../../src/http/context.js";

const IMAGE = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const Person = z.object({ name: z.string(), age: z.number() });
const weather = tool(async ({ city }) => `It is sunny in ${city}.`, {
  name: "get_weather",
  description: "Current weather in a city",
  schema: z.object({ city: z.string() }),
});

let emu: Emulator;
let fx: FixtureServer;
beforeAll(async () => {
  [emu, fx] = await Promise.all([startEmulator({ apiKeys: ["k1", "k2"] }), startFixtureServer()]);
});
afterAll(async () => {
  await Promise.all([emu?.close(), fx?.close()]);
});
// each test its own context: no /models list carried over from another
let context = createServiceContext();
beforeEach(() => {
  context = createServiceContext();
});

/** What reaches the wire: `/models` reads and chat request bodies. */
function wire() {
  const seen = { modelReads: 0, bodies: [] as any[] };
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const url = String(input);
    if (url.includes("/models")) seen.modelReads++;
    if (url.endsWith("/chat/completions") && typeof init?.body === "string") seen.bodies.push(JSON.parse(init.body));
    return globalThis.fetch(input, init);
  };
  return { seen, fetch };
}

function chat(fields: Partial<ChatServiceInput> & { model: string }, fetch?: ChatServiceInput["fetch"]) {
  return new ChatService({ context, apiKey: "k1", baseUrl: emu.url, ...(fetch ? { fetch } : {}), ...fields });
}

/** The emulator's failures counted against key `k1` (the error budget and the unsupported-feature one). */
function budgets() {
  const limiter = emu.rateLimiter!;
  return { failures: limiter.recentFailures("key:k1"), unsupported: limiter.recentUnsupportedFeatures("key:k1") };
}

describe("profile", () => {
  it("maps the /models record to LangChain's ModelProfile", async () => {
    const m = chat({ model: "emu-m" });
    expect(m.profile).toEqual({});
    const spec = MODELS.find((x) => x.id === "emu-m")!;
    const profile = await m.loadProfile();
    expect(profile).toEqual({
      maxInputTokens: spec.contextTokens,
      maxOutputTokens: spec.maxCompletionTokens,
      toolCalling: true,
      toolChoice: true,
      structuredOutput: true,
      reasoningOutput: false,
      imageInputs: true,
      imageUrlInputs: true,
      audioInputs: true,
      videoInputs: true,
      pdfInputs: true,
      logprobs: true,
      webSearch: true,
      responseFormat: true,
      imageToolMessage: false,
      pdfToolMessage: false,
      imageOutputs: false,
      audioOutputs: false,
      videoOutputs: false,
    });
    expect(m.profile).toEqual(profile); // synchronous from now on
    // neither response formats nor tools: structured output is still delivered (the schema in the prompt)
    expect(await chat({ model: "emu-basic" }).loadProfile()).toMatchObject({
      toolCalling: false,
      toolChoice: false,
      structuredOutput: true,
      responseFormat: false,
      imageInputs: false,
      logprobs: false,
      reasoningOutput: false,
    });
    expect(await chat({ model: "emu-legacy" }).loadProfile()).toMatchObject({
      toolCalling: true,
      structuredOutput: false,
      responseFormat: false,
    });
    expect((await chat({ model: "emu-reasoner" }).loadProfile()).reasoningOutput).toBe(true);
    // a feature suffix is not part of the id the service lists
    expect((await chat({ model: "emu-basic:enable_web_search=on" }).loadProfile()).toolCalling).toBe(false);
  });

  it("is read once per base URL for every instance, with a key or a wallet, and the client's records are the same", async () => {
    const { seen, fetch } = wire();
    const models = [
      chat({ model: "emu-s" }, fetch),
      chat({ model: "emu-basic", apiKey: "k2" }, fetch),
      new ChatService({ context, model: "emu-reasoner", baseUrl: emu.url, wallet: EvmWallet.random(), fetch }),
    ];
    const profiles = await Promise.all(models.map((m) => m.loadProfile()));
    expect(profiles.map((p) => p.toolCalling)).toEqual([true, false, true]);
    await models[0]!.loadProfile();
    expect(new ServiceClient({ context, baseUrl: emu.url, fetch }).models().get("emu-basic")?.model_spec?.pricing).toBeDefined();
    expect(seen.modelReads).toBe(1);
  });

  it("the first call of a model reads it in the background; a model the service does not list keeps {}", async () => {
    const { seen, fetch } = wire();
    const m = chat({ model: "emu-basic" }, fetch);
    expect(m.profile).toEqual({});
    await m.invoke("hello");
    await m.loadProfile(); // the background read, or its result
    expect(m.profile.toolCalling).toBe(false);
    expect(seen.modelReads).toBe(1);
    const unknown = chat({ model: "not-listed" }, fetch);
    expect(await unknown.loadProfile()).toEqual({});
  });

  it("another deployment's listing: read once in the background, then the gates hold there too", async () => {
    fx.models = [{ id: "fx-model", model_spec: { availableContextTokens: 4096, capabilities: { supportsFunctionCalling: false } } }];
    fx.script = (_req, res) => json(res, completion({ role: "assistant", content: "ok" }));
    const m = new ChatService({ context, model: "fx-model", apiKey: "k", baseUrl: fx.url, retry: false });
    for (let i = 0; i < 3; i++) await m.invoke("hi");
    await m.loadProfile();
    expect(fx.modelReads).toBe(1);
    expect(m.profile).toMatchObject({ maxInputTokens: 4096, toolCalling: false, toolChoice: false });
    const posts = fx.requests.length;
    await expect(m.bindTools([weather]).invoke("Weather in Paris?")).rejects.toBeInstanceOf(UnsupportedCapabilityError);
    expect(fx.requests.length).toBe(posts);
  });

  it("the profile option overrides field by field, and is checked", async () => {
    const m = chat({ model: "emu-s", profile: { maxInputTokens: 8000, structuredOutput: false } });
    expect(m.profile).toEqual({ maxInputTokens: 8000, structuredOutput: false });
    const loaded = await m.loadProfile();
    expect(loaded).toMatchObject({ maxInputTokens: 8000, structuredOutput: false, toolCalling: true, maxOutputTokens: 16_384 });
    expect(() => chat({ model: "emu-s", profile: { toolCalling: "yes" } as never })).toThrow(ValidationError);
    expect(() => chat({ model: "emu-s", profile: { maxInputTokens: -1 } })).toThrow(/profile\.maxInputTokens/);
  });
});

describe("capability-aware calls", () => {
  it.each([
    ["tools", "toolCalling", (m: ChatService) => m.bindTools([weather]).invoke("Weather in Paris?")],
    ["logprobs", "logprobs", (m: ChatService) => m.invoke("hi", { logprobs: true })],
    ["top_logprobs", "logprobs", (m: ChatService) => m.invoke("hi", { topLogprobs: 2 })],
    [
      "an image",
      "imageInputs",
      (m: ChatService) =>
        m.invoke([
          new HumanMessage({
            content: [
              { type: "text", text: "What is this?" },
              { type: "image_url", image_url: { url: IMAGE } },
            ],
          }),
        ]),
    ],
    [
      "audio",
      "audioInputs",
      (m: ChatService) =>
        m.invoke([
          new HumanMessage({
            content: [
              { type: "text", text: "Transcribe" },
              { type: "audio", source_type: "base64", data: "UklGRg==", mime_type: "audio/wav" } as never,
            ],
          }),
        ]),
    ],
    [
      "video",
      "videoInputs",
      (m: ChatService) =>
        m.invoke([
          new HumanMessage({
            content: [
              { type: "text", text: "Watch" },
              { type: "video_url", video_url: { url: "https://www.youtube.com/watch?v=x" } } as never,
            ],
          }),
        ]),
    ],
  ])("%s on a model without it: UnsupportedCapabilityError naming %s, before anything is sent", async (_what, capability, call) => {
    const { seen, fetch } = wire();
    const m = chat({ model: "emu-basic" }, fetch);
    await m.loadProfile();
    const before = budgets();
    const err = await call(m).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedCapabilityError);
    expect(err).toBeInstanceOf(ValidationError);
    expect(err).toMatchObject({ capability, model: "emu-basic" });
    expect((err as Error).message).toContain(capability);
    expect(seen.bodies).toHaveLength(0);
    expect(budgets()).toEqual(before);
  });

  it("a JSON response_format: refused on a model with tools but no response formats; on a model with neither, asked for in the prompt", async () => {
    const { seen, fetch } = wire();
    const legacy = chat({ model: "emu-legacy" }, fetch);
    await legacy.loadProfile();
    const err = await legacy.invoke("hi", { response_format: { type: "json_object" } }).catch((e: unknown) => e);
    expect(err).toMatchObject({ capability: "structuredOutput", model: "emu-legacy" });
    expect(seen.bodies).toHaveLength(0);
    const basic = chat({ model: "emu-basic" }, fetch);
    await basic.loadProfile();
    const before = budgets();
    await basic.invoke("Give me Anna as JSON", {
      response_format: {
        type: "json_schema",
        json_schema: { name: "p", schema: { type: "object", properties: { age: { type: "number" } } } },
      },
    });
    const body = seen.bodies.at(-1);
    expect(body).not.toHaveProperty("response_format");
    expect(body.messages[0]).toMatchObject({ role: "system", content: expect.stringContaining('"age"') });
    expect(budgets()).toEqual(before); // nothing the service refused
  });

  it("without a loaded profile the request goes out, and the service's 400 counts in its unsupported-feature budget", async () => {
    const m = chat({ model: "emu-basic" });
    const before = budgets();
    const err = await m
      .bindTools([weather])
      .invoke("Weather in Paris?")
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err).not.toBeInstanceOf(UnsupportedCapabilityError);
    expect(budgets().unsupported).toBe(before.unsupported + 1);
  });

  it("a profile option is enough to refuse (no read), and toolChoice alone is checked", async () => {
    const { seen, fetch } = wire();
    const m = chat({ model: "emu-s", profile: { toolChoice: false } }, fetch);
    const err = await m
      .bindTools([weather], { tool_choice: "get_weather" })
      .invoke("Weather in Paris?")
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ name: "UnsupportedCapabilityError", capability: "toolChoice", field: "tool_choice" });
    expect(seen.bodies).toHaveLength(0);
    // what the model has goes through
    expect((await m.bindTools([weather]).invoke("Weather in Paris?")).tool_calls?.[0]?.name).toBe("get_weather");
  });
});

/** Records the structured-output method each model call reports to tracing. */
class Methods extends BaseCallbackHandler {
  name = "methods";
  methods: unknown[] = [];
  override handleChatModelStart(_llm: unknown, _messages: unknown, _runId: string, _parent?: string, extra?: Record<string, any>) {
    this.methods.push(extra?.options?.ls_structured_output_format?.kwargs?.method);
  }
}

describe("structured output picks what the model can do", () => {
  it.each([
    ["emu-s", "jsonSchema"],
    ["emu-legacy", "functionCalling"],
    ["emu-basic", "jsonMode"],
  ])("%s: %s, said in ls_structured_output_format, before or after the profile is read", async (model, method) => {
    for (const loadFirst of [false, true]) {
      context = createServiceContext();
      const { seen, fetch } = wire();
      const m = chat({ model }, fetch);
      if (loadFirst) await m.loadProfile();
      const tracer = new Methods();
      const out = await m.withStructuredOutput(Person).invoke("Anna is 31 years old.", { callbacks: [tracer] });
      expect(out).toEqual({ name: "Anna", age: 31 });
      expect(tracer.methods).toEqual([method]);
      const body = seen.bodies.at(-1);
      if (method === "jsonSchema") expect(body.response_format.type).toBe("json_schema");
      if (method === "functionCalling") expect(body.tools[0].function.name).toBe("extract");
      if (method === "jsonMode") {
        // no response format for this model: the schema rides in the system prompt
        expect(body).not.toHaveProperty("response_format");
        expect(body.messages[0].role).toBe("system");
        expect(body.messages[0].content).toContain('"age"');
      }
      expect(seen.modelReads).toBe(1);
    }
  });

  it("an explicit method the model lacks is refused before sending once the profile is known", async () => {
    const m = chat({ model: "emu-legacy" });
    await m.loadProfile();
    await expect(m.withStructuredOutput(Person, { method: "jsonSchema" }).invoke("Anna is 31.")).rejects.toMatchObject({
      capability: "structuredOutput",
    });
    expect(await m.withStructuredOutput(Person, { method: "jsonMode", includeRaw: true }).invoke("Anna is 31 years old.")).toMatchObject({
      parsed: { name: "Anna", age: 31 },
    });
  });
});

describe("createAgent with a responseFormat", () => {
  it.each([
    ["emu-s", "response schemas: the provider strategy (json_schema)", "json_schema"],
    ["emu-legacy", "no response schemas: the tool strategy", "tools"],
  ])("%s (%s)", async (model, _what, expected) => {
    const { seen, fetch } = wire();
    const m = chat({ model }, fetch);
    await m.loadProfile();
    const agent = createAgent({ model: m, tools: [weather], responseFormat: Person });
    const out = await agent.invoke({ messages: [new HumanMessage("Anna is 31 years old.")] });
    expect(out.structuredResponse).toEqual({ name: "Anna", age: 31 });
    const first = seen.bodies[0];
    if (expected === "json_schema") expect(first.response_format.type).toBe("json_schema");
    else {
      expect(first).not.toHaveProperty("response_format");
      expect(first.tools.map((t: any) => t.function.name)).toContain("get_weather");
      expect(first.tools.length).toBe(2);
    }
  });

  it("a model with neither tools nor response formats: the provider strategy, its schema carried in the prompt", async () => {
    const { seen, fetch } = wire();
    const m = chat({ model: "emu-basic" }, fetch);
    await m.loadProfile();
    const agent = createAgent({ model: m, tools: [], responseFormat: Person });
    const out = await agent.invoke({ messages: [new HumanMessage("Anna is 31 years old.")] });
    expect(out.structuredResponse).toEqual({ name: "Anna", age: 31 });
    const first = seen.bodies[0];
    expect(first).not.toHaveProperty("response_format");
    expect(first).not.toHaveProperty("tools");
    expect(first.messages[0]).toMatchObject({ role: "system", content: expect.stringContaining('"age"') });
  });
});
