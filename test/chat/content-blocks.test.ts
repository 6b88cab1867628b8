/**
 * Standard content blocks under our own provider: `response_metadata.model_provider` is the brand, and the
 * translator registered for it in core's registry maps reasoning, the web search, text with one `citation`
 * annotation per cited source (for `^n^` and `[REF]n[/REF]` markers), tool calls; the same on streamed chunks and
 * their merge, on the content-block event stream, and as `content` with `outputVersion: "v1"`, where a multi-turn
 * tool loop with a reasoning model still sends `reasoning_details` and `thought_signature` back as received and
 * never a `reasoning` block as content. Against the emulator in live and seed mode.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { tool } from "@langchain/core/tools";
import { AIMessage, type AIMessageChunk, HumanMessage, type ContentBlock } from "@langchain/core/messages";
import { createAgent } from "langchain";
import { ChatService, type ChatServiceInput } from "../../src/chat/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";

const QUESTION = "What is x402?";
const SEARCH = { enableWebSearch: "on", enableWebCitations: true, includeSearchResultsInStream: true } as const;
const weather = tool(async ({ city }) => `It is sunny and 21C in ${city}.`, {
  name: "get_weather",
  description: "Current weather in a city",
  schema: z.object({ city: z.string() }),
});

let live: Emulator;
let seed: Emulator;
let acme: Emulator;
beforeAll(async () => {
  [live, seed, acme] = await Promise.all([
    startEmulator({ apiKeys: ["k1"] }),
    startEmulator({ apiKeys: ["k1"], mode: "seed" }),
    startEmulator({ apiKeys: ["k1"], brand: "acme" }),
  ]);
});
afterAll(async () => {
  await Promise.all([live?.close(), seed?.close(), acme?.close()]);
});

function chat(emu: Emulator, fields: Partial<ChatServiceInput> = {}) {
  const bodies: any[] = [];
  const model = new ChatService({
    model: "emu-s",
    apiKey: "k1",
    baseUrl: emu.url,
    fetch: async (input, init) => {
      if (String(input).endsWith("/chat/completions") && typeof init?.body === "string") bodies.push(JSON.parse(init.body));
      return globalThis.fetch(input, init);
    },
    ...fields,
  });
  return { model, bodies };
}

async function merged(stream: AsyncIterable<AIMessageChunk>) {
  const chunks: AIMessageChunk[] = [];
  let acc: AIMessageChunk | undefined;
  for await (const c of stream) {
    chunks.push(c);
    acc = acc ? acc.concat(c) : c;
  }
  return { chunks, message: acc! };
}

/** blocks without the stream-merge `index` */
const plain = (blocks: unknown[]) => JSON.parse(JSON.stringify(blocks, (k, v) => (k === "index" && typeof v === "string" ? undefined : v)));
const ofType = <T extends string>(blocks: ContentBlock.Standard[] | unknown[], type: T) =>
  (blocks as Array<{ type: string }>).filter((b) => b.type === type) as any[];

/** Checks that every citation annotation points at a marker of `text` and names a source of the message. */
function expectCitations(text: string, blocks: unknown[], markers: RegExp) {
  const [textBlock] = ofType(blocks, "text");
  const annotations = textBlock.annotations as any[];
  expect(annotations.length).toBeGreaterThan(0);
  for (const a of annotations) {
    expect(a.type).toBe("citation");
    expect(text.slice(a.startIndex, a.endIndex)).toMatch(markers);
    expect(a.url).toMatch(/^https:\/\//);
    expect(typeof a.title).toBe("string");
    expect(typeof a.citedText).toBe("string");
  }
  return annotations;
}

describe("model_provider is the brand", () => {
  it("on answers and every streamed chunk; a configured brand is used as is; never another provider's name", async () => {
    const { model } = chat(live);
    expect((await model.invoke("hi")).response_metadata.model_provider).toBe("service");
    const { chunks } = await merged(await model.stream("hi"));
    for (const c of chunks) expect(c.response_metadata.model_provider).toBe("service");
    const acmeModel = new ChatService({ model: "emu-s", apiKey: "k1", baseUrl: acme.url, brand: "acme" });
    const msg = await acmeModel.invoke("hi");
    expect(msg.response_metadata.model_provider).toBe("acme");
    expect(msg.contentBlocks).toEqual([{ type: "text", text: "Echo: hi" }]);
    expect(JSON.stringify(msg)).not.toContain("openrouter");
  });
});

describe("contentBlocks", () => {
  it("reasoning from reasoning_content, the encrypted details left in additional_kwargs, text and tool calls", async () => {
    const { model } = chat(live, { model: "emu-reasoner" });
    const msg = await model.bindTools([weather]).invoke("Use get_weather for Paris please");
    const blocks = msg.contentBlocks;
    expect(blocks[0]).toEqual({ type: "reasoning", reasoning: msg.additional_kwargs.reasoning_content });
    expect(ofType(blocks, "tool_call")).toEqual([
      { type: "tool_call", id: msg.tool_calls![0]!.id, name: "get_weather", args: { city: "Paris" } },
    ]);
    expect((msg.additional_kwargs.reasoning_details as any[]).map((d) => d.type)).toEqual(["reasoning.text", "reasoning.encrypted"]);
    expect(JSON.stringify(blocks)).not.toContain("reasoning.encrypted");
  });

  it.each([
    ["live", () => live, /^\^\d+(,\d+)*\^$/],
    ["seed", () => seed, /^\[REF\]\d+(,\d+)*\[\/REF\]$/],
  ] as const)("%s: citations as annotations on the text block, and the search as a server tool call", async (_mode, emu, markers) => {
    const { model } = chat(emu(), { serviceParameters: SEARCH });
    const msg = await model.invoke(QUESTION);
    const blocks = msg.contentBlocks;
    const annotations = expectCitations(msg.text, blocks, markers);
    expect(annotations[0]).toMatchObject({ url: "https://example.org/x402", title: "The x402 payment protocol" });
    expect(ofType(blocks, "server_tool_call")).toEqual([{ type: "server_tool_call", id: "web_search_call", name: "web_search", args: {} }]);
    const [result] = ofType(blocks, "server_tool_call_result");
    expect(result).toMatchObject({ toolCallId: "web_search_call", status: "success" });
    expect(result.output.citations[0].url).toBe("https://example.org/x402");
    // never a tool call for the agent to run
    expect(ofType(blocks, "tool_call")).toEqual([]);
  });

  it("the search-documents call is a server tool call result with the documents, never a tool call", async () => {
    const { model } = chat(live, { serviceParameters: { ...SEARCH, returnSearchResultsAsDocuments: true } });
    const msg = await model.invoke(QUESTION);
    const [result] = ofType(msg.contentBlocks, "server_tool_call_result");
    expect(result.output.documents[0]).toMatchObject({ url: "https://example.org/x402" });
    expect(typeof result.output.documents[0].content).toBe("string");
    expect(ofType(msg.contentBlocks, "tool_call")).toEqual([]);
  });

  it.each([
    ["live", () => live],
    ["seed", () => seed],
  ] as const)(
    "%s stream: the merged chunks give the blocks of the JSON answer; single chunks carry their own piece",
    async (_mode, emu) => {
      const { model } = chat(emu(), { model: "emu-reasoner", serviceParameters: SEARCH });
      const json = await model.invoke(QUESTION);
      const { chunks, message } = await merged(await model.stream(QUESTION));
      expect(plain(message.contentBlocks)).toEqual(plain(json.contentBlocks));
      const pieces = chunks.flatMap((c) => c.contentBlocks);
      expect(
        ofType(pieces, "reasoning")
          .map((b) => b.reasoning)
          .join(""),
      ).toBe(json.additional_kwargs.reasoning_content);
      expect(
        ofType(pieces, "text")
          .map((b) => b.text)
          .join(""),
      ).toBe(json.text);
    },
  );

  it("streamed tool calls: chunk blocks while arguments arrive, tool_call blocks on the merged message", async () => {
    const { model } = chat(live);
    const { chunks, message } = await merged(await model.bindTools([weather]).stream("Use get_weather for Rome"));
    expect(ofType(message.contentBlocks, "tool_call")).toEqual([
      { type: "tool_call", id: message.tool_calls![0]!.id, name: "get_weather", args: { city: "Rome" } },
    ]);
    const callBlocks = chunks.flatMap((c) => c.contentBlocks).filter((b) => b.type === "tool_call" || b.type === "tool_call_chunk");
    expect(callBlocks.length).toBeGreaterThan(0);
  });

  it("the content-block event stream puts the citations on the finished text block", async () => {
    const { model } = chat(live, { serviceParameters: SEARCH });
    const finished: any[] = [];
    const run = (model as any).streamEvents(QUESTION);
    for await (const event of run) if (event.event === "content-block-finish") finished.push(event.content);
    const text = finished.find((b) => b.type === "text");
    expectCitations(text.text, [text], /^\^\d+(,\d+)*\^$/);
  });
});

describe('outputVersion: "v1"', () => {
  it("invoke: the content is the standard blocks", async () => {
    const { model } = chat(live, { model: "emu-reasoner", serviceParameters: SEARCH, outputVersion: "v1" });
    const msg = await model.invoke(QUESTION);
    expect(msg.response_metadata.output_version).toBe("v1");
    const content = msg.content as unknown[];
    expect(ofType(content, "reasoning")).toHaveLength(1);
    expectCitations(msg.text, content, /^\^\d+(,\d+)*\^$/);
  });

  it("stream: the merged content is one reasoning block and one text block, with the citations", async () => {
    const { model } = chat(live, { model: "emu-reasoner", serviceParameters: SEARCH });
    const { message } = await merged(await model.stream(QUESTION, { outputVersion: "v1" }));
    const content = message.content as any[];
    expect(ofType(content, "reasoning")).toHaveLength(1);
    expect(ofType(content, "text")).toHaveLength(1);
    expect(ofType(content, "reasoning")[0].reasoning).toMatch(/^Thinking about/);
    expectCitations(ofType(content, "text")[0].text, content, /^\^\d+(,\d+)*\^$/);
    expect(message.additional_kwargs.reasoning_details).toBeDefined();
  });

  it("a multi-turn tool loop with a reasoning model sends reasoning_details and thought_signature back as received, never a reasoning block", async () => {
    const { model, bodies } = chat(live, { model: "emu-reasoner", outputVersion: "v1" });
    const agent = createAgent({ model, tools: [weather] });
    const first = await agent.invoke({ messages: [new HumanMessage("Use get_weather for Paris please")] });
    const thread = [...first.messages, new HumanMessage("Now use get_weather for Rome")];
    const { messages } = await agent.invoke({ messages: thread });
    const ais = messages.filter((m) => AIMessage.isInstance(m)) as AIMessage[];
    expect(ais.every((m) => m.response_metadata.output_version === "v1")).toBe(true);
    expect(ais.at(-1)!.text).toContain("Based on get_weather");
    const toolTurns = ais.filter((m) => m.tool_calls?.length);
    expect(toolTurns).toHaveLength(2);
    // the last request carried both tool turns back exactly as they were received
    const sent = bodies.at(-1).messages.filter((m: any) => m.role === "assistant" && m.tool_calls);
    expect(sent).toHaveLength(2);
    sent.forEach((m: any, i: number) => {
      expect(m.reasoning_details).toEqual(toolTurns[i]!.additional_kwargs.reasoning_details);
      expect(m.thought_signature).toBe(toolTurns[i]!.additional_kwargs.thought_signature);
    });
    for (const body of bodies) {
      for (const m of body.messages) {
        if (Array.isArray(m.content)) for (const part of m.content) expect(part.type).toBe("text");
        expect(JSON.stringify(m.content ?? "")).not.toContain("annotations");
      }
    }
  });
});
