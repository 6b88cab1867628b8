/**
 * Citations on a stream, against the live emulator: the live service puts `web_search_citations` in a stream only
 * when `include_search_results_in_stream` asks for them (a `choices: []` chunk at the end). With web search on and
 * citations asked for, a stream asks for them unless the caller set the flag, so the merged stream carries the same
 * citations and `citation` annotations as `invoke()`, in every way a stream is taken.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AIMessage, AIMessageChunk, ContentBlock } from "@langchain/core/messages";
import { ChatService, webSearchCitations } from "../../src/chat/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";

const QUESTION = "Tell me about the x402 payment protocol";
const CITED = { enableWebSearch: "on", enableWebCitations: true } as const;

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: ["k1"], rateLimits: { enabled: false } });
});
afterAll(() => emu?.close());

/** What reached the emulator: each chat request's parameters object. */
function wire() {
  const sent: any[] = [];
  const fetch = (input: string | URL | Request, init?: RequestInit) => {
    if (String(input).endsWith("/chat/completions") && typeof init?.body === "string") sent.push(JSON.parse(init.body).service_parameters);
    return globalThis.fetch(input, init);
  };
  return { sent, fetch };
}

function model(fields: Record<string, unknown> = {}) {
  return new ChatService({ model: "emu-s", apiKey: "k1", baseUrl: emu.url, serviceParameters: CITED, ...fields });
}

async function merged(stream: AsyncIterable<AIMessageChunk>): Promise<AIMessageChunk> {
  let out: AIMessageChunk | undefined;
  for await (const c of stream) out = out ? out.concat(c) : c;
  return out!;
}

const annotations = (m: AIMessage | AIMessageChunk) =>
  (m.contentBlocks as ContentBlock.Standard[]).flatMap((b) => (b.type === "text" && Array.isArray(b.annotations) ? b.annotations : []));

describe("a stream with web search and citations", () => {
  it("carries the same citations and citation annotations as invoke", async () => {
    const json = await model().invoke(QUESTION);
    const cited = webSearchCitations(json);
    expect(cited.length).toBeGreaterThan(0);
    expect(json.text).toMatch(/\^\d+\^/);
    expect(annotations(json).length).toBeGreaterThan(0);

    const { sent, fetch } = wire();
    const streamed = await merged(await model({ fetch }).stream(QUESTION));
    expect(sent.at(-1)).toMatchObject({ include_search_results_in_stream: true });
    expect(streamed.text).toBe(json.text);
    expect(webSearchCitations(streamed)).toEqual(cited);
    expect(annotations(streamed)).toEqual(annotations(json));
  });

  it("streaming invoke and a model suffix ask the same way", async () => {
    const json = await model().invoke(QUESTION);
    const viaStreaming = await model({ streaming: true }).invoke(QUESTION);
    expect(webSearchCitations(viaStreaming)).toEqual(webSearchCitations(json));
    const suffixed = new ChatService({ model: "emu-s:enable_web_search=on&enable_web_citations=true", apiKey: "k1", baseUrl: emu.url });
    const viaSuffix = await merged(await suffixed.stream(QUESTION));
    expect(webSearchCitations(viaSuffix)).toEqual(webSearchCitations(json));
    expect(annotations(viaSuffix)).toEqual(annotations(json));
  });

  it("the caller's own include_search_results_in_stream wins", async () => {
    const { sent, fetch } = wire();
    const off = await merged(await model({ fetch, serviceParameters: { ...CITED, includeSearchResultsInStream: false } }).stream(QUESTION));
    expect(sent.at(-1).include_search_results_in_stream).toBe(false);
    expect(webSearchCitations(off)).toEqual([]);
  });

  it("nothing is added without citations or without search, nor to invoke", async () => {
    const { sent, fetch } = wire();
    await merged(await model({ fetch, serviceParameters: { enableWebSearch: "on" } }).stream(QUESTION));
    await merged(await model({ fetch, serviceParameters: { enableWebCitations: true } }).stream(QUESTION));
    await model({ fetch }).invoke(QUESTION);
    expect(sent.map((p) => p.include_search_results_in_stream)).toEqual([undefined, undefined, undefined]);
  });
});
