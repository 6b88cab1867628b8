/**
 * The integration checks of LangChain's standard chat-model tests, against the emulator over loopback:
 * invoke, stream, batch, streamEvents, usage metadata (both modes), tool calling and tool-message histories
 * (string and list content), tool choice, parallel tool calls, structured output (zod, JSON schema, with raw),
 * few-shot tool examples, content blocks, caching, abort; plus the service's own features end to end.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { tool } from "@langchain/core/tools";
import { AIMessage, AIMessageChunk, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { ChatService, mapCitations, buildModelId } from "../../src/chat/index.js";
import { startEmulator, type Emulator } from "../../src/emulator/index.js";
import { AbortError, BadRequestError, ProOnlyModelError, StreamError } from "../../src/http/errors.js";

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

  it("typed errors: Pro-only model, bad request", async () => {
    await expect(chat({ model: "emu-pro" }).invoke("hi")).rejects.toBeInstanceOf(ProOnlyModelError);
    await expect(chat({ model: "emu-nope" }).invoke("hi")).rejects.toBeInstanceOf(BadRequestError);
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
      new HumanMessage({ content: [{ type: "text", text: "just text" }, { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }] }),
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
      serviceParameters: { enableWebCitations: true, returnSearchResultsAsDocuments: true },
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

  it("include_search_results_in_stream: search results are the first chunk", async () => {
    const m = chat({ model: "emu-s", serviceParameters: { enableWebSearch: "on", includeSearchResultsInStream: true } });
    const chunks: AIMessageChunk[] = [];
    for await (const c of await m.stream("Tell me about USDC decimals")) chunks.push(c);
    expect(md(chunks[0]!).web_search_citations.length).toBeGreaterThan(0);
    expect(chunks.filter((c) => md(c).web_search_citations).length).toBe(1);
  });

  it("legacy think tags are split, and strip_thinking_response is honored", async () => {
    const split = await chat({ model: "emu-thinker" }).invoke("why");
    expect(split.content).toBe("Echo: why");
    expect(split.additional_kwargs.reasoning_content).toBeTruthy();
    const raw = await chat({ model: "emu-thinker", splitThinkTags: false }).invoke("why");
    expect(String(raw.content)).toContain("<think>");
    const stripped = await chat({ model: "emu-thinker", splitThinkTags: false, serviceParameters: { stripThinkingResponse: true } }).invoke("why");
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
