/** Pure helpers: service parameters, model suffixes, citations, think tags, reasoning details, usage, SSE. */
import { describe, expect, it } from "vitest";
import { buildModelId, mapCitations } from "../../src/chat/index.js";
import {
  SERVICE_PARAMETER_KEYS,
  ServiceParametersSchema,
  toWireServiceParameters,
  validateServiceParameters,
} from "../../src/chat/service-parameters.js";
import { mergeReasoningDetails, searchDocumentsFromArguments, toUsageMetadata } from "../../src/chat/convert.js";
import { parseModelId } from "../../src/chat/model-id.js";
import { parseSseJson } from "../../src/chat/sse.js";
import { splitThinkTags, ThinkTagSplitter } from "../../src/chat/think-tags.js";
import { StreamError, ValidationError } from "../../src/http/errors.js";

describe("service parameters", () => {
  it("maps every member to its snake_case wire name under the brand", () => {
    const all = {
      characterSlug: "alan",
      stripThinkingResponse: true,
      disableThinking: true,
      enableWebSearch: "auto",
      enableWebScraping: true,
      enableXSearch: true,
      enableWebCitations: true,
      includeSearchResultsInStream: true,
      returnSearchResultsAsDocuments: true,
      includeServiceSystemPrompt: false,
      enableE2ee: false,
    } as const;
    expect(Object.keys(all).sort()).toEqual([...SERVICE_PARAMETER_KEYS].sort());
    expect(toWireServiceParameters(validateServiceParameters(all))).toEqual({
      character_slug: "alan",
      strip_thinking_response: true,
      disable_thinking: true,
      enable_web_search: "auto",
      enable_web_scraping: true,
      enable_x_search: true,
      enable_web_citations: true,
      include_search_results_in_stream: true,
      return_search_results_as_documents: true,
      include_service_system_prompt: false,
      enable_e2ee: false,
    });
    expect(toWireServiceParameters({ includeServiceSystemPrompt: true }, "acme")).toEqual({
      include_acme_system_prompt: true,
    });
  });

  it("rejects wrong enums, wrong types and unknown members with a ValidationError naming them", () => {
    expect(() => validateServiceParameters({ enableWebSearch: true })).toThrow(ValidationError);
    expect(() => validateServiceParameters({ enableWebSearch: "sometimes" })).toThrow(/enableWebSearch/);
    expect(() => validateServiceParameters({ stripThinkingResponse: "yes" })).toThrow(/stripThinkingResponse/);
    expect(() => validateServiceParameters({ enable_web_search: "on" })).toThrow(/enable_web_search/);
    expect(ServiceParametersSchema.safeParse({ enableWebSearch: "on" }).success).toBe(true);
  });
});

describe("model feature suffix", () => {
  it("builds and parses `model:key=value&key=value`", () => {
    const id = buildModelId("emu-s", { enableWebSearch: "on", enableWebCitations: true });
    expect(id).toBe("emu-s:enable_web_search=on&enable_web_citations=true");
    const parsed = parseModelId(id);
    expect(parsed.id).toBe("emu-s");
    expect(parsed.serviceParameters).toEqual({ enableWebSearch: "on", enableWebCitations: true });
    expect(parsed.suffix).toEqual({ enable_web_search: "on", enable_web_citations: "true" });
  });

  it("URL-encodes values and keeps existing members unless overridden", () => {
    const id = buildModelId("emu-s:strip_thinking_response=true", { characterSlug: "a b&c", stripThinkingResponse: false });
    expect(id).toBe("emu-s:strip_thinking_response=false&character_slug=a%20b%26c");
    expect(parseModelId(id).serviceParameters.characterSlug).toBe("a b&c");
  });

  it("rejects keys the service does not accept as suffix, and bad values", () => {
    expect(() => buildModelId("emu-s", { enableE2ee: false })).toThrow(/not accepted as a model suffix/);
    expect(() => buildModelId("emu-s", { enableXSearch: true })).toThrow(ValidationError);
    expect(() => parseModelId("emu-s:enable_e2ee=false")).toThrow(/not accepted/);
    expect(() => parseModelId("emu-s:enable_x_search=true")).toThrow(/not accepted/);
    expect(() => parseModelId("emu-s:nonsense=1")).toThrow(/not accepted/);
    expect(() => parseModelId("emu-s:enable_web_search=maybe")).toThrow(ValidationError);
    expect(() => parseModelId("emu-s:strip_thinking_response=yes")).toThrow(ValidationError);
    expect(() => parseModelId("emu-s:novalue")).toThrow(/key=value/);
    expect(() => parseModelId(":enable_web_search=on")).toThrow(/no model id/);
    expect(parseModelId("emu-s:include_acme_system_prompt=false", "acme").serviceParameters).toEqual({
      includeServiceSystemPrompt: false,
    });
  });
});

describe("mapCitations", () => {
  const citations = [
    { title: "A", url: "https://a.example" },
    { title: "B", url: "https://b.example" },
  ];
  it("maps [REF]n[/REF] (1-based) and ^i,j^ markers to citations", () => {
    const out = mapCitations("Alpha[REF]1[/REF]. Beta [REF]2[/REF] and ^1,2^. Bad[REF]7[/REF]", citations);
    expect(out.text).toBe("Alpha[1]. Beta [2] and [1][2]. Bad[7]");
    expect(out.references.map((r) => r.numbers)).toEqual([[1], [2], [1, 2], [7]]);
    expect(out.references[0]!.citations[0]!.title).toBe("A");
    expect(out.references[0]!.start).toBe(5);
    expect(out.cited.map((c) => c.title)).toEqual(["A", "B"]);
    expect(out.unresolved).toEqual([7]);
  });
  it("maps the live service's ^n^ and ^i, j^ markers alone", () => {
    const out = mapCitations("Alpha.^1^ Beta^2^ both ^1, 2^ none ^3^", citations);
    expect(out.text).toBe("Alpha.[1] Beta[2] both [1][2] none [3]");
    expect(out.references.map((r) => r.marker)).toEqual(["^1^", "^2^", "^1, 2^", "^3^"]);
    expect(out.cited.map((c) => c.title)).toEqual(["A", "B"]);
    expect(out.unresolved).toEqual([3]);
  });
  it("supports 0-based indexes and a custom format", () => {
    const out = mapCitations("x[REF]0[/REF]", citations, { indexBase: 0, format: (r) => ` (${r.citations[0]!.url})` });
    expect(out.text).toBe("x (https://a.example)");
  });
});

describe("think tags", () => {
  it("splits a whole text", () => {
    expect(splitThinkTags("<think>plan it</think>\n\nThe answer")).toEqual({ content: "The answer", reasoning: "plan it" });
    expect(splitThinkTags("no tags")).toEqual({ content: "no tags", reasoning: "" });
    expect(splitThinkTags("<think>unfinished")).toEqual({ content: "", reasoning: "unfinished" });
  });
  it("splits a stream whose tags are cut across chunks, same result as the whole text", () => {
    const text = "<think>step 1 < step 2</think>\nFinal <b>answer</b>";
    for (let size = 1; size <= 9; size++) {
      const s = new ThinkTagSplitter();
      let content = "";
      let reasoning = "";
      for (let i = 0; i < text.length; i += size) {
        const r = s.push(text.slice(i, i + size));
        content += r.content;
        reasoning += r.reasoning;
      }
      const r = s.flush();
      content += r.content;
      reasoning += r.reasoning;
      expect({ content, reasoning }).toEqual(splitThinkTags(text));
      expect(content).toBe("Final <b>answer</b>");
      expect(reasoning).toBe("step 1 < step 2");
    }
  });
});

describe("reasoning details and usage", () => {
  it("merges streamed items by index: text concatenates, other fields once", () => {
    const acc = mergeReasoningDetails([], [{ type: "reasoning.text", text: "Let ", format: "emu-v1", index: 0 }]);
    mergeReasoningDetails(acc, [{ type: "reasoning.text", text: "me think", index: 0 }]);
    mergeReasoningDetails(acc, [{ type: "reasoning.encrypted", data: "c2ln", format: "emu-v1", index: 1, id: "rs_1" }]);
    expect(acc).toEqual([
      { type: "reasoning.text", text: "Let me think", format: "emu-v1", index: 0 },
      { type: "reasoning.encrypted", data: "c2ln", format: "emu-v1", index: 1, id: "rs_1" },
    ]);
  });
  it("maps cache and reasoning token details", () => {
    expect(
      toUsageMetadata({
        prompt_tokens: 100,
        completion_tokens: 20,
        total_tokens: 120,
        prompt_tokens_details: { cached_tokens: 64, cache_creation_input_tokens: 8 },
        completion_tokens_details: { reasoning_tokens: 12 },
      }),
    ).toEqual({
      input_tokens: 100,
      output_tokens: 20,
      total_tokens: 120,
      input_token_details: { cache_read: 64, cache_creation: 8 },
      output_token_details: { reasoning: 12 },
    });
    expect(toUsageMetadata(undefined)).toBeUndefined();
  });
  it("turns search-documents tool arguments into documents", () => {
    const docs = searchDocumentsFromArguments(JSON.stringify({ documents: [{ title: "T", url: "https://t", content: "body" }] }));
    expect(docs).toHaveLength(1);
    expect(docs[0]!.pageContent).toBe("body");
    expect(docs[0]!.metadata).toEqual({ title: "T", url: "https://t" });
    expect(searchDocumentsFromArguments("not json")).toEqual([]);
  });
});

function bodyOf(text: string, pieceSize = text.length): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + pieceSize));
      at += pieceSize;
    },
  });
}

async function collect(stream: ReadableStream<Uint8Array>) {
  const out: unknown[] = [];
  for await (const e of parseSseJson(stream)) out.push(e);
  return out;
}

describe("SSE parser", () => {
  it("parses events split at any byte, CRLF lines, comments and multi-line data", async () => {
    const text = ': keep-alive\r\n\r\ndata: {"a":1}\r\n\r\ndata: {"b":\ndata: "é"}\n\nevent: x\ndata: [DONE]\n\n';
    for (const size of [1, 2, 3, 7, 1000]) {
      expect(await collect(bodyOf(text, size))).toEqual([{ a: 1 }, { b: "é" }]);
    }
  });
  it("raises an in-band error as StreamError (not text)", async () => {
    const text = 'data: {"a":1}\n\ndata: {"error":{"message":"upstream failed","code":"upstream_error"}}\n\ndata: [DONE]\n\n';
    const err = await collect(bodyOf(text)).catch((e) => e);
    expect(err).toBeInstanceOf(StreamError);
    expect(err.message).toMatch(/upstream failed/);
    expect(err.code).toBe("upstream_error");
  });
  it("raises StreamError when the stream ends before [DONE]", async () => {
    await expect(collect(bodyOf('data: {"a":1}\n\n'))).rejects.toThrow(/before \[DONE\]/);
    await expect(collect(bodyOf("data: {not json}\n\n"))).rejects.toBeInstanceOf(StreamError);
  });
});
