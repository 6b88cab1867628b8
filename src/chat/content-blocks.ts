/**
 * LangChain's standard content blocks for this service's messages (`message.contentBlocks`, and the content of
 * `outputVersion: "v1"`). Core picks a translator by `response_metadata.model_provider` from its registry (a Map at
 * `globalThis.lc_block_translators_registry`, preloaded with anthropic, openai, openrouter…; `registerTranslator`
 * is not exported, so the entry is added to that Map, the documented place). Our messages name the brand as their
 * provider, so traces name the right provider, and this translator maps what the service sends:
 *
 * - `reasoning_content` (else the text and summary items of `reasoning_details`) -> `reasoning` blocks; encrypted
 *   items stay in `additional_kwargs`, to be sent back as received;
 * - the search that ran (`web_search_citations`, `web_search_documents`) -> a `server_tool_call` (`web_search`) and
 *   its `server_tool_call_result`: run by the service, never by the agent;
 * - text -> a `text` block whose `annotations` carry one `citation` per source each `^n^`, `^i,j^` or
 *   `[REF]n[/REF]` marker cites (`url`, `title`, `citedText` from the source's snippet, the marker's `startIndex` /
 *   `endIndex`);
 * - tool calls -> `tool_call` blocks (`invalid_tool_call` for unparsable arguments); on a streamed chunk whose
 *   calls are still arriving, `tool_call_chunk` blocks.
 *
 * Streamed chunks: each metadata member is on one chunk only, and blocks carry an `index` so that `concat` merges
 * a v1 stream into one reasoning block and one text block. A single chunk never takes its reasoning from
 * `reasoning_details` (the closing chunk carries them whole after the reasoning was streamed). The citations of a
 * stream come on another chunk than its text, so the merged message (`concat`) is where annotations appear.
 */
import { type AIMessage, AIMessageChunk, type BaseMessage, type ContentBlock } from "@langchain/core/messages";
import type { ChatGenerationChunk } from "@langchain/core/outputs";
import type { Document } from "@langchain/core/documents";
import { mapCitations } from "./citations.js";
import type { WebSearchCitation } from "./service-parameters.js";

/** The shape core's registry holds (not exported by core). */
export interface ContentBlockTranslator {
  translateContent(message: AIMessage): ContentBlock.Standard[];
  translateContentChunk(message: AIMessageChunk): ContentBlock.Standard[];
}

/** `index` of the blocks of a streamed chunk (stable across the chunks of one answer, so `concat` merges them). */
export const BLOCK_INDEX = {
  reasoning: "reasoning",
  text: "text",
  searchCall: "web_search_call",
  searchResult: "web_search_result",
} as const;
/** id of the `server_tool_call` block of the service's web search (the live service's own id for it) */
export const SEARCH_CALL_BLOCK_ID = "web_search_call";

type Block = ContentBlock.Standard & Record<string, unknown>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Visible reasoning of `reasoning_details`: text and summary items (encrypted ones have none). */
function reasoningFromDetails(details: unknown): string[] {
  if (!Array.isArray(details)) return [];
  const out: string[] = [];
  for (const d of details) {
    if (!isRecord(d)) continue;
    const text = d.type === "reasoning.summary" ? d.summary : d.type === "reasoning.text" ? d.text : undefined;
    if (typeof text === "string" && text) out.push(text);
  }
  return out;
}

/** The `citation` annotations of `text`: one per source each marker cites. */
export function citationAnnotations(text: string, citations: readonly WebSearchCitation[]): ContentBlock.Citation[] {
  const annotations: ContentBlock.Citation[] = [];
  for (const ref of mapCitations(text, citations).references) {
    for (const source of ref.citations) {
      annotations.push({
        type: "citation",
        source: "web_search",
        url: source.url,
        title: source.title,
        startIndex: ref.start,
        endIndex: ref.end,
        ...(typeof source.content === "string" && source.content ? { citedText: source.content } : {}),
      });
    }
  }
  return annotations;
}

function citationsOf(meta: Record<string, unknown>): WebSearchCitation[] {
  const list = meta.web_search_citations;
  return Array.isArray(list) ? list.filter((c): c is WebSearchCitation => isRecord(c) && typeof c.url === "string") : [];
}

/** Documents as plain records (`pageContent` as `content`): blocks must serialize as plain JSON. */
function plainDocuments(list: unknown): Record<string, unknown>[] {
  if (!Array.isArray(list)) return [];
  return list.filter(isRecord).map((d) => {
    const doc = d as unknown as Document;
    return { ...(isRecord(doc.metadata) ? doc.metadata : {}), content: typeof doc.pageContent === "string" ? doc.pageContent : "" };
  });
}

function textOf(message: BaseMessage): string[] {
  if (typeof message.content === "string") return message.content ? [message.content] : [];
  const out: string[] = [];
  for (const part of message.content) {
    if (isRecord(part) && part.type === "text" && typeof part.text === "string" && part.text) out.push(part.text);
  }
  return out;
}

/** A streamed call is whole when it has its id and name and its arguments parse. */
function wholeCall(chunk: { id?: string; name?: string; args?: string }): boolean {
  if (!chunk.id || !chunk.name || !chunk.args) return false;
  try {
    JSON.parse(chunk.args);
    return true;
  } catch {
    return false;
  }
}

/** The standard blocks of one of this service's messages (or streamed chunks, merged or not). */
export function toStandardBlocks(message: AIMessage): ContentBlock.Standard[] {
  const isChunk = AIMessageChunk.isInstance(message);
  const at = (index: string | number) => (isChunk ? { index } : {});
  const meta = (message.response_metadata ?? {}) as Record<string, unknown>;
  const kw = message.additional_kwargs as { reasoning_content?: unknown; reasoning_details?: unknown };
  const blocks: Block[] = [];

  if (typeof kw.reasoning_content === "string" && kw.reasoning_content) {
    blocks.push({ type: "reasoning", reasoning: kw.reasoning_content, ...at(BLOCK_INDEX.reasoning) });
  } else if (!isChunk) {
    for (const reasoning of reasoningFromDetails(kw.reasoning_details)) blocks.push({ type: "reasoning", reasoning });
  }

  const citations = citationsOf(meta);
  const documents = plainDocuments(meta.web_search_documents);
  if (citations.length || documents.length) {
    blocks.push({ type: "server_tool_call", id: SEARCH_CALL_BLOCK_ID, name: "web_search", args: {}, ...at(BLOCK_INDEX.searchCall) });
    const output: Record<string, unknown> = {};
    if (citations.length) output.citations = citations;
    if (documents.length) output.documents = documents;
    blocks.push({
      type: "server_tool_call_result",
      toolCallId: SEARCH_CALL_BLOCK_ID,
      status: "success",
      output,
      ...at(BLOCK_INDEX.searchResult),
    });
  }

  for (const text of textOf(message)) {
    const annotations = citations.length ? citationAnnotations(text, citations) : [];
    blocks.push({ type: "text", text, ...(annotations.length ? { annotations } : {}), ...at(BLOCK_INDEX.text) });
  }

  const chunks = isChunk ? ((message as AIMessageChunk).tool_call_chunks ?? []) : [];
  if (chunks.length && !chunks.every(wholeCall)) {
    for (const c of chunks) blocks.push({ type: "tool_call_chunk", id: c.id, name: c.name, args: c.args, index: c.index });
  } else {
    for (const call of message.tool_calls ?? []) blocks.push({ type: "tool_call", id: call.id, name: call.name, args: call.args });
    for (const bad of message.invalid_tool_calls ?? []) {
      blocks.push({ type: "invalid_tool_call", id: bad.id, name: bad.name, args: bad.args, error: bad.error });
    }
  }
  return blocks as ContentBlock.Standard[];
}

export const SERVICE_BLOCK_TRANSLATOR: ContentBlockTranslator = {
  translateContent: toStandardBlocks,
  translateContentChunk: toStandardBlocks,
};

type TranslatorRegistry = Map<string, ContentBlockTranslator>;

/**
 * Adds the translator under `provider` (the brand) to core's registry, once. A brand that is already a known
 * provider's name (`openai`, `anthropic`…) keeps that provider's translator: replacing it would change how every
 * other model's messages read in this process.
 */
export function registerContentBlockTranslator(provider: string): void {
  // core creates the registry when its messages module loads; `AIMessage` above has loaded it
  const registry = (globalThis as { lc_block_translators_registry?: TranslatorRegistry }).lc_block_translators_registry;
  if (!registry || registry.has(provider)) return;
  registry.set(provider, SERVICE_BLOCK_TRANSLATOR);
}

/**
 * A v1 stream (core turns each chunk into standard blocks): a stream's citations come on another chunk than its
 * text, so its last chunk carries, already as v1 content (core keeps a chunk marked `output_version: "v1"` as it
 * is), its own blocks and the `citation` annotations of the whole text on a text block with the stream's text
 * `index`, which `concat` merges into the text block. One choice only: with `n > 1` the answers interleave.
 */
export async function* withCitationAnnotations(chunks: AsyncIterable<ChatGenerationChunk>): AsyncGenerator<ChatGenerationChunk> {
  let last: ChatGenerationChunk | undefined;
  let text = "";
  let citations: WebSearchCitation[] = [];
  for await (const chunk of chunks) {
    if (last) yield last;
    last = chunk;
    for (const part of textOf(chunk.message)) text += part;
    const found = citationsOf((chunk.message.response_metadata ?? {}) as Record<string, unknown>);
    if (found.length) citations = found;
  }
  if (!last) return;
  const annotations = citations.length ? citationAnnotations(text, citations) : [];
  if (annotations.length && AIMessageChunk.isInstance(last.message)) {
    const message = last.message;
    message.content = [
      ...toStandardBlocks(message),
      { type: "text", text: "", index: BLOCK_INDEX.text, annotations },
    ] as typeof message.content;
    message.response_metadata = { ...message.response_metadata, output_version: "v1" };
  }
  yield last;
}
