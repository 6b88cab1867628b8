import { inspect } from "node:util";
/**
 * The unit checks of LangChain's standard chat-model tests (init variants, bindTools, withStructuredOutput
 * with and without raw, getLsParams keys, abort signals, serialization), plus request building.
 */
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { z as z3 } from "zod/v3";
import { StructuredTool, tool } from "@langchain/core/tools";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { RunnableBinding } from "@langchain/core/runnables";
import { ChatService } from "../../src/chat/index.js";
import { toWireMessages } from "../../src/chat/convert.js";
import { AbortError, ConfigurationError, ValidationError } from "../../src/http/errors.js";

const BASE = "http://127.0.0.1:9/api/v1"; // discard port: nothing must be sent in these tests

function model(fields: Partial<ConstructorParameters<typeof ChatService>[0]> = {}) {
  return new ChatService({ model: "emu-s", apiKey: "sk-secret-123", baseUrl: BASE, ...fields });
}

const weather = tool(async ({ city }) => `sunny in ${city}`, {
  name: "get_weather",
  description: "Weather of a city",
  schema: z.object({ city: z.string() }),
});

describe("init", () => {
  it("constructs plain, with a key, with streaming", () => {
    expect(model()).toBeInstanceOf(ChatService);
    expect(model({ streaming: true }).streaming).toBe(true);
    expect(model({ streamUsage: false }).streamUsage).toBe(false);
    expect(model()._llmType()).toBe("service");
    expect(model({ brand: "acme" })._llmType()).toBe("acme");
  });
  it("reads SERVICE_API_KEY / SERVICE_BASE_URL from the environment", () => {
    vi.stubEnv("SERVICE_BASE_URL", BASE);
    vi.stubEnv("SERVICE_API_KEY", "sk-env");
    try {
      const m = new ChatService({ model: "emu-s" });
      expect(m.serviceFetch.baseUrl).toBe(BASE);
      expect(m.serviceFetch.hasCredentials).toBe(true);
    } finally {
      vi.unstubAllEnvs();
    }
  });
  it("rejects bad options before any request", () => {
    expect(() => model({ temperature: 3 })).toThrow(ValidationError);
    expect(() => model({ topP: -1 })).toThrow(/topP/);
    expect(() => model({ stop: ["a", "b", "c", "d", "e"] })).toThrow(ValidationError);
    expect(() => model({ reasoningEffort: "huge" as never })).toThrow(/reasoningEffort/);
    expect(() => model({ serviceParameters: { enableWebSearch: "yes" as never } })).toThrow(/enableWebSearch/);
    expect(() => model({ model: "emu-s:enable_e2ee=false" })).toThrow(/not accepted/);
    expect(() => model({ baseUrl: "ftp://x" })).toThrow(ConfigurationError);
    expect(() => new ChatService({} as never)).toThrow(/model/);
  });
});

describe("LangChain conventions", () => {
  it("getLsParams returns exactly the standard keys, provider = brand", () => {
    const params = model({ temperature: 0.2, maxTokens: 50 }).getLsParams({ stop: ["x"] } as never);
    expect(Object.keys(params).sort()).toEqual(
      ["ls_provider", "ls_model_name", "ls_model_type", "ls_temperature", "ls_max_tokens", "ls_stop"].sort(),
    );
    expect(params).toEqual({
      ls_provider: "service",
      ls_model_name: "emu-s",
      ls_model_type: "chat",
      ls_temperature: 0.2,
      ls_max_tokens: 50,
      ls_stop: ["x"],
    });
  });
  it("serializes without the API key (lc_secrets) and without functions", () => {
    const m = model({ fetch: globalThis.fetch });
    const json = JSON.stringify(m.toJSON());
    expect(json).not.toContain("sk-secret-123");
    expect(json).toContain("SERVICE_API_KEY");
    expect(json).toContain('"emu-s"');
    expect(JSON.stringify(m)).not.toContain("sk-secret-123");
    expect(String(m.invocationParams())).not.toContain("sk-secret");
    expect(m.lc_secrets).toEqual({ apiKey: "SERVICE_API_KEY" });
    // console.log(model) neither (util.inspect would otherwise print the constructor's kwargs)
    expect(inspect(m, { depth: 10, showHidden: true })).not.toContain("sk-secret-123");
  });
  it("bindTools converts LangChain tools, zod schemas and OpenAI tools", () => {
    const bound = model().bindTools([weather, { type: "function", function: { name: "f", parameters: {} } }], {
      tool_choice: "get_weather",
    }) as RunnableBinding<any, any, any>;
    expect(bound).toBeInstanceOf(RunnableBinding);
    const tools = (bound.config as any).tools ?? (bound as any).kwargs.tools;
    expect(tools[0].function.name).toBe("get_weather");
    expect(tools[0].function.parameters.properties.city.type).toBe("string");
    expect(tools[1].function.name).toBe("f");
    const params = model().invocationParams({ tools, tool_choice: "get_weather" } as never);
    expect(params.tool_choice).toEqual({ type: "function", function: { name: "get_weather" } });
    expect(model().invocationParams({ tools, tool_choice: "any" } as never).tool_choice).toBe("required");
  });
  it("withStructuredOutput builds runnables with and without raw, for each method", () => {
    const schema = z.object({ name: z.string(), age: z.number() });
    for (const method of ["jsonSchema", "functionCalling", "jsonMode"] as const) {
      expect(model().withStructuredOutput(schema, { method })).toBeDefined();
      expect(model().withStructuredOutput(schema, { method, includeRaw: true })).toBeDefined();
    }
    expect(() => model().withStructuredOutput(schema, { method: "telepathy" })).toThrow(ValidationError);
  });
  it("an aborted signal makes invoke throw and stream stop, before any request", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(model().invoke("hi", { signal: controller.signal })).rejects.toThrow();
    const stream = model().stream("hi", { signal: controller.signal });
    await expect(
      (async () => {
        for await (const _ of await stream);
      })(),
    ).rejects.toThrow();
  });
});

describe("request building", () => {
  it("sends every sampling option under its wire name", () => {
    const m = model({
      temperature: 0.5,
      topP: 0.9,
      maxTokens: 100,
      maxCompletionTokens: 120,
      stop: ["END"],
      seed: 7,
      frequencyPenalty: 0.1,
      presencePenalty: 0.2,
      repetitionPenalty: 1.1,
      topK: 40,
      minP: 0.05,
      reasoningEffort: "low",
      responseFormat: { type: "json_object" },
      logprobs: true,
      topLogprobs: 2,
      n: 2,
      parallelToolCalls: false,
      promptCacheKey: "conv-1",
      modelKwargs: { max_temp: 1.5, user: "u1" },
    });
    expect(m.invocationParams({ tools: [weather] } as never)).toMatchObject({
      model: "emu-s",
      temperature: 0.5,
      top_p: 0.9,
      max_tokens: 100,
      max_completion_tokens: 120,
      stop: ["END"],
      seed: 7,
      frequency_penalty: 0.1,
      presence_penalty: 0.2,
      repetition_penalty: 1.1,
      top_k: 40,
      min_p: 0.05,
      reasoning_effort: "low",
      response_format: { type: "json_object" },
      logprobs: true,
      top_logprobs: 2,
      n: 2,
      parallel_tool_calls: false,
      prompt_cache_key: "conv-1",
      max_temp: 1.5,
      user: "u1",
    });
  });
  it("call options override serviceParameters (merged) and promptCacheKey; extraBody passes through", () => {
    const m = model({ serviceParameters: { enableWebSearch: "on", enableWebCitations: true }, promptCacheKey: "a" });
    const p = m.invocationParams({
      serviceParameters: { enableWebSearch: "off", disableThinking: true },
      promptCacheKey: "b",
      extraBody: { custom_field: { x: 1 } },
    } as never);
    expect(p.service_parameters).toEqual({ enable_web_search: "off", enable_web_citations: true, disable_thinking: true });
    expect(p.prompt_cache_key).toBe("b");
    expect(p.custom_field).toEqual({ x: 1 });
    expect(() => m.invocationParams({ serviceParameters: { enableWebSearch: 1 } } as never)).toThrow(ValidationError);
    expect(model({ brand: "acme", serviceParameters: { enableWebSearch: "on" } }).invocationParams()).toHaveProperty("acme_parameters", {
      enable_web_search: "on",
    });
  });
  it("sends reasoning_content and reasoning_details back on assistant messages, unchanged", () => {
    const details = [
      { type: "reasoning.text", text: "think", format: "emu-v1", index: 0 },
      { type: "reasoning.encrypted", data: "c2ln", format: "emu-v1", index: 1, id: "rs_1" },
    ];
    const ai = new AIMessage({
      content: "",
      tool_calls: [{ id: "call_1", name: "get_weather", args: { city: "Paris" } }],
      additional_kwargs: { reasoning_content: "think", reasoning_details: details },
    });
    const wire = toWireMessages([
      new SystemMessage("sys"),
      new HumanMessage({ content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral", ttl: "1h" } }] }),
      ai,
      new ToolMessage({ content: "sunny", tool_call_id: "call_1" }),
    ]);
    expect(wire[1]).toEqual({ role: "user", content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral", ttl: "1h" } }] });
    expect(wire[2]).toMatchObject({ role: "assistant", reasoning_content: "think", reasoning_details: details });
    expect(JSON.stringify((wire[2] as any).reasoning_details)).toBe(JSON.stringify(details));
    expect((wire[2] as any).tool_calls[0].function).toEqual({ name: "get_weather", arguments: '{"city":"Paris"}' });
    expect(wire[3]).toMatchObject({ role: "tool", tool_call_id: "call_1", content: "sunny" });
  });
  it("takes reasoning back from v1 content blocks (streamEvents output)", () => {
    const details = [{ type: "reasoning.encrypted", data: "x", index: 1 }];
    const ai = new AIMessage({
      content: [
        { type: "reasoning", reasoning: "hmm", reasoning_details: details },
        { type: "text", text: "ok" },
      ] as never,
      response_metadata: { output_version: "v1" },
    });
    const [wire] = toWireMessages([ai]);
    expect(wire).toMatchObject({ role: "assistant", reasoning_content: "hmm", reasoning_details: details });
    expect(JSON.stringify(wire!.content)).not.toContain("hmm");
  });
  it("passes image, audio, video and file parts through", () => {
    const parts = [
      { type: "text", text: "look" },
      { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
      { type: "input_audio", input_audio: { data: "AAAA", format: "wav" } },
      { type: "video_url", video_url: { url: "https://v.example/v.mp4" } },
      { type: "file", file: { file_data: "data:application/pdf;base64,AAAA", filename: "a.pdf" } },
    ];
    const [wire] = toWireMessages([new HumanMessage({ content: parts as never })]);
    expect(wire!.content).toEqual(parts);
  });
  it("sends a URL file block as a file part with the URL in file_data (the service fetches public URLs)", () => {
    const url = "https://www.w3.org/WAI/ER/tests/xhtml/testfiles/resources/pdf/dummy.pdf";
    const v0 = { type: "file", source_type: "url", url, mime_type: "application/pdf", metadata: { filename: "dummy.pdf" } };
    const v1 = { type: "file", url, mimeType: "application/pdf" };
    const [wire] = toWireMessages([new HumanMessage({ content: [{ type: "text", text: "read" }, v0, v1] as never })]);
    expect(wire!.content).toEqual([
      { type: "text", text: "read" },
      { type: "file", file: { file_data: url, filename: "dummy.pdf" } },
      { type: "file", file: { file_data: url } },
    ]);
  });
  it("invalid per-call parameters fail before the network", async () => {
    const fetchSpy = vi.fn(globalThis.fetch);
    const m = model({ fetch: fetchSpy });
    await expect(m.invoke("hi", { serviceParameters: { enableWebSearch: "always" as never } })).rejects.toBeInstanceOf(ValidationError);
    await expect(m.invoke("hi", { promptCacheKey: "" })).rejects.toBeInstanceOf(ValidationError);
    expect(fetchSpy).not.toHaveBeenCalled();
  });
  it("abort during the request gives an AbortError", async () => {
    const m = model({
      fetch: (_u, init) => new Promise((_r, reject) => init?.signal?.addEventListener("abort", () => reject(init.signal!.reason))),
    });
    const controller = new AbortController();
    const p = m.invoke("hi", { signal: controller.signal });
    setTimeout(() => controller.abort(), 10);
    await expect(p).rejects.toBeInstanceOf(AbortError);
  });
});

// ---------------------------------------------------------------------------------------------------------
// LangChain's standard chat-model unit tests (`ChatModelUnitTests`, `internal/standard-tests` in the
// langchainjs monorepo; private, not on npm), one `it` per test, named after it, with the suite's
// constructor arguments. All eight apply.
// ---------------------------------------------------------------------------------------------------------

/** The suite's `standardChatModelParams`, then the model's own arguments. */
const standardArgs = (fields: Record<string, unknown> = {}) =>
  ({ temperature: 0, maxTokens: 100, timeout: 60, stopSequences: [], maxRetries: 2, model: "emu-s", baseUrl: BASE, ...fields }) as never;

const person = z3
  .object({
    name: z3.string().describe("Name of the person"),
    age: z3.number().int().positive().describe("Age of the person"),
  })
  .describe("A person");

class PersonTool extends StructuredTool {
  name = "PersonTool";
  description = "A person";
  schema = person;
  async _call(input: z3.infer<typeof person>) {
    return JSON.stringify(input);
  }
}

describe("LangChain standard unit tests (ChatModelUnitTests)", () => {
  it("testChatModelInit: should initialize chat model successfully", () => {
    const m = new ChatService(standardArgs({ apiKey: "k" }));
    expect(m).toBeInstanceOf(ChatService);
    expect(m.temperature).toBe(0);
    expect(m.maxTokens).toBe(100);
  });
  it("testChatModelInitApiKey: should initialize chat model with API key", () => {
    vi.stubEnv("SERVICE_API_KEY", ""); // the key must come from the argument
    try {
      const m = new ChatService(standardArgs({ apiKey: "test" }));
      expect(m.serviceFetch.hasCredentials).toBe(true);
      expect(new ChatService(standardArgs()).serviceFetch.hasCredentials).toBe(false);
    } finally {
      vi.unstubAllEnvs();
    }
  });
  it("testChatModelInitStreaming: should initialize chat model with streaming enabled", () => {
    expect(new ChatService(standardArgs({ apiKey: "k", streaming: true })).streaming).toBe(true);
  });
  it("testChatModelWithBindTools: should bind tools when tool calling is supported", () => {
    const bound = new ChatService(standardArgs({ apiKey: "k" })).bindTools([new PersonTool()]);
    expect(bound).toBeInstanceOf(RunnableBinding);
    const tools = (bound.config as any).tools;
    expect(tools[0].function.name).toBe("PersonTool");
    expect(tools[0].function.parameters.required.sort()).toEqual(["age", "name"]);
  });
  it("testChatModelWithStructuredOutput: should work with structured output when supported", () => {
    expect(new ChatService(standardArgs({ apiKey: "k" })).withStructuredOutput(person)).toBeDefined();
  });
  it("testStandardParams: should return standard LangSmith parameters", () => {
    const params = new ChatService(standardArgs({ apiKey: "k" })).getLsParams({} as never);
    expect(Object.keys(params).sort()).toEqual(
      ["ls_provider", "ls_model_name", "ls_model_type", "ls_temperature", "ls_max_tokens", "ls_stop"].sort(),
    );
    expect(params).toMatchObject({
      ls_provider: "service",
      ls_model_name: "emu-s",
      ls_model_type: "chat",
      ls_temperature: 0,
      ls_max_tokens: 100,
    });
  });
  it("testInvokeThrowsWithAbortedSignal: invoke should throw when signal is already aborted", async () => {
    const fetchSpy = vi.fn(globalThis.fetch);
    const m = new ChatService(standardArgs({ apiKey: "k", fetch: fetchSpy }));
    await expect(m.invoke([new HumanMessage("hello")], { signal: AbortSignal.abort() })).rejects.toThrow();
    expect(fetchSpy).not.toHaveBeenCalled();
  });
  it("testStreamReturnsEarlyWithAbortedSignal: stream should handle aborted signal correctly", async () => {
    // the suite accepts a throw or no chunks; ChatService throws, before any request
    const fetchSpy = vi.fn(globalThis.fetch);
    const m = new ChatService(standardArgs({ apiKey: "k", fetch: fetchSpy }));
    const chunks: unknown[] = [];
    const drain = async () => {
      for await (const c of await m.stream([new HumanMessage("hello")], { signal: AbortSignal.abort() })) chunks.push(c);
    };
    await expect(drain()).rejects.toThrow();
    expect(chunks).toHaveLength(0);
    expect(fetchSpy).not.toHaveBeenCalled();
  });
});
