/**
 * The content-block event protocol (`streamEvents()` without a version, and LangGraph's v3 message streaming),
 * built from the same pieces as `.stream()` (./stream.ts), so reasoning (with its `reasoning_details`, kept on the
 * reasoning block and sent back from there), cost, citations (as `citation` annotations on the finished text
 * block) and headers survive on this path too. Only the first choice is reported here.
 */
import type { ChatModelStreamEvent, FinishReason } from "@langchain/core/language_models/event";
import type { AIMessageChunk, UsageMetadata } from "@langchain/core/messages";
import { citationAnnotations } from "./content-blocks.js";
import { MESSAGE_EXTRAS_METADATA_KEY, messageExtras, toolCallExtras } from "./convert.js";
import type { WebSearchCitation } from "./service-parameters.js";
import type { StreamPiece } from "./stream.js";

export function toFinishReason(reason: unknown): FinishReason {
  if (reason === "tool_calls" || reason === "function_call") return "tool_use";
  if (reason === "length") return "length";
  if (reason === "content_filter") return "content_filter";
  return "stop";
}

export async function* chatModelEvents(pieces: AsyncIterable<StreamPiece[]>): AsyncGenerator<ChatModelStreamEvent> {
  const blocks = new Map<string, { index: number; block: Record<string, unknown> }>();
  let nextIndex = 0;
  let started = false;
  let usage: UsageMetadata | undefined;
  let details: unknown;
  let extras: Record<string, unknown> | undefined;
  const callExtras = new Map<number, Record<string, unknown>>();
  let finishReason: unknown;
  const meta: Record<string, unknown> = {};
  const open = function* (key: string, initial: Record<string, unknown>) {
    let entry = blocks.get(key);
    if (!entry) {
      entry = { index: nextIndex++, block: { ...initial } };
      blocks.set(key, entry);
      yield { event: "content-block-start", index: entry.index, content: { ...initial } } as ChatModelStreamEvent;
    }
    return entry;
  };
  for await (const batch of pieces) {
    for (const piece of batch) {
      if (piece.choice !== 0) continue;
      const msg = piece.chunk.message as AIMessageChunk;
      if (!started) {
        started = true;
        yield { event: "message-start", id: msg.id };
      }
      const kw = msg.additional_kwargs as { reasoning_content?: string; reasoning_details?: unknown };
      if (kw.reasoning_content) {
        const entry = yield* open("reasoning", { type: "reasoning", reasoning: "" });
        entry.block.reasoning = (entry.block.reasoning as string) + kw.reasoning_content;
        yield { event: "content-block-delta", index: entry.index, delta: { type: "reasoning-delta", reasoning: kw.reasoning_content } };
      }
      if (kw.reasoning_details) details = kw.reasoning_details;
      // the service's own members (thought_signature...) and tool-call members, to be sent back
      const more = messageExtras(msg.additional_kwargs);
      if (more) extras = { ...extras, ...more };
      for (const raw of (kw as { tool_calls?: Array<Record<string, unknown>> }).tool_calls ?? []) {
        const found = toolCallExtras(raw);
        if (found) callExtras.set(Number(raw.index ?? 0), { ...callExtras.get(Number(raw.index ?? 0)), ...found });
      }
      if (typeof msg.content === "string" && msg.content) {
        const entry = yield* open("text", { type: "text", text: "" });
        entry.block.text = (entry.block.text as string) + msg.content;
        yield { event: "content-block-delta", index: entry.index, delta: { type: "text-delta", text: msg.content } };
      }
      for (const tc of msg.tool_call_chunks ?? []) {
        const entry = yield* open(`tool:${tc.index ?? 0}`, {
          type: "tool_call_chunk",
          id: tc.id,
          name: tc.name,
          args: "",
          index: tc.index ?? 0,
        });
        if (tc.id) entry.block.id = tc.id;
        if (tc.name) entry.block.name = tc.name;
        if (tc.args) {
          entry.block.args = (entry.block.args as string) + tc.args;
          yield { event: "content-block-delta", index: entry.index, delta: { type: "tool-call-delta", args: tc.args } };
        }
      }
      for (const [key, value] of Object.entries(msg.response_metadata)) {
        if (key === "logprobs") {
          const prev = meta.logprobs as { content?: unknown[] } | undefined;
          const next = value as { content?: unknown[] };
          meta.logprobs = prev?.content && next?.content ? { ...next, content: [...prev.content, ...next.content] } : value;
        } else meta[key] = value;
      }
      if (msg.response_metadata.finish_reason) finishReason = msg.response_metadata.finish_reason;
      if (msg.usage_metadata) {
        usage = msg.usage_metadata;
        yield { event: "usage", usage };
      }
    }
  }
  const citations = Array.isArray(meta.web_search_citations) ? (meta.web_search_citations as WebSearchCitation[]) : [];
  for (const { index, block } of [...blocks.values()].sort((a, b) => a.index - b.index)) {
    let content: Record<string, unknown> = block;
    if (block.type === "reasoning" && details !== undefined) content = { ...block, reasoning_details: details };
    if (block.type === "text" && citations.length) {
      const annotations = citationAnnotations(block.text as string, citations);
      if (annotations.length) content = { ...block, annotations };
    }
    if (block.type === "tool_call_chunk") {
      const more = callExtras.get(block.index as number);
      try {
        content = {
          type: "tool_call",
          id: block.id,
          name: block.name,
          args: JSON.parse((block.args as string) || "{}"),
          ...(more ? { extras: more } : {}),
        };
      } catch {
        content = { type: "invalid_tool_call", id: block.id, name: block.name, args: block.args, error: "arguments are not JSON" };
      }
    }
    yield { event: "content-block-finish", index, content: content as never };
  }
  if (details !== undefined && !blocks.has("reasoning")) meta.reasoning_details = details;
  if (extras) meta[MESSAGE_EXTRAS_METADATA_KEY] = extras;
  yield {
    event: "message-finish",
    reason: toFinishReason(finishReason),
    ...(usage ? { usage } : {}),
    responseMetadata: meta,
  };
}
