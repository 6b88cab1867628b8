/**
 * The integration checks of LangChain's standard chat-model tests, against the emulator over loopback:
 * invoke, stream, batch, streamEvents, usage metadata (both modes), tool calling and tool-message histories
 * (string and list content), tool choice, parallel tool calls, structured output (zod, JSON schema, with raw),
 * few-shot tool examples, content blocks, caching, abort; plus the service's own features end to end.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { z as z3 } from "zod/v3";
import { StructuredTool, tool, type StructuredToolParams } from "@langchain/core/tools";
import {
  AIMessage,
  AIMessageChunk,
  HumanMessage,
  SystemMessage,
  ToolMessage,
  getBufferString,
  type BaseMessage,
} from "@langchain/core/messages";
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { ChatPromptTemplate } from "@langchain/core/prompts";
import { RunnableLambda } from "@langchain/core/runnables";
import { concat } from "@langchain/core/utils/stream";
import { toJsonSchema } from "@langchain/core/utils/json_schema";
import { ChatService, mapCitations, buildModelId } from "../../src/chat/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { AbortError, NotFoundError, ProOnlyModelError, StreamError } from "../../src/http/errors.js";

/** response_metadata is `Record<string, unknown>`; tests read it freely */
const md = (m: { response_metadata: unknown }): any => m.response_metadata;

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: ["k1"] });
});
afterAll(() => emu?.close());

function chat(fields: Partial<ConstructorParameters<typeof ChatService>[0]> = {}) {
  return new ChatService({ model: "emu-xs", apiKey: "k1", baseUrl: emu.url, ...fields });
}

const magic = tool(async ({ input }) => String(input + 2), {
  name: "magic_function",
  description: "Applies a magic function to an input.",
  schema: z.object({ input: z.number().int() }),
});
const weather = tool(async ({ city }) => `It is sunny in ${city}.`, {
  name: "get_weather",
  description: "Current weather in a city",
  schema: z.object({ city: z.string() }),
});

async function merged(stream: AsyncIterable<AIMessageChunk>) {
  let acc: AIMessageChunk | undefined;
  let count = 0;
  for await (const c of stream) {
    count++;
    acc = acc ? acc.concat(c) : c;
  }
  return { message: acc!, count };
}

describe("basic calls", () => {
  it("invoke returns an AIMessage with text, id and usage", async () => {
    const msg = await chat().invoke("Hello there");
    expect(msg).toBeInstanceOf(AIMessage);
    expect(msg.content).toBe("Echo: Hello there");
    expect(msg.id).toMatch(/^chatcmpl-/);
    expect(msg.usage_metadata!.input_tokens).toBeGreaterThan(0);
    expect(msg.usage_metadata!.total_tokens).toBe(msg.usage_metadata!.input_tokens + msg.usage_metadata!.output_tokens);
    expect(md(msg).model_name).toBe("emu-xs");
    expect(md(msg).finish_reason).toBe("stop");
  });

  it("stream yields several chunks that merge to the same message as invoke, usage and cost not doubled", async () => {
    const m = chat();
    const prompt = "[[emu:tokens=30]] go";
    const json = await m.invoke(prompt);
    const { message, count } = await merged(await m.stream(prompt));
    expect(count).toBeGreaterThan(3);
    expect(message.content).toBe(json.content);
    expect(message.usage_metadata).toMatchObject({
      input_tokens: json.usage_metadata!.input_tokens,
      output_tokens: 30,
      total_tokens: json.usage_metadata!.total_tokens,
    });
    expect(md(message).cost).toEqual(md(json).cost);
    expect(md(message).finish_reason).toBe("stop");
    expect(md(message).model_name).toBe("emu-xs");
  });

  it("callbacks see the run (tokens, end with usage); results match the handler-free fast path", async () => {
    const m = chat();
    const seen = { start: 0, tokens: 0, end: 0, usage: 0 };
    const handler = {
      handleChatModelStart: () => void seen.start++,
      handleLLMNewToken: () => void seen.tokens++,
      handleLLMEnd: (out: any) => {
        seen.end++;
        seen.usage = out.generations[0][0].message.usage_metadata?.total_tokens ?? 0;
      },
    };
    const traced = await m.invoke("same", { callbacks: [handler] });
    const fast = await m.invoke("same");
    expect(traced.content).toBe(fast.content);
    expect(Object.keys(md(traced)).sort()).toEqual(Object.keys(md(fast)).sort());
    expect(md(traced).tokenUsage).toEqual(md(fast).tokenUsage);
    expect(seen.start).toBe(1);
    expect(seen.end).toBe(1);
    const viaHandler = await merged(await m.stream("[[emu:tokens=12]]", { callbacks: [handler] }));
    const plain = await merged(await m.stream("[[emu:tokens=12]]"));
    expect(viaHandler.message.content).toBe(plain.message.content);
    expect(viaHandler.message.usage_metadata).toEqual(plain.message.usage_metadata);
    expect(seen.tokens).toBeGreaterThan(3);
    expect(seen.end).toBe(2);
    expect(seen.usage).toBe(plain.message.usage_metadata!.total_tokens);
  });

  it("streamUsage false leaves usage off the stream", async () => {
    const { message } = await merged(await chat({ streamUsage: false }).stream("hi"));
    expect(message.usage_metadata).toBeUndefined();
  });

  it("batch", async () => {
    const out = await chat().batch(["one", "two"]);
    expect(out.map((m) => m.content)).toEqual(["Echo: one", "Echo: two"]);
  });

  it("streamEvents (content-block protocol) gives text, usage and the final message", async () => {
    const stream = chat().streamEvents("hello events");
    let text = "";
    for await (const t of stream.text) text += t;
    const msg = await stream;
    expect(text).toBe("Echo: hello events");
    expect(msg.text).toBe("Echo: hello events");
    expect(msg.usage_metadata!.output_tokens).toBeGreaterThan(0);
    expect(md(msg).cost).toBeDefined();
    expect(md(msg).headers.model.id).toBe("emu-xs");
  });

  it("legacy streamEvents v2 emits on_chat_model_stream", async () => {
    let n = 0;
    for await (const e of chat().streamEvents("hi", { version: "v2" })) if (e.event === "on_chat_model_stream") n++;
    expect(n).toBeGreaterThan(0);
  });

  it("an aborted stream stops with an AbortError", async () => {
    const controller = new AbortController();
    const chunks: string[] = [];
    const err = await (async () => {
      for await (const c of await chat().stream("[[emu:tokens=2000]]", { signal: controller.signal })) {
        chunks.push(String(c.content));
        if (chunks.length === 3) controller.abort();
      }
    })().catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(chunks.length).toBeLessThan(50);
  });

  it("an in-band stream error is raised", async () => {
    await expect(merged(await chat().stream("boom [[emu:error]]"))).rejects.toBeInstanceOf(StreamError);
  });

  it("typed errors: Pro-only model, unknown model", async () => {
    await expect(chat({ model: "emu-pro" }).invoke("hi")).rejects.toBeInstanceOf(ProOnlyModelError);
    // the live service answers an unknown model 404 (the seed: 400)
    await expect(chat({ model: "emu-nope" }).invoke("hi")).rejects.toBeInstanceOf(NotFoundError);
  });

  it("content blocks: standard contentBlocks and multimodal parts reach the service", async () => {
    const msg = await chat({ model: "emu-m" }).invoke([
      new HumanMessage({
        content: [
          { type: "text", text: "describe", cache_control: { type: "ephemeral", ttl: "1h" } },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
        ],
      }),
    ]);
    expect(msg.content).toContain("describe");
    expect(msg.contentBlocks.find((b) => b.type === "text")).toBeDefined();
    const plain = await chat({ model: "emu-m" }).invoke("just text");
    const withImage = await chat({ model: "emu-m" }).invoke([
      new HumanMessage({
        content: [
          { type: "text", text: "just text" },
          { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
        ],
      }),
    ]);
    expect(withImage.usage_metadata!.input_tokens).toBeGreaterThan(plain.usage_metadata!.input_tokens);
  });

  it("prompt caching: a repeated prompt_cache_key reports cache_read", async () => {
    const m = chat({ promptCacheKey: `conv-${Date.now()}` });
    const system = new SystemMessage("You are a very careful assistant. ".repeat(40));
    await m.invoke([system, new HumanMessage("first")]);
    const second = await m.invoke([system, new HumanMessage("first")]);
    expect(second.usage_metadata!.input_token_details?.cache_read ?? 0).toBeGreaterThan(0);
  });

  it("n > 1 returns every choice", async () => {
    const result = await chat({ n: 2 }).generate([["pick"]]);
    expect(result.generations[0]).toHaveLength(2);
    expect(result.generations[0]!.map((g) => g.text)).toEqual(["Echo: pick (choice 1)", "Echo: pick (choice 2)"]);
  });
});

describe("tools", () => {
  it("tool calling with bindTools, and a tool-message history with string and list content", async () => {
    const m = chat().bindTools([magic]);
    const first = await m.invoke("What is the value of magic_function(3)? Use the tool.");
    expect(first.tool_calls).toHaveLength(1);
    expect(first.tool_calls![0]).toMatchObject({ name: "magic_function", args: { input: 3 } });
    const toolMsg = await magic.invoke(first.tool_calls![0]!);
    for (const content of [toolMsg.content, [{ type: "text", text: String(toolMsg.content) }]]) {
      const answer = await m.invoke([
        new HumanMessage("What is the value of magic_function(3)? Use the tool."),
        first,
        new ToolMessage({ content: content as never, tool_call_id: first.tool_calls![0]!.id! }),
      ]);
      expect(answer.tool_calls).toEqual([]);
      expect(answer.content).toContain("5");
    }
  });

  it("tool calls stream as chunks that merge into the same tool call", async () => {
    const m = chat().bindTools([magic]);
    const { message } = await merged(await m.stream("magic_function(3) please"));
    expect(message.tool_calls![0]).toMatchObject({ name: "magic_function", args: { input: 3 } });
    expect(md(message).finish_reason).toBe("tool_calls");
  });

  it("tool_choice forces a tool; 'any' requires one", async () => {
    const forced = await chat().bindTools([magic, weather], { tool_choice: "get_weather" }).invoke("Tell me about Paris");
    expect(forced.tool_calls![0]!.name).toBe("get_weather");
    const any = await chat().bindTools([weather], { tool_choice: "any" }).invoke("hello");
    expect(any.tool_calls).toHaveLength(1);
  });

  it("parallel tool calls", async () => {
    const prompt = "Use magic_function on 3 and get_weather for Paris";
    const msg = await chat().bindTools([magic, weather]).invoke(prompt);
    expect(msg.tool_calls!.map((c) => c.name).sort()).toEqual(["get_weather", "magic_function"]);
    expect(new Set(msg.tool_calls!.map((c) => c.id)).size).toBe(2);
    const { message } = await merged(await chat().bindTools([magic, weather]).stream(prompt));
    expect(message.tool_calls!.map((c) => c.name).sort()).toEqual(["get_weather", "magic_function"]);
    const single = await chat().bindTools([magic, weather], { parallel_tool_calls: false }).invoke(prompt);
    expect(single.tool_calls).toHaveLength(1);
  });

  it("few-shot tool examples in history are accepted", async () => {
    const m = chat().bindTools([magic]);
    const msg = await m.invoke([
      new HumanMessage("magic_function(1)?"),
      new AIMessage({ content: "", tool_calls: [{ id: "ex1", name: "magic_function", args: { input: 1 } }] }),
      new ToolMessage({ content: "3", tool_call_id: "ex1" }),
      new AIMessage("magic_function(1) is 3"),
      new HumanMessage("And what is magic_function(7)?"),
    ]);
    expect(msg.tool_calls![0]).toMatchObject({ name: "magic_function", args: { input: 7 } });
  });
});

describe("structured output", () => {
  const Person = z.object({ name: z.string().describe("the person's name"), age: z.number().describe("age in years") });

  it("json_schema (default) with zod, with and without raw", async () => {
    const out = await chat().withStructuredOutput(Person, { name: "person" }).invoke("Alice is 30 years old. name: Alice, age: 30");
    expect(Person.parse(out)).toBeTruthy();
    const raw = await chat().withStructuredOutput(Person, { includeRaw: true }).invoke("name: Bob, age: 41");
    expect(raw.raw).toBeInstanceOf(AIMessage);
    expect(Person.parse(raw.parsed)).toBeTruthy();
  });

  it("function calling and plain JSON schema", async () => {
    const out = await chat().withStructuredOutput(Person, { method: "functionCalling" }).invoke("name: Carol, age: 52");
    expect(Person.parse(out)).toBeTruthy();
    const jsonSchema = {
      title: "city",
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
    };
    const out2 = await chat().withStructuredOutput(jsonSchema).invoke("city: Paris");
    expect(typeof out2.city).toBe("string");
  });
});

describe("service features end to end", () => {
  it("web search with citations and documents, on invoke and stream", async () => {
    const m = chat({
      model: buildModelId("emu-s", { enableWebSearch: "on" }),
      // the live service streams search results only when asked
      serviceParameters: { enableWebCitations: true, returnSearchResultsAsDocuments: true, includeSearchResultsInStream: true },
    });
    const q = "What is the chain id of Base layer 2?";
    const msg = await m.invoke(q);
    const citations = md(msg).web_search_citations;
    expect(citations.length).toBeGreaterThan(0);
    expect(md(msg).service_parameters.enable_web_search).toBe("on");
    expect(md(msg).service_parameters).toHaveProperty("enable_e2ee");
    expect(md(msg).web_search_documents.length).toBe(citations.length);
    expect(msg.tool_calls).toEqual([]);
    const mapped = mapCitations(String(msg.content), citations);
    expect(mapped.references.length).toBeGreaterThan(0);
    expect(mapped.unresolved).toEqual([]);

    const { message } = await merged(await m.stream(q));
    expect(message.content).toBe(msg.content);
    expect(md(message).web_search_citations).toEqual(citations);
    expect(md(message).web_search_documents.length).toBe(citations.length);
  });

  it("include_search_results_in_stream: search results once, after the content (live) or first (seed)", async () => {
    const seed = await startEmulator({ apiKeys: ["k1"], mode: "seed" });
    try {
      for (const [url, live] of [
        [emu.url, true],
        [seed.url, false],
      ] as const) {
        const m = chat({ model: "emu-s", baseUrl: url, serviceParameters: { enableWebSearch: "on", includeSearchResultsInStream: true } });
        const chunks: AIMessageChunk[] = [];
        for await (const c of await m.stream("Tell me about USDC decimals")) chunks.push(c);
        const at = chunks.findIndex((c) => md(c).web_search_citations);
        expect(md(chunks[at]!).web_search_citations.length).toBeGreaterThan(0);
        expect(chunks.filter((c) => md(c).web_search_citations).length).toBe(1);
        const lastText = chunks.findLastIndex((c) => c.text);
        if (live) expect(at).toBeGreaterThan(lastText);
        else expect(at).toBe(0);
      }
    } finally {
      await seed.close();
    }
  });

  it("legacy think tags are split, and strip_thinking_response is honored", async () => {
    const split = await chat({ model: "emu-thinker" }).invoke("why");
    expect(split.content).toBe("Echo: why");
    expect(split.additional_kwargs.reasoning_content).toBeTruthy();
    const raw = await chat({ model: "emu-thinker", splitThinkTags: false }).invoke("why");
    expect(String(raw.content)).toContain("<think>");
    const stripped = await chat({ model: "emu-thinker", splitThinkTags: false, serviceParameters: { stripThinkingResponse: true } }).invoke(
      "why",
    );
    expect(String(stripped.content)).not.toContain("<think>");
    const { message } = await merged(await chat({ model: "emu-thinker" }).stream("why"));
    expect(message.content).toBe(split.content);
    expect(message.additional_kwargs.reasoning_content).toBe(split.additional_kwargs.reasoning_content);
  });

  it("reasoning model: reasoning_content, reasoning_details, reasoning tokens; disable_thinking", async () => {
    const msg = await chat({ model: "emu-reasoner" }).invoke("think about it");
    expect(msg.additional_kwargs.reasoning_content).toBe("Thinking about: think about it");
    expect((msg.additional_kwargs.reasoning_details as unknown[]).length).toBe(2);
    expect(msg.usage_metadata!.output_token_details!.reasoning).toBeGreaterThan(0);
    const { message } = await merged(await chat({ model: "emu-reasoner" }).stream("think about it"));
    expect(message.additional_kwargs.reasoning_details).toEqual(msg.additional_kwargs.reasoning_details);
    expect(message.additional_kwargs.reasoning_content).toBe(msg.additional_kwargs.reasoning_content);
    const off = await chat({ model: "emu-reasoner", serviceParameters: { disableThinking: true } }).invoke("think about it");
    expect(off.additional_kwargs.reasoning_content).toBeUndefined();
  });

  it("deprecated model: deprecation headers in response_metadata", async () => {
    const msg = await chat({ model: "emu-legacy" }).invoke("hi");
    expect(md(msg).headers.deprecation.warning).toBeTruthy();
    expect(md(msg).headers.deprecation.date).toBeTruthy();
  });

  it("abort on invoke", async () => {
    const controller = new AbortController();
    const p = chat().invoke("[[emu:tokens=5]]", { signal: controller.signal });
    controller.abort();
    await expect(p).rejects.toThrow();
    await expect(chat().invoke("x", { signal: AbortSignal.abort() })).rejects.toThrow();
    expect(AbortError).toBeDefined();
  });
});

// ---------------------------------------------------------------------------------------------------------
// LangChain's standard chat-model integration tests (`ChatModelIntegrationTests`, `internal/standard-tests`
// in the langchainjs monorepo; private, not on npm), ported one `it` per test, named after it: same inputs,
// same checks, plus exact values where the emulator makes them deterministic. Declared as a provider would:
// tool calling, structured output and parallel tool calls supported; usage details reasoning_output,
// cache_read_input, cache_creation_input (invoke and stream); content blocks: text, image url/base64/dataUrl,
// audio base64/dataUrl, file url/dataUrl.
// Not applicable, so not ported:
// - usage details audio_input / audio_output: the service's usage carries no audio token counts and its chat
//   completions never answer with audio.
// - testStandardAudioContentBlocks, "url" source: `input_audio` takes base64 data only; there is no URL form.
// - "id" sources (image, audio, file) and the file "text" branch: the service has no file-upload API (no ids),
//   and the suite's `file` support list cannot name "text" (its type is url | dataUrl | base64 | id).
// Where the suite's check does not fit a real service, the port says so in the test: testToolCalling expects
// the fake id "abc123" (`functionId`), and testWithStructuredOutput(IncludeRaw) expects the method
// "functionCalling" for the default method, which is jsonSchema here (as ChatOpenAI's on current models).
// ---------------------------------------------------------------------------------------------------------

const TEST_IMAGE_URL = "https://upload.wikimedia.org/wikipedia/commons/thumb/3/30/RedDisc.svg/24px-RedDisc.svg.png";
const TEST_IMAGE_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
const TEST_AUDIO_BASE64 = "UklGRigAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAAABkYXRhAgAAAAEA";
const TEST_FILE_URL = "https://www.w3.org/WAI/ER/tests/xhtml/testfiles/resources/pdf/dummy.pdf";
const TEST_FILE_TEXT_DATA_URL = "data:text/plain;base64,SGVsbG8sIFdvcmxkIQ=="; // "Hello, World!"

// The suite's schemas are zod v3 (`zod/v3`): users of either zod major must get the same tool and schema.
const adderSchema = z3
  .object({
    a: z3.number().int().describe("The first integer to add."),
    b: z3.number().int().describe("The second integer to add."),
  })
  .describe("Add two integers");

class AdderTool extends StructuredTool {
  name = "AdderTool";
  description = "Add two integers";
  schema = adderSchema;
  async _call(input: z3.infer<typeof adderSchema>) {
    return JSON.stringify({ result: input.a + input.b });
  }
}

const MATH_ADDITION_PROMPT = ChatPromptTemplate.fromMessages([
  ["system", "You are bad at math and must ALWAYS call the {toolName} function."],
  ["human", "What is the sum of 1836281973 and 19973286?"],
]);

/** The suite's TestCallbackHandler: what each chat-model run reports to tracing when it starts. */
class ExtraParamsHandler extends BaseCallbackHandler {
  name = "ExtraParamsHandler";
  starts: Array<Record<string, any>> = [];
  override handleChatModelStart(
    _llm: unknown,
    _messages: unknown,
    _runId: string,
    _parentRunId?: string,
    extraParams?: Record<string, unknown>,
  ) {
    if (extraParams) this.starts.push(extraParams);
  }
}

async function invokeOrStream(m: ChatService, input: BaseMessage[] | string, stream: boolean): Promise<AIMessage | AIMessageChunk> {
  if (!stream) return m.invoke(input);
  let acc: AIMessageChunk | undefined;
  for await (const c of await m.stream(input)) acc = acc ? concat(acc, c) : c;
  return acc!;
}

let cacheScope = 0;
/** a prompt_cache_key no other request used: the first request writes the cache, a repeat reads it */
const freshCacheKey = () => `std-${process.pid}-${Date.now()}-${cacheScope++}`;
const longSystem = () => new SystemMessage("You are LangChain's careful assistant. ".repeat(60));

/** The suite's assert*Metadata: the detail is a number (here: positive) and the details fit in the total. */
function assertUsageDetail(msg: AIMessage | AIMessageChunk, side: "input" | "output", key: string) {
  const usage = msg.usage_metadata!;
  const details = (side === "input" ? usage.input_token_details : usage.output_token_details) as Record<string, number>;
  expect(typeof details?.[key], key).toBe("number");
  expect(details[key], key).toBeGreaterThan(0);
  const total = side === "input" ? usage.input_tokens : usage.output_tokens;
  expect(total).toBeGreaterThanOrEqual(Object.values(details).reduce((a, b) => a + (b ?? 0), 0));
}

async function assertUsageDetails(stream: boolean) {
  const reasoning = await invokeOrStream(
    chat({ model: "emu-reasoner" }),
    "explain the relationship between the 2008/9 economic crisis and the startup ecosystem in the early 2010s",
    stream,
  );
  assertUsageDetail(reasoning, "output", "reasoning");
  const cached = chat({ promptCacheKey: freshCacheKey() });
  const input = [longSystem(), new HumanMessage("What's langchain?")];
  const first = await invokeOrStream(cached, input, stream);
  assertUsageDetail(first, "input", "cache_creation");
  const second = await invokeOrStream(cached, input, stream); // invoke twice so the first one is cached
  assertUsageDetail(second, "input", "cache_read");
}

const weatherSchema = z3.object({ location: z3.string().describe("The location to get the weather for.") });
const currentWeather = tool((_) => "The weather in San Francisco is 70 degrees and sunny.", {
  name: "get_current_weather",
  schema: weatherSchema,
  description: "Get the current weather for a location.",
});

describe("LangChain standard integration tests (ChatModelIntegrationTests)", () => {
  it("testInvoke: should invoke model and return valid response", async () => {
    const result = await chat().invoke("Hello");
    expect(result).toBeInstanceOf(AIMessage);
    expect(typeof result.text).toBe("string");
    expect(result.text).toBe("Echo: Hello");
  });

  it("testStream: should stream response tokens successfully", async () => {
    let numChars = 0;
    let chunkCount = 0;
    for await (const token of await chat().stream("Hello")) {
      chunkCount++;
      expect(token).toBeInstanceOf(AIMessageChunk);
      expect(typeof token.content === "string" || Array.isArray(token.content)).toBe(true);
      numChars += token.text.length;
    }
    expect(chunkCount).toBeGreaterThan(1);
    expect(numChars).toBe("Echo: Hello".length);
  });

  it("testBatch: should process multiple inputs in batch", async () => {
    const results = await chat().batch(["Hello", "Hey"]);
    expect(results).toHaveLength(2);
    for (const result of results) expect(result).toBeInstanceOf(AIMessage);
    expect(results.map((r) => r.text)).toEqual(["Echo: Hello", "Echo: Hey"]);
  });

  it("testStreamEvents: start first, end last, stream events in between whose chunks make the output", async () => {
    const events: any[] = [];
    for await (const e of chat().streamEvents("Hello", { version: "v2" })) events.push(e);
    expect(events.length).toBeGreaterThanOrEqual(3);
    expect(events[0].event).toBe("on_chat_model_start");
    expect(events.at(-1).event).toBe("on_chat_model_end");
    expect(events[Math.floor(events.length / 2)].event).toBe("on_chat_model_stream");
    // the suite reads `data.output` of stream events as a string; v2 puts an AIMessageChunk in `data.chunk`
    const streamed = events
      .filter((e) => e.event === "on_chat_model_stream")
      .map((e) => e.data.chunk.text)
      .join("");
    expect(streamed).toBe("Echo: Hello");
    expect(events.at(-1).data.output.text).toBe(streamed);
  });

  it("testConversation: should handle multi-message conversation", async () => {
    const result = await chat().invoke([new HumanMessage("hello"), new AIMessage("hello"), new HumanMessage("how are you")]);
    expect(result).toBeInstanceOf(AIMessage);
    expect(result.text).toBe("Echo: how are you");
  });

  it("testDoubleMessageConversation: back-to-back messages of the same role", async () => {
    const result = await chat().invoke([
      new SystemMessage("hello"),
      new SystemMessage("hello"),
      new HumanMessage("hello"),
      new HumanMessage("hello"),
      new AIMessage("hello"),
      new AIMessage("hello"),
      new HumanMessage("how are you"),
    ]);
    expect(result).toBeInstanceOf(AIMessage);
    expect(result.text).toBe("Echo: how are you");
  });

  it("testUsageMetadata: should return usage metadata for invoke (and response_metadata.model)", async () => {
    const result = await chat().invoke("Hello");
    expect(result).toBeInstanceOf(AIMessage);
    const usage = result.usage_metadata!;
    for (const key of ["input_tokens", "output_tokens", "total_tokens"] as const) expect(typeof usage[key]).toBe("number");
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
    // the suite requires `model`; `model_name` (ChatOpenAI's key) stays
    expect(md(result).model).toBe("emu-xs");
    expect(md(result).model_name).toBe("emu-xs");
    await assertUsageDetails(false);
  });

  it("testUsageMetadataStreaming: should return usage metadata for streaming (and response_metadata.model)", async () => {
    let final: AIMessageChunk | undefined;
    let withModel = 0;
    for await (const chunk of await chat().stream("Hello")) {
      expect(chunk).toBeInstanceOf(AIMessageChunk);
      if (md(chunk).model !== undefined) withModel++;
      final = final ? final.concat(chunk) : chunk;
    }
    const usage = final!.usage_metadata!;
    for (const key of ["input_tokens", "output_tokens", "total_tokens"] as const) expect(typeof usage[key]).toBe("number");
    expect(usage.output_tokens).toBeGreaterThan(0);
    // on one chunk only: concat joins strings, so two chunks carrying it would give "emu-xsemu-xs"
    expect(withModel).toBe(1);
    expect(md(final!).model).toBe("emu-xs");
    expect(md(final!).model_name).toBe("emu-xs");
    await assertUsageDetails(true);
  });

  it("testStopSequence: stop as a call option and as a constructor field", async () => {
    const result = await chat().invoke("hi", { stop: ["you"] });
    expect(result).toBeInstanceOf(AIMessage);
    expect(result.text).toBe("Echo: hi");
    const custom = await chat({ stop: ["you"] }).invoke("hi");
    expect(custom).toBeInstanceOf(AIMessage);
    expect(custom.text).toBe("Echo: hi");
    // beyond the suite: the stop sequence reaches the service from both places (the emulator cuts there)
    expect((await chat().invoke("how are you", { stop: ["you"] })).text).toBe("Echo: how are ");
    expect((await chat({ stop: ["you"] }).invoke("how are you")).text).toBe("Echo: how are ");
  });

  it("testToolCalling: one AdderTool call with the prompt's arguments", async () => {
    const result = await chat().bindTools([new AdderTool()]).invoke("What is the value of adderTool(1, 2)? Use the tool.");
    expect(result).toBeInstanceOf(AIMessage);
    expect(result.tool_calls).toHaveLength(1);
    const call = result.tool_calls![0]!;
    expect(call.name).toBe("AdderTool");
    expect(call.args).toEqual({ a: 1, b: 2 });
    expect(call.type).toBe("tool_call");
    // the suite expects its fake-model id "abc123"; a real service mints the id: it must be the one sent
    expect(call.id).toBe((result.additional_kwargs.tool_calls as Array<{ id: string }>)[0]!.id);
    expect(call.id).toBeTruthy();
  });

  it("testBindToolsWithRunnableToolLike: should bind tools with runnable tool-like objects", async () => {
    const runnableLike = RunnableLambda.from((_: unknown) => {}).asTool({
      name: "math_addition",
      description: adderSchema.description,
      schema: adderSchema,
    });
    const result = await MATH_ADDITION_PROMPT.pipe(chat().bindTools([runnableLike])).invoke({ toolName: "math_addition" });
    expect(result.tool_calls).toHaveLength(1);
    const call = result.tool_calls![0]!;
    expect(call.name).toBe("math_addition");
    // the suite's TODO ("verify the values if possible"): the emulator takes the prompt's numbers in order
    expect(call.args).toEqual({ a: 1836281973, b: 19973286 });
    expect(call.id).toBeTruthy();
    expect(call.type).toBe("tool_call");
  });

  it("testBindToolsWithOpenAIFormattedTools: should bind tools with OpenAI formatted tools", async () => {
    const m = chat().bindTools([
      {
        type: "function",
        function: {
          name: "math_addition",
          description: adderSchema.description,
          parameters: toJsonSchema(adderSchema) as Record<string, any>,
        },
      },
    ]);
    const result = await MATH_ADDITION_PROMPT.pipe(m).invoke({ toolName: "math_addition" });
    expect(result.tool_calls![0]!.name).toBe("math_addition");
    expect(result.tool_calls![0]!.args).toEqual({ a: 1836281973, b: 19973286 });
  });

  it("testToolMessageHistoriesStringContent: should handle tool message histories with string content", async () => {
    const adder = new AdderTool();
    const functionResult = await adder.invoke({ a: 1, b: 2 });
    const result = await chat()
      .bindTools([adder])
      .invoke([
        new HumanMessage("What is 1 + 2"),
        new AIMessage({ content: "", tool_calls: [{ name: adder.name, args: { a: 1, b: 2 }, id: "abc123", type: "tool_call" }] }),
        new ToolMessage(functionResult, "abc123", adder.name),
      ]);
    expect(result).toBeInstanceOf(AIMessage);
    expect(result.tool_calls).toEqual([]);
    expect(result.text).toBe("Based on AdderTool: result 3"); // the emulator answers from the tool result
  });

  it("testToolMessageHistoriesListContent: should handle tool message histories with list content", async () => {
    const adder = new AdderTool();
    const functionResult = await adder.invoke({ a: 1, b: 2 });
    const result = await chat()
      .bindTools([adder])
      .invoke([
        new HumanMessage("What is 1 + 2"),
        new AIMessage({
          content: [
            { type: "text", text: "some text" },
            { type: "tool_use", id: "abc123", name: adder.name, input: { a: 1, b: 2 } },
          ],
          tool_calls: [{ name: adder.name, args: { a: 1, b: 2 }, id: "abc123", type: "tool_call" }],
        }),
        new ToolMessage(functionResult, "abc123", adder.name),
      ]);
    expect(result).toBeInstanceOf(AIMessage);
    expect(result.tool_calls).toEqual([]);
    expect(result.text).toBe("Based on AdderTool: result 3"); // the emulator answers from the tool result
  });

  it("testStructuredFewShotExamples: should handle structured few shot examples", async () => {
    const adder = new AdderTool();
    const functionResult = await adder.invoke({ a: 1, b: 2 });
    const result = await chat()
      .bindTools([adder])
      .invoke([
        new HumanMessage("What is 1 + 2"),
        new AIMessage({ content: "", tool_calls: [{ name: adder.name, args: { a: 1, b: 2 }, id: "abc123", type: "tool_call" }] }),
        new ToolMessage(functionResult, "abc123", adder.name),
        new AIMessage(functionResult),
        new HumanMessage("What is 3 + 4"),
      ]);
    expect(result).toBeInstanceOf(AIMessage);
    expect(result.tool_calls![0]).toMatchObject({ name: "AdderTool", args: { a: 3, b: 4 } });
  });

  // The suite checks `kwargs.method === "functionCalling"` with the default method; the default here is
  // jsonSchema, so the method is named, and every method is checked to report what it does.
  it("testWithStructuredOutput: should work with structured output, reported to tracing (every method)", async () => {
    for (const method of ["functionCalling", "jsonSchema", undefined] as const) {
      const handler = new ExtraParamsHandler();
      const structured = chat().withStructuredOutput(adderSchema, { name: "math_addition", ...(method ? { method } : {}) });
      const result = await MATH_ADDITION_PROMPT.pipe(structured).invoke({ toolName: "math_addition" }, { callbacks: [handler] });
      expect(result, method).toEqual({ a: 1836281973, b: 19973286 });
      expect(handler.starts).toHaveLength(1);
      expect(handler.starts[0]!.options.ls_structured_output_format, method).toEqual({
        kwargs: { method: method ?? "jsonSchema" },
        schema: toJsonSchema(adderSchema),
      });
      // tracing only: not a request field
      expect(handler.starts[0]!.invocation_params).not.toHaveProperty("ls_structured_output_format");
    }
    // jsonMode: the emulator answers {"answer": ...} in JSON mode
    const Answer = z.object({ answer: z.string() });
    const handler = new ExtraParamsHandler();
    const out = await chat()
      .withStructuredOutput(Answer, { method: "jsonMode" })
      .invoke("Hello", { callbacks: [handler] });
    expect(out).toEqual({ answer: "Echo: Hello" });
    expect(handler.starts[0]!.options.ls_structured_output_format).toEqual({
      kwargs: { method: "jsonMode" },
      schema: toJsonSchema(Answer),
    });
    // a plain JSON schema, and a configured model (binding) report it too
    const plain = { title: "city", type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    const h2 = new ExtraParamsHandler();
    await chat()
      .withConfig({ promptCacheKey: "x" })
      .withStructuredOutput(plain, { method: "functionCalling" })
      .invoke("city: Paris", { callbacks: [h2] });
    expect(h2.starts[0]!.options.ls_structured_output_format).toEqual({ kwargs: { method: "functionCalling" }, schema: plain });
  });

  it("testWithStructuredOutputIncludeRaw: should work with structured output including raw", async () => {
    for (const method of ["functionCalling", "jsonSchema"] as const) {
      const handler = new ExtraParamsHandler();
      const structured = chat().withStructuredOutput(adderSchema, { includeRaw: true, name: "math_addition", method });
      const result = await MATH_ADDITION_PROMPT.pipe(structured).invoke({ toolName: "math_addition" }, { callbacks: [handler] });
      expect(result.raw).toBeInstanceOf(AIMessage);
      expect(result.parsed).toEqual({ a: 1836281973, b: 19973286 });
      expect(handler.starts[0]!.options.ls_structured_output_format).toEqual({ kwargs: { method }, schema: toJsonSchema(adderSchema) });
    }
  });

  it("testCacheComplexMessageTypes: should cache complex message types", async () => {
    let requests = 0;
    const model = chat({ cache: true, fetch: (input, init) => (requests++, globalThis.fetch(input, init)) });
    const humanMessage = new HumanMessage({ content: [{ type: "text", text: "Hello there!" }] });
    const prompt = getBufferString([humanMessage]);
    const llmKey = model._getSerializedCacheKeyParametersForCall({} as never);
    await model.invoke([humanMessage]);
    const cacheValue = await model.cache!.lookup(prompt, llmKey);
    expect(cacheValue).toHaveLength(1);
    const cachedMessage = (cacheValue![0] as unknown as { message: AIMessage }).message;
    const result = await model.invoke([humanMessage]);
    expect(result).toEqual(cachedMessage);
    expect(await model.cache!.lookup(prompt, llmKey)).toEqual(cacheValue);
    expect(requests).toBe(1); // the second answer came from the cache
  });

  it("testStreamTokensWithToolCalls: should stream tokens with tool calls", async () => {
    const stream = await MATH_ADDITION_PROMPT.pipe(chat().bindTools([new AdderTool()])).stream({ toolName: "math_addition" });
    let result: AIMessageChunk | undefined;
    for await (const chunk of stream) result = result ? result.concat(chunk) : chunk;
    expect(result!.tool_calls![0]).toMatchObject({ name: "AdderTool", args: { a: 1836281973, b: 19973286 } });
    expect(result!.usage_metadata!.input_tokens).toBeGreaterThan(0);
    expect(result!.usage_metadata!.output_tokens).toBeGreaterThan(0);
  });

  it("testModelCanUseToolUseAIMessage: should use tool use AI message in conversation", async () => {
    const m = chat().bindTools([currentWeather]);
    const messages: BaseMessage[] = [
      new HumanMessage("What's the weather like in San Francisco right now? Use the 'get_current_weather' tool to find the answer."),
    ];
    const result = await m.invoke(messages);
    expect(result.tool_calls![0]!.name).toBe("get_current_weather");
    messages.push(result);
    const call = result.tool_calls![0]!;
    messages.push(
      new ToolMessage({ tool_call_id: call.id ?? "", name: call.name, content: await currentWeather.invoke(call.args as never) }),
    );
    const finalResult = await m.invoke(messages);
    expect(finalResult.content).not.toBe("");
    expect(finalResult.text).toContain("70 degrees and sunny");
  });

  it("testModelCanUseToolUseAIMessageWithStreaming: should use tool use AI message with streaming", async () => {
    const m = chat().bindTools([currentWeather]);
    const messages: BaseMessage[] = [
      new HumanMessage("What's the weather like in San Francisco right now? Use the 'get_current_weather' tool to find the answer."),
    ];
    let result: AIMessageChunk | undefined;
    for await (const chunk of await m.stream(messages)) result = result ? concat(result, chunk) : chunk;
    const call = result!.tool_calls![0]!;
    expect(call.name).toBe("get_current_weather");
    messages.push(result!);
    messages.push(
      new ToolMessage({ tool_call_id: call.id ?? "", name: call.name, content: await currentWeather.invoke(call.args as never) }),
    );
    let finalResult: AIMessageChunk | undefined;
    for await (const chunk of await m.stream(messages)) finalResult = finalResult ? concat(finalResult, chunk) : chunk;
    expect(finalResult!.content).not.toBe("");
    expect(finalResult!.text).toContain("70 degrees and sunny");
  });

  it("testInvokeMoreComplexTools: should invoke model with more complex tools (record of unknown)", async () => {
    const complexSchema = z3.object({
      decision: z3.enum(["UseAPI", "UseFallback"]),
      explanation: z3.string(),
      apiDetails: z3.object({
        serviceName: z3.string(),
        endpointName: z3.string(),
        parameters: z3.record(z3.unknown()),
        extractionPath: z3.string(),
      }),
    });
    const prompt = ChatPromptTemplate.fromMessages([
      ["system", "You're a helpful assistant. Always use the {toolName} tool."],
      [
        "human",
        `I want to use the UseAPI because it's faster. For the API details use the following:
Service name: {serviceName}
Endpoint name: {endpointName}
Parameters: {parameters}
Extraction path: {extractionPath}`,
      ],
    ]);
    const values = {
      toolName: "service_tool",
      serviceName: "MyService",
      endpointName: "MyEndpoint",
      parameters: JSON.stringify({ param1: "value1", param2: "value2" }),
      extractionPath: "Users/johndoe/data",
    };
    // the default method (jsonSchema) and the tool the suite has in mind (functionCalling)
    for (const method of [undefined, "functionCalling"] as const) {
      const result = await prompt
        .pipe(chat().withStructuredOutput(complexSchema, { name: "service_tool", ...(method ? { method } : {}) }))
        .invoke(values);
      expect(result.decision, method).toBe("UseAPI");
      expect(typeof result.explanation).toBe("string");
      expect(typeof result.apiDetails).toBe("object");
      expect(typeof result.apiDetails.parameters).toBe("object");
    }
  });

  it("testParallelToolCalling: should handle parallel tool calling (invoke, stream, history)", async () => {
    const weatherTool = tool((_) => "no-op", {
      name: "get_current_weather",
      description: "Get the current weather in a given location",
      schema: z3.object({ location: z3.string().describe("The city name, e.g. San Francisco") }),
    });
    const currentTimeTool = tool((_) => "no-op", {
      name: "get_current_time",
      description: "Get the current time in a given location",
      schema: z3.object({ location: z3.string().describe("The city name, e.g. San Francisco") }),
    });
    const m = chat().bindTools([weatherTool, currentTimeTool]);
    const prompt =
      "What's the weather and current time in San Francisco?\n" +
      "Ensure you ALWAYS call the 'get_current_weather' tool for weather and 'get_current_time' tool for time.";

    const invoked = await m.invoke(prompt);
    expect(invoked.tool_calls!.length).toBeGreaterThanOrEqual(2);
    const weatherCall = invoked.tool_calls!.find((tc) => tc.name === weatherTool.name);
    const timeCall = invoked.tool_calls!.find((tc) => tc.name === currentTimeTool.name);
    expect(weatherCall?.args).toEqual({ location: "San Francisco" });
    expect(timeCall?.args).toEqual({ location: "San Francisco" });

    let streamed: AIMessageChunk | undefined;
    for await (const chunk of await m.stream(prompt)) streamed = streamed ? concat(streamed, chunk) : chunk;
    expect(streamed!.tool_calls!.map((tc) => tc.name).sort()).toEqual(["get_current_time", "get_current_weather"]);

    const result = await m.invoke([
      new HumanMessage(prompt),
      invoked,
      new ToolMessage({
        name: weatherTool.name,
        tool_call_id: weatherCall!.id!,
        content: "It is currently 24 degrees with hail in San Francisco.",
      }),
      new ToolMessage({
        name: currentTimeTool.name,
        tool_call_id: timeCall!.id!,
        content: "The current time in San Francisco is 12:02 PM.",
      }),
    ]);
    expect(result.tool_calls ?? []).toHaveLength(0); // no new call given the results
    expect(result.text).toContain("24 degrees with hail");
    expect(result.text).toContain("12:02 PM");
  });

  it("testModelCanAcceptStructuredToolParamsSchema: should accept structured tool params schema", async () => {
    const params: StructuredToolParams = {
      name: "get_current_weather",
      description: "Get the current weather in a given location",
      schema: z3.object({ location: z3.string().describe("The city name, e.g. San Francisco") }),
    };
    const result = await chat().bindTools([params]).invoke("What's the weather like in San Francisco today?");
    expect(result.tool_calls!.length).toBeGreaterThanOrEqual(1);
    expect(result.tool_calls![0]!.name).toBe("get_current_weather");
    expect(result.tool_calls![0]!.args).toEqual({ location: "San Francisco" });
  });

  it("testStreamTools: should stream tools successfully", async () => {
    const params: StructuredToolParams = {
      name: "get_current_weather",
      description: "Get the current weather in a given location",
      schema: z3.object({ location: z3.string().describe("The city name, e.g. San Francisco") }),
    };
    let full: AIMessageChunk | undefined;
    for await (const chunk of await chat().bindTools([params]).stream("What's the weather like in San Francisco today?")) {
      full = full ? concat(full, chunk) : chunk;
    }
    expect(full!.tool_calls!.length).toBeGreaterThanOrEqual(1);
    expect(full!.tool_calls![0]!.name).toBe("get_current_weather");
    expect(full!.tool_calls![0]!.args).toEqual({ location: "San Francisco" });
  });

  it("testStandardTextContentBlocks: should handle standard text content blocks", async () => {
    const msg = new HumanMessage({ content: [{ type: "text", source_type: "text", text: "Hello from a text content block!" } as never] });
    const result = await chat().invoke([msg]);
    expect(result.text).toBe("Echo: Hello from a text content block!");
  });

  it("testStandardImageContentBlocks: url, base64 and data URL images (vision model)", async () => {
    const m = chat({ model: "emu-m" });
    const textOnly = await m.invoke([new HumanMessage({ content: [{ type: "text", text: "What is this?" }] })]);
    for (const block of [
      { type: "image", source_type: "url", url: TEST_IMAGE_URL },
      { type: "image", source_type: "base64", data: TEST_IMAGE_BASE64, mime_type: "image/png" },
      { type: "image", source_type: "url", url: `data:image/png;base64,${TEST_IMAGE_BASE64}` },
    ]) {
      const result = await m.invoke([new HumanMessage({ content: [{ type: "text", text: "What is this?" }, block as never] })]);
      expect(result.text).not.toBe("");
      // the image reached the model as an image part (counted as image tokens)
      expect(result.usage_metadata!.input_tokens, block.source_type).toBeGreaterThan(textOnly.usage_metadata!.input_tokens);
    }
  });

  it("testStandardAudioContentBlocks: base64 and data URL audio (a model that hears audio)", async () => {
    const m = chat({ model: "emu-m" });
    const textOnly = await m.invoke([new HumanMessage({ content: [{ type: "text", text: "Transcribe" }] })]);
    for (const block of [
      { type: "audio", source_type: "base64", data: TEST_AUDIO_BASE64, mime_type: "audio/wav" },
      { type: "audio", source_type: "url", url: `data:audio/wav;base64,${TEST_AUDIO_BASE64}`, mime_type: "audio/wav" },
    ]) {
      const result = await m.invoke([new HumanMessage({ content: [{ type: "text", text: "Transcribe" }, block as never] })]);
      expect(result.text).not.toBe("");
      expect(result.usage_metadata!.input_tokens, block.source_type).toBeGreaterThan(textOnly.usage_metadata!.input_tokens);
    }
  });

  it("testStandardFileContentBlocks: data URL and URL files", async () => {
    const dataUrl = await chat().invoke([
      new HumanMessage({
        content: [
          {
            type: "file",
            source_type: "url",
            url: TEST_FILE_TEXT_DATA_URL,
            mime_type: "text/plain",
            metadata: { filename: "hello.txt" },
          } as never,
        ],
      }),
    ]);
    expect(dataUrl.text).toBe("Echo: Hello, World!"); // the service reads text files into the prompt
    // the service takes a public URL in `file_data` (the OpenAI converter alone refuses it)
    const url = await chat().invoke([
      new HumanMessage({
        content: [
          {
            type: "file",
            source_type: "url",
            url: TEST_FILE_URL,
            mime_type: "application/pdf",
            metadata: { filename: "dummy.pdf" },
          } as never,
        ],
      }),
    ]);
    expect(url.text).toBe(`Echo: [file dummy.pdf at ${TEST_FILE_URL}]`);
  });
});
