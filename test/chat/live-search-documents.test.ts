/**
 * The search-documents tool call (`returnSearchResultsAsDocuments`): the live service's synthetic call (id
 * `web_search_call`, name `web_search`, `finish_reason: "tool_calls"`, streamed before the content) and the
 * seed's `<brand>_web_search_documents` both become `response_metadata.web_search_documents` and never a tool
 * call: not in `tool_calls`, `tool_call_chunks`, `invalid_tool_calls`, `additional_kwargs.tool_calls`, nor
 * anywhere in the message's JSON. An agent that also has this package's `web_search` tool never runs it on the
 * documents. Against the emulator in both modes, and a scripted server for the shapes it does not produce.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "langchain";
import { type AIMessage, type AIMessageChunk, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { ChatService, webSearchDocuments, webSearchCitations } from "../../src/chat/index.js";
import { ServiceClient } from "../../src/index.js";
import { WebSearchTool } from "../../src/tools/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { chunk, completion, json, sse, startFixtureServer, type FixtureServer } from "./fixture-server.js";

const md = (m: { response_metadata: unknown }): any => m.response_metadata;
const QUESTION = "x402 payment protocol";
const DOCS = { enableWebSearch: "on", returnSearchResultsAsDocuments: true, includeSearchResultsInStream: true } as const;

let live: Emulator;
let seed: Emulator;
let fx: FixtureServer;
beforeAll(async () => {
  [live, seed, fx] = await Promise.all([
    startEmulator({ apiKeys: ["k1"] }),
    startEmulator({ apiKeys: ["k1"], mode: "seed" }),
    startFixtureServer(),
  ]);
});
afterAll(async () => {
  await Promise.all([live?.close(), seed?.close(), fx?.close()]);
});

/** No trace of a documents call as a tool call anywhere on a message (or chunk). */
function expectNoDocumentsCall(message: BaseMessage) {
  const ai = message as AIMessage & { tool_call_chunks?: unknown[] };
  expect(ai.tool_calls ?? []).toEqual([]);
  expect(ai.invalid_tool_calls ?? []).toEqual([]);
  expect(ai.tool_call_chunks ?? []).toEqual([]);
  expect(ai.additional_kwargs.tool_calls).toBeUndefined();
  // what is sent back on the next turn, and what a tool runner reads
  const wire = JSON.stringify([ai.content, ai.additional_kwargs, ai.tool_calls, ai.invalid_tool_calls, ai.tool_call_chunks]);
  expect(wire).not.toMatch(/web_search_call|_web_search_documents|"documents"/);
}

async function drain(stream: AsyncIterable<AIMessageChunk>) {
  const chunks: AIMessageChunk[] = [];
  let merged: AIMessageChunk | undefined;
  for await (const c of stream) {
    chunks.push(c);
    merged = merged ? merged.concat(c) : c;
  }
  return { chunks, merged: merged! };
}

describe.each([
  ["live", () => live],
  ["seed", () => seed],
] as const)("%s emulator", (_mode, emu) => {
  const model = (fields: Record<string, unknown> = {}) =>
    new ChatService({ model: "emu-s", apiKey: "k1", baseUrl: emu().url, serviceParameters: DOCS, ...fields });

  it("invoke: documents in response_metadata, no tool call, finish_reason stop", async () => {
    const msg = await model().invoke(QUESTION);
    const docs = webSearchDocuments(msg);
    expect(docs.length).toBe(webSearchCitations(msg).length);
    expect(docs[0]!.metadata.url).toBe("https://example.org/x402");
    expect(docs[0]!.pageContent).toContain("402 Payment Required");
    expect(md(msg).finish_reason).toBe("stop");
    expect(msg.text).toContain("x402");
    expectNoDocumentsCall(msg);
  });

  it("stream: no chunk carries the call; the merged message has the documents and finish_reason stop", async () => {
    const { chunks, merged } = await drain(await model().stream(QUESTION));
    for (const c of chunks) expectNoDocumentsCall(c);
    expect(webSearchDocuments(merged)[0]!.metadata.url).toBe("https://example.org/x402");
    expect(md(merged).finish_reason).toBe("stop");
    const json = await model().invoke(QUESTION);
    expect(merged.text).toBe(json.text);
  });

  it("content-block events: no tool-call block, finish reason stop", async () => {
    const events: any[] = [];
    for await (const e of (model() as any).streamEvents(QUESTION)) events.push(e);
    const blocks = events.filter((e) => e.event === "content-block-start").map((e) => e.content.type);
    expect(blocks).toEqual(["text"]);
    expect(events.at(-1)).toMatchObject({ event: "message-finish", reason: "stop" });
    expect(webSearchDocuments({ response_metadata: events.at(-1).responseMetadata })).not.toEqual([]);
  });
});

describe("an agent with the web_search tool never runs it on the documents", () => {
  // toolChoice "none": the model answers from the service's search, which adds its synthetic `web_search` call
  async function runAgent(streaming: boolean) {
    const client = new ServiceClient({ baseUrl: live.url, apiKey: "k1" });
    const ran: unknown[] = [];
    const search = new WebSearchTool({ client });
    const original = search.invoke.bind(search);
    search.invoke = (async (input: unknown, config?: unknown) => {
      ran.push(input);
      return original(input as never, config as never);
    }) as typeof search.invoke;
    const model = new ChatService({ model: "emu-m", serviceFetch: client.fetch, toolChoice: "none", streaming, serviceParameters: DOCS });
    const agent = createAgent({ model, tools: [search] });
    const { messages } = await agent.invoke({ messages: [new HumanMessage("what is the x402 payment protocol?")] });
    return { messages: messages as BaseMessage[], ran };
  }

  for (const streaming of [false, true]) {
    it(`(${streaming ? "streaming" : "invoke"})`, async () => {
      const { messages, ran } = await runAgent(streaming);
      expect(ran).toEqual([]);
      expect(messages.filter((m) => ToolMessage.isInstance(m))).toEqual([]);
      const answer = messages.at(-1) as AIMessage;
      expect(answer.getType()).toBe("ai");
      expect(answer.text).toContain("402");
      expect(webSearchDocuments(answer).length).toBeGreaterThan(0);
      expectNoDocumentsCall(answer);
    });
  }
});

describe("shapes only a scripted server sends", () => {
  const model = (fields: Record<string, unknown> = {}) =>
    new ChatService({ model: "fx-model", apiKey: "k", baseUrl: fx.url, retry: false, abuseGuard: false, ...fields });
  const docs = { documents: [{ id: "1", title: "A", url: "https://a.example", snippet: "alpha", published_at: "2025-01-01" }] };
  const search = { query: "news" };

  it("a web_search call under another id: documents when its arguments hold them (split over deltas), a tool call when not", async () => {
    const args = JSON.stringify(docs);
    fx.script = (req, res) =>
      req.body.stream
        ? sse(res, [
            chunk({
              role: "assistant",
              tool_calls: [{ index: 0, id: "ws_1", type: "function", function: { name: "web_search", arguments: args.slice(0, 9) } }],
            }),
            chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(9) } }] }),
            chunk({ content: "alpha it is" }),
            chunk({}, {}, "tool_calls"),
          ])
        : json(res, {
            ...completion({
              content: "alpha it is",
              tool_calls: [{ id: "ws_1", type: "function", function: { name: "web_search", arguments: args } }],
            }),
            choices: [
              {
                index: 0,
                finish_reason: "tool_calls",
                logprobs: null,
                message: {
                  role: "assistant",
                  content: "alpha it is",
                  tool_calls: [{ id: "ws_1", type: "function", function: { name: "web_search", arguments: args } }],
                },
              },
            ],
          });
    const msg = await model().invoke("q");
    expect(webSearchDocuments(msg)[0]!.pageContent).toBe("alpha");
    expect(md(msg).finish_reason).toBe("stop");
    expectNoDocumentsCall(msg);
    const { chunks, merged } = await drain(await model().stream("q"));
    for (const c of chunks) expectNoDocumentsCall(c);
    expect(webSearchDocuments(merged)[0]!.metadata.url).toBe("https://a.example");
    expect(md(merged).finish_reason).toBe("stop");
  });

  it("a real web_search call (its arguments hold no documents) stays a tool call, on JSON and stream", async () => {
    const call = { id: "call_9", type: "function", function: { name: "web_search", arguments: JSON.stringify(search) } };
    fx.script = (req, res) =>
      req.body.stream
        ? sse(res, [
            chunk({ role: "assistant", tool_calls: [{ index: 0, ...call, function: { name: "web_search", arguments: '{"que' } }] }),
            chunk({ tool_calls: [{ index: 0, function: { arguments: 'ry":"news"}' } }] }),
            chunk({}, {}, "tool_calls"),
          ])
        : json(res, {
            ...completion({}),
            choices: [
              { index: 0, finish_reason: "tool_calls", logprobs: null, message: { role: "assistant", content: null, tool_calls: [call] } },
            ],
          });
    const msg = await model().invoke("q");
    expect(msg.tool_calls).toEqual([{ name: "web_search", args: search, id: "call_9", type: "tool_call" }]);
    expect(md(msg).finish_reason).toBe("tool_calls");
    expect(md(msg).web_search_documents).toBeUndefined();
    const { merged } = await drain(await model().stream("q"));
    expect(merged.tool_calls).toEqual([{ name: "web_search", args: search, id: "call_9", type: "tool_call" }]);
    expect(md(merged).finish_reason).toBe("tool_calls");
  });

  it("documents next to a real tool call: the real one stays, finish_reason stays tool_calls", async () => {
    const real = { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } };
    const synthetic = { id: "web_search_call", type: "function", function: { name: "web_search", arguments: JSON.stringify(docs) } };
    fx.script = (req, res) =>
      req.body.stream
        ? sse(res, [
            chunk({ role: "assistant", tool_calls: [{ index: 0, ...synthetic }] }),
            chunk({ tool_calls: [{ index: 1, ...real }] }),
            chunk({}, {}, "tool_calls"),
          ])
        : json(res, {
            ...completion({}),
            choices: [
              {
                index: 0,
                finish_reason: "tool_calls",
                logprobs: null,
                message: { role: "assistant", content: null, tool_calls: [synthetic, real] },
              },
            ],
          });
    for (const msg of [await model().invoke("q"), (await drain(await model().stream("q"))).merged]) {
      expect(msg.tool_calls!.map((c) => c.name)).toEqual(["get_weather"]);
      expect(md(msg).finish_reason).toBe("tool_calls");
      expect(webSearchDocuments(msg)).toHaveLength(1);
      expect(JSON.stringify(msg.additional_kwargs)).not.toContain("web_search_call");
    }
  });

  it("a web_search call whose arguments never parse is handed on at the end as it came, not dropped", async () => {
    fx.script = (_req, res) =>
      sse(res, [
        chunk({
          role: "assistant",
          tool_calls: [{ index: 0, id: "call_x", type: "function", function: { name: "web_search", arguments: '{"query": "ne' } }],
        }),
        chunk({}, {}, "tool_calls"),
      ]);
    const { merged } = await drain(await model().stream("q"));
    // LangChain reads the cut arguments leniently (partial JSON)
    expect([...merged.tool_calls!, ...merged.invalid_tool_calls!]).toMatchObject([{ name: "web_search", id: "call_x" }]);
    expect(merged.tool_call_chunks).toMatchObject([{ name: "web_search", id: "call_x", args: '{"query": "ne' }]);
    expect(md(merged).finish_reason).toBe("tool_calls");
  });
});
