/**
 * Wire <-> LangChain conversions. The OpenAI converters of `@langchain/openai` do the common part; this file
 * adds what they drop: `reasoning_content`/`reasoning_details` going back out on assistant messages
 * (langchainjs #10883, #11699), `reasoning_details` coming in, the service's other assistant-message and
 * tool-call members (`thought_signature`...) both ways, tool message content as the string the service
 * takes, core's `developer` messages (system messages marked `__openai_role__: "developer"`) sent with the
 * `developer` role, cache/reasoning token details, and the service's search-documents tool call.
 */
import { HumanMessage, type BaseMessage, type UsageMetadata } from "@langchain/core/messages";
import { Document } from "@langchain/core/documents";
import { convertMessagesToCompletionsMessageParams } from "@langchain/openai";
import { ValidationError } from "../http/errors.js";
import { checkMessageParams } from "./message-rules.js";

/** One item of `reasoning_details` (opaque: must go back exactly as received). */
export interface ReasoningDetail {
  type: string;
  id?: string;
  index?: number;
  text?: string;
  data?: string;
  format?: string;
  [key: string]: unknown;
}

export interface WireUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number | null; cache_creation_input_tokens?: number | null } | null;
  completion_tokens_details?: { reasoning_tokens?: number | null } | null;
  [key: string]: unknown;
}

export interface WireToolCall {
  id?: string;
  index?: number;
  type?: string;
  function?: { name?: string; arguments?: string };
}

export interface WireMessage {
  role?: string;
  content?: string | Array<{ type: string; text?: string }> | null;
  reasoning_content?: string | null;
  reasoning_details?: ReasoningDetail[] | null;
  tool_calls?: WireToolCall[] | null;
  name?: string | null;
  [key: string]: unknown;
}

/** Request message param (OpenAI shape plus the reasoning fields). */
export type WireMessageParam = Record<string, unknown> & { role: string };

const REASONING_BLOCK_TYPES = new Set(["reasoning", "thinking", "reasoning_content"]);

/** Reasoning carried by an assistant message: from `additional_kwargs`, else from v1 reasoning blocks. */
function reasoningOf(message: BaseMessage): { content?: string; details?: unknown[] } {
  const kw = message.additional_kwargs as { reasoning_content?: unknown; reasoning_details?: unknown };
  let content = typeof kw.reasoning_content === "string" ? kw.reasoning_content : undefined;
  let details = Array.isArray(kw.reasoning_details) ? kw.reasoning_details : undefined;
  if ((content === undefined || details === undefined) && Array.isArray(message.content)) {
    // v1 output (streamEvents path): reasoning lives in content blocks; we put reasoning_details on them.
    let text = "";
    let found = false;
    for (const block of message.content as Array<Record<string, unknown>>) {
      if (!block || typeof block !== "object" || !REASONING_BLOCK_TYPES.has(block.type as string)) continue;
      found = true;
      const t = block.reasoning ?? block.thinking ?? block.text;
      if (typeof t === "string") text += t;
      if (details === undefined && Array.isArray(block.reasoning_details)) details = block.reasoning_details;
    }
    if (content === undefined && found && text) content = text;
  }
  // v1 output with no reasoning streamed (`strip_thinking_response` removes `reasoning_content`): the details are
  // kept in the response metadata (./stream-events.ts), and still go back
  const kept = (message.response_metadata as Record<string, unknown> | undefined)?.reasoning_details;
  if (details === undefined && Array.isArray(kept)) details = kept;
  return { content, details };
}

/**
 * Assistant-message members that the converters or this file handle, and LangChain/OpenAI bookkeeping that
 * lives in `additional_kwargs` but is no wire member. Every other member the service returns
 * (`thought_signature`: "pass it back exactly as received") is kept in `additional_kwargs` and sent back.
 */
const HANDLED_MESSAGE_MEMBERS = new Set([
  "role",
  "content",
  "name",
  "tool_calls",
  "reasoning_content",
  "reasoning_details",
  "function_call",
  "audio",
  "parsed",
]);
/** Tool-call members the converters rebuild from LangChain's `tool_calls`; others (`extra_content`...) are kept. */
const HANDLED_TOOL_CALL_MEMBERS = new Set(["id", "type", "function", "index"]);

/** The members of a wire assistant message (or stream delta) that no converter knows, null ones left out. */
export function messageExtras(message: Record<string, unknown>): Record<string, unknown> | undefined {
  let extras: Record<string, unknown> | undefined;
  // for...in, not Object.entries: called for every stream delta, and a JSON object has no inherited members
  for (const key in message) {
    const value = message[key];
    if (HANDLED_MESSAGE_MEMBERS.has(key) || key.startsWith("__") || value === null || value === undefined) continue;
    (extras ??= {})[key] = value;
  }
  return extras;
}

/** The members of a wire tool call that the converters do not rebuild (`extra_content`...). */
export function toolCallExtras(call: Record<string, unknown>): Record<string, unknown> | undefined {
  let extras: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(call)) {
    if (HANDLED_TOOL_CALL_MEMBERS.has(key) || value === null || value === undefined) continue;
    (extras ??= {})[key] = value;
  }
  return extras;
}

/** Where v1 messages (content-block event streaming) keep the assistant message's extra members. */
export const MESSAGE_EXTRAS_METADATA_KEY = "message_extras";

/**
 * Puts the service's own members back on the assistant message and its tool calls, from where they are kept:
 * `additional_kwargs` (and its raw `tool_calls`), or for v1 messages `response_metadata.message_extras` and
 * the `extras` of `tool_call` content blocks.
 */
function restoreExtras(message: BaseMessage, param: WireMessageParam): void {
  const v1 = (message.response_metadata as Record<string, unknown> | undefined)?.[MESSAGE_EXTRAS_METADATA_KEY] as
    | Record<string, unknown>
    | undefined;
  for (const source of [messageExtras(message.additional_kwargs), v1 && typeof v1 === "object" ? v1 : undefined]) {
    for (const [key, value] of Object.entries(source ?? {})) if (!(key in param)) param[key] = value;
  }
  const calls = param.tool_calls;
  if (!Array.isArray(calls)) return;
  const raw = Array.isArray(message.additional_kwargs.tool_calls)
    ? (message.additional_kwargs.tool_calls as Array<Record<string, unknown>>)
    : [];
  const blocks = Array.isArray(message.content) ? (message.content as Array<Record<string, unknown>>) : [];
  for (const call of calls as Array<Record<string, unknown>>) {
    const fromKwargs = raw.find((r) => r && r.id === call.id);
    const block = blocks.find((b) => b && b.type === "tool_call" && b.id === call.id);
    const extras = { ...(block?.extras as Record<string, unknown> | undefined), ...(fromKwargs ? toolCallExtras(fromKwargs) : undefined) };
    for (const [key, value] of Object.entries(extras)) if (!(key in call)) call[key] = value;
  }
}

/**
 * The text parts of a system, developer or assistant message as the wire has them (`{ type: "text", text }`, with
 * `cache_control` when set): v1 text blocks also carry `annotations` (citations), `index` or `id`, which are
 * LangChain's, not the service's; empty parts are dropped (the service wants at least one character).
 */
function textParts(content: unknown[]): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const part of content) {
    const p = part as { type?: unknown; text?: unknown; cache_control?: unknown } | null;
    if (p?.type !== "text") {
      out.push(part as Record<string, unknown>);
      continue;
    }
    if (typeof p.text !== "string" || p.text === "") continue;
    out.push({ type: "text", text: p.text, ...(p.cache_control ? { cache_control: p.cache_control } : {}) });
  }
  return out;
}

/**
 * A tool message's content as the string the service takes (LangChain allows arrays of text blocks).
 * Anything but text has no string form: refused here, before the request is sent.
 */
function toolContentString(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return content == null ? "" : String(content);
  return content
    .map((part: unknown) => {
      if (typeof part === "string") return part;
      const p = part as { type?: unknown; text?: unknown } | null;
      if (p && p.type === "text" && typeof p.text === "string") return p.text;
      throw new ValidationError(
        `a tool message's content must be text (the service takes a string); got a ${JSON.stringify(p?.type ?? typeof part)} part`,
      );
    })
    .join("");
}

/**
 * LangChain messages -> request `messages`. Each message goes through the `@langchain/openai` converter;
 * assistant messages then get their `reasoning_content`, `reasoning_details` and the service's other members
 * (`thought_signature`, tool-call extras) back (the converter drops them; the service needs them unchanged on
 * tool-call turns to verify thought signatures); tool messages get string content. A message the service would
 * drop or refuse is a `MessageRefusedError` (./message-rules.ts).
 */
export function toWireMessages(messages: readonly BaseMessage[], model?: string): WireMessageParam[] {
  const out: WireMessageParam[] = [];
  const tally = { videos: 0 };
  for (const [index, message] of messages.entries()) {
    const params = convertMessagesToCompletionsMessageParams({ messages: [withUrlFileParts(message)], model }) as WireMessageParam[];
    const type = message.getType();
    for (const p of params) {
      if (p.role !== "user" && p.role !== "tool" && Array.isArray(p.content)) p.content = textParts(p.content);
    }
    if (type === "system" && message.additional_kwargs.__openai_role__ === "developer") {
      // core's `developer` messages (`["developer", "…"]`, `{ role: "developer" }`): system messages marked so
      for (const p of params) if (p.role === "system") p.role = "developer";
    }
    if (type === "ai") {
      const first = params[0];
      if (first) {
        const { content, details } = reasoningOf(message);
        if (content !== undefined) first.reasoning_content = content;
        if (details !== undefined) first.reasoning_details = details;
        if (Array.isArray(first.content) && first.content.length === 0) first.content = "";
        restoreExtras(message, first);
      }
    } else if (type === "tool") {
      for (const p of params) if (p.role === "tool") p.content = toolContentString(p.content);
    }
    // what the service would drop or refuse is refused here, unsent (./message-rules.ts)
    checkMessageParams(params, index, tally);
    for (const p of params) out.push(p);
  }
  return out;
}

/**
 * `file_data` may be "a data URL ... or a publicly accessible URL" (spec), but the OpenAI converter refuses URL
 * file blocks (standard v0 `source_type: "url"` or v1 `url`): they become file parts here, before it runs.
 */
function withUrlFileParts(message: BaseMessage): BaseMessage {
  if (message.getType() !== "human" || !Array.isArray(message.content)) return message;
  let changed = false;
  type Block = {
    type?: unknown;
    url?: unknown;
    source_type?: unknown;
    filename?: unknown;
    metadata?: { filename?: unknown; name?: unknown };
  };
  const content = (message.content as Block[]).map((block) => {
    const isUrlFile =
      block?.type === "file" &&
      typeof block.url === "string" &&
      /^https?:\/\//i.test(block.url) &&
      (block.source_type === undefined || block.source_type === "url");
    if (!isUrlFile) return block;
    changed = true;
    const filename = block.metadata?.filename ?? block.metadata?.name ?? block.filename;
    return { type: "file", file: { file_data: block.url, ...(typeof filename === "string" ? { filename } : {}) } };
  });
  if (!changed) return message;
  const { name, id, additional_kwargs, response_metadata } = message;
  return new HumanMessage({ content: content as never, name, id, additional_kwargs, response_metadata });
}

/** Wire usage -> `usage_metadata` with cache and reasoning details. */
export function toUsageMetadata(usage: WireUsage | undefined | null): UsageMetadata | undefined {
  if (!usage || typeof usage !== "object") return undefined;
  const input = usage.prompt_tokens ?? 0;
  const output = usage.completion_tokens ?? 0;
  const result: UsageMetadata = {
    input_tokens: input,
    output_tokens: output,
    total_tokens: usage.total_tokens ?? input + output,
  };
  const cacheRead = usage.prompt_tokens_details?.cached_tokens;
  const cacheCreation = usage.prompt_tokens_details?.cache_creation_input_tokens;
  if (typeof cacheRead === "number" || typeof cacheCreation === "number") {
    result.input_token_details = {
      ...(typeof cacheRead === "number" ? { cache_read: cacheRead } : {}),
      ...(typeof cacheCreation === "number" ? { cache_creation: cacheCreation } : {}),
    };
  }
  const reasoning = usage.completion_tokens_details?.reasoning_tokens;
  if (typeof reasoning === "number") result.output_token_details = { reasoning };
  return result;
}

/**
 * Where each numeric `index` first sits in a list being merged, kept beside the list: a stream whose every delta
 * names a new index would otherwise search the whole list per item (quadratic: 40000 deltas took 3.5 s). Rebuilt
 * when the list was changed elsewhere.
 */
const detailPositionsOf = new WeakMap<ReasoningDetail[], { length: number; at: Map<number, number> }>();

function detailPositions(acc: ReasoningDetail[]): { length: number; at: Map<number, number> } {
  let known = detailPositionsOf.get(acc);
  if (!known || known.length !== acc.length) {
    const at = new Map<number, number>();
    acc.forEach((x, i) => {
      if (typeof x.index === "number" && !Number.isNaN(x.index) && !at.has(x.index)) at.set(x.index, i);
    });
    known = { length: acc.length, at };
    detailPositionsOf.set(acc, known);
  }
  return known;
}

/**
 * Merges streamed `reasoning_details` items into the whole list: items with the same `index` are one item
 * whose `text`/`summary`/`data` arrive in pieces; other fields are kept as first received.
 */
export function mergeReasoningDetails(acc: ReasoningDetail[], delta: readonly ReasoningDetail[]): ReasoningDetail[] {
  const byIndex = detailPositions(acc);
  for (const item of delta) {
    if (!item || typeof item !== "object") continue;
    const at = typeof item.index === "number" ? (byIndex.at.get(item.index) ?? -1) : -1;
    if (at === -1) {
      if (typeof item.index === "number" && !Number.isNaN(item.index)) byIndex.at.set(item.index, acc.length);
      acc.push({ ...item });
      byIndex.length = acc.length;
      continue;
    }
    const target = acc[at]!;
    for (const [key, value] of Object.entries(item)) {
      if (value === undefined || value === null) continue;
      const prev = target[key];
      if (prev === undefined || prev === null) target[key] = value;
      else if ((key === "text" || key === "summary" || key === "data") && typeof prev === "string" && typeof value === "string") {
        target[key] = prev + value;
      }
    }
  }
  return acc;
}

/** Search results carried by the search-documents tool call (./search-documents.ts), as LangChain documents. */
export function searchDocumentsFromArguments(args: string | undefined): Document[] {
  if (!args) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    return [];
  }
  let items: unknown[] | undefined;
  if (Array.isArray(parsed)) items = parsed;
  else if (parsed && typeof parsed === "object") {
    const obj = parsed as Record<string, unknown>;
    items = (["documents", "results", "search_results", "citations"] as const).map((k) => obj[k]).find(Array.isArray) as
      | unknown[]
      | undefined;
    items ??= Object.values(obj).find(Array.isArray) as unknown[] | undefined;
  }
  return (items ?? []).flatMap((item) => {
    if (!item || typeof item !== "object") return [];
    const { content, text, snippet, pageContent, page_content, ...metadata } = item as Record<string, unknown>;
    const body = [pageContent, page_content, content, text, snippet].find((v) => typeof v === "string") as string | undefined;
    return [new Document({ pageContent: body ?? "", metadata })];
  });
}
