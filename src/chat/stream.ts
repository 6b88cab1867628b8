/**
 * A streamed chat completion (SSE) as LangChain chunks, tagged with the choice each belongs to. Merge-safety:
 * `concat` adds numbers and joins strings, so anything that is not a delta (headers, citations, usage, cost, the
 * parameters echo, model name, finish reason, the whole `reasoning_details`) is put on exactly one chunk. Nothing
 * reaches the caller (nor its callbacks) before the first text, reasoning or tool-call delta (`progress.started`),
 * so an attempt that fails before it can be replaced by the next one without a trace (./stream-errors.ts).
 */
import { AIMessageChunk, type ToolCallChunk, type UsageMetadata } from "@langchain/core/messages";
import { ChatGenerationChunk } from "@langchain/core/outputs";
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import type { ServiceResponseHeaders } from "../http/headers.js";
import { requestMetadata, type ChatReadContext } from "./completion.js";
import {
  mergeReasoningDetails,
  messageExtras,
  searchDocumentsFromArguments,
  toUsageMetadata,
  type ReasoningDetail,
  type WireToolCall,
  type WireUsage,
} from "./convert.js";
import { finishReasonWithoutDocuments, SearchDocumentsFilter } from "./search-documents.js";
import type { ServiceParametersEcho } from "./service-parameters.js";
import { parseSseBatches } from "./sse.js";
import { refusalError, withTypedStreamErrors, type StreamProgress } from "./stream-errors.js";
import { ThinkTagSplitter } from "./think-tags.js";
import type { ServiceCost, WireCompletion } from "./types.js";
import { checkChunk } from "./wire-check.js";

/** One streamed piece: a LangChain chunk tagged with the choice it belongs to. */
export interface StreamPiece {
  choice: number;
  chunk: ChatGenerationChunk;
}

/** Per-choice state while a stream is read. */
interface ChoiceState {
  index: number;
  finishReason?: string;
  stopReason?: string;
  details?: ReasoningDetail[];
  /** the service's other delta members (`thought_signature`...), put whole on the closing chunk */
  extras?: Record<string, unknown>;
  think?: ThinkTagSplitter;
  /** keeps the search-documents tool call out of the tool calls */
  docs?: SearchDocumentsFilter;
}

export interface StreamReadOptions {
  /** put usage (and cost) on the closing chunk */
  streamUsage: boolean;
  signal?: AbortSignal;
  runManager?: CallbackManagerForLLMRun;
  progress: StreamProgress;
  maxEventBytes?: number;
}

function toolCallChunks(calls: WireToolCall[] | undefined): ToolCallChunk[] | undefined {
  return calls?.map((c) => ({ type: "tool_call_chunk", name: c.function?.name, args: c.function?.arguments, id: c.id, index: c.index }));
}

/**
 * A text delta's chunk, the same fields as the general case (content, id, `model_provider`), built through
 * core's string form: on Node 20 its fields-object form (an object spread plus added members) costs ~10-30 us
 * a chunk in V8's slow path, against ~1 us for the string form. The id goes on the public members, the message's
 * and its serialized fields' (`lc_kwargs`, where the constructor would have put it), as the fields form has it.
 */
function textChunk(content: string, id: string | undefined, provider: string): AIMessageChunk {
  const message = new AIMessageChunk(content);
  message.response_metadata.model_provider = provider;
  if (id !== undefined) {
    message.id = id;
    message.lc_kwargs.id = id;
  }
  return message;
}

/** Reads one streamed answer; yields the pieces of each network read (one async step per read, not per chunk). */
export async function* readChatStream(
  response: Response,
  headers: ServiceResponseHeaders,
  ctx: ChatReadContext,
  options: StreamReadOptions,
): AsyncGenerator<StreamPiece[]> {
  const { streamUsage, runManager, progress } = options;
  const paramsKey = ctx.names.parameters;
  const docsTool = ctx.names.webSearchDocumentsTool;
  const states = new Map<number, ChoiceState>();
  let headersPending = true;
  let citationsSent = false;
  let id: string | undefined;
  let model: string | undefined;
  let usage: WireUsage | undefined;
  let cost: ServiceCost | undefined;
  let echo: ServiceParametersEcho | undefined;
  let promptLogprobs: unknown;
  let systemFingerprint: string | undefined;

  let out: StreamPiece[] = [];
  /** each choice's content so far (kept on a content-filter error) */
  const partials = new Map<number, string>();
  const emit = (choice: number, chunk: AIMessageChunk, text: string): void => {
    out.push({ choice, chunk: new ChatGenerationChunk({ message: chunk, text }) });
    if (text) partials.set(choice, (partials.get(choice) ?? "") + text);
  };
  /** hands the pieces so far to the callbacks, then to the caller */
  const deliver = async (): Promise<StreamPiece[]> => {
    const pieces = out;
    out = [];
    if (runManager) {
      for (const { choice, chunk } of pieces) {
        await runManager.handleLLMNewToken(chunk.text, { prompt: 0, completion: choice }, undefined, undefined, undefined, { chunk });
      }
    }
    return pieces;
  };
  const baseMeta = (): Record<string, unknown> => {
    const meta: Record<string, unknown> = { model_provider: ctx.provider };
    if (headersPending) {
      meta.headers = headers;
      headersPending = false;
    }
    return meta;
  };

  const batches = parseSseBatches<WireCompletion>(response.body, { signal: options.signal, headers, maxEventBytes: options.maxEventBytes });
  // in-band errors typed (model overloaded, content filter), with the content so far
  for await (const batch of withTypedStreamErrors(batches, () => partials.get(0) ?? "")) {
    for (const data of batch) {
      checkChunk(data, paramsKey, headers);
      id ??= data.id;
      model ??= data.model;
      if (data.usage) usage = data.usage;
      if (data.cost) cost = data.cost;
      if (data.prompt_logprobs != null) promptLogprobs = data.prompt_logprobs;
      if (data.system_fingerprint) systemFingerprint ??= data.system_fingerprint;
      const echoPart = data[paramsKey] as ServiceParametersEcho | undefined;
      if (echoPart && typeof echoPart === "object") {
        echo = { ...echo, ...echoPart };
        if (!citationsSent && Array.isArray(echoPart.web_search_citations)) {
          // Search results, wherever they come (include_search_results_in_stream: live at the end, seed first).
          citationsSent = true;
          const meta = baseMeta();
          meta.web_search_citations = echoPart.web_search_citations;
          emit(0, new AIMessageChunk({ content: "", id, response_metadata: meta }), "");
        }
      }
      for (const choice of data.choices ?? []) {
        const index = choice.index ?? 0;
        let state = states.get(index);
        if (!state) {
          state = { index };
          if (ctx.splitThinkTags) state.think = new ThinkTagSplitter();
          states.set(index, state);
        }
        if (choice.finish_reason) state.finishReason = choice.finish_reason;
        if (choice.stop_reason) state.stopReason = choice.stop_reason;
        const delta = choice.delta;
        if (!delta) continue;
        let content = typeof delta.content === "string" ? delta.content : "";
        let reasoning = typeof delta.reasoning_content === "string" ? delta.reasoning_content : "";
        if (state.think && content) {
          const split = state.think.push(content);
          content = split.content;
          reasoning += split.reasoning;
        }
        if (Array.isArray(delta.reasoning_details) && delta.reasoning_details.length) {
          state.details = mergeReasoningDetails(state.details ?? [], delta.reasoning_details);
        }
        // other members: string pieces concatenate (delta semantics), anything else is taken as sent
        const extras = messageExtras(delta);
        if (extras) {
          const acc = (state.extras ??= {});
          for (const key in extras) {
            const prev = acc[key];
            const value = extras[key];
            acc[key] = typeof prev === "string" && typeof value === "string" ? prev + value : value;
          }
        }
        let toolCalls: WireToolCall[] | undefined;
        if (Array.isArray(delta.tool_calls) && delta.tool_calls.length) {
          toolCalls = (state.docs ??= new SearchDocumentsFilter(docsTool)).push(delta.tool_calls) as WireToolCall[] | undefined;
        }
        const hasLogprobs = choice.logprobs != null;
        if (!content && !reasoning && !toolCalls && !hasLogprobs) continue;
        if (content || reasoning || toolCalls) progress.started = true;
        if (!reasoning && !toolCalls && !hasLogprobs && !headersPending) {
          emit(index, textChunk(content, id, ctx.provider), content);
          continue;
        }
        const additional_kwargs: Record<string, unknown> = {};
        if (reasoning) additional_kwargs.reasoning_content = reasoning;
        if (toolCalls) additional_kwargs.tool_calls = toolCalls;
        const meta = baseMeta();
        if (hasLogprobs) meta.logprobs = choice.logprobs;
        const chunk = new AIMessageChunk({
          content,
          id,
          additional_kwargs,
          tool_call_chunks: toolCallChunks(toolCalls),
          response_metadata: meta,
        });
        emit(index, chunk, content);
      }
    }
    if (out.length && progress.started) yield await deliver();
  }
  const refused = [...states.values()].find((s) => s.finishReason === "content_filter");
  if (refused) throw refusalError(partials.get(refused.index) ?? "", { finish_reason: refused.finishReason, usage, cost }, headers);

  // Closing chunks: one per choice with what is not a delta; choice 0 also carries the request-level data.
  if (states.size === 0) states.set(0, { index: 0 });
  const ordered = [...states.values()].sort((a, b) => a.index - b.index);
  for (const state of ordered) {
    let content = "";
    const additional_kwargs: Record<string, unknown> = {};
    if (state.think) {
      const rest = state.think.flush();
      content = rest.content;
      if (rest.reasoning) additional_kwargs.reasoning_content = rest.reasoning;
    }
    if (state.details) additional_kwargs.reasoning_details = state.details;
    if (state.extras) Object.assign(additional_kwargs, state.extras);
    // a `web_search` call held back whose arguments never parsed is a (broken) tool call after all
    const released = state.docs?.flush() as WireToolCall[] | undefined;
    if (released) additional_kwargs.tool_calls = released;
    const meta = baseMeta();
    meta.model = model; // on this one chunk only, as model_name: concat joins strings
    meta.model_name = model;
    const finishReason = finishReasonWithoutDocuments(state.finishReason, !!state.docs?.found, !!state.docs?.otherCalls);
    if (finishReason) meta.finish_reason = finishReason;
    if (state.stopReason) meta.stop_reason = state.stopReason;
    if (state.docs?.found) meta.web_search_documents = state.docs.documentsArguments.flatMap((a) => searchDocumentsFromArguments(a));
    let usageMetadata: UsageMetadata | undefined;
    if (state.index === ordered[0]!.index) {
      Object.assign(
        meta,
        requestMetadata(ctx.names, {
          usage: streamUsage ? usage : undefined,
          cost,
          echo,
          citations: citationsSent ? undefined : echo?.web_search_citations,
          promptLogprobs,
          systemFingerprint,
        }),
      );
      if (streamUsage) usageMetadata = toUsageMetadata(usage);
    }
    const chunk = new AIMessageChunk({
      content,
      id,
      additional_kwargs,
      tool_call_chunks: toolCallChunks(released),
      response_metadata: meta,
      usage_metadata: usageMetadata,
    });
    emit(state.index, chunk, content);
  }
  yield await deliver();
}
