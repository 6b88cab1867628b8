/**
 * A JSON chat completion as LangChain's `ChatResult`: one `AIMessage` per choice with its reasoning
 * (`reasoning_content`, `reasoning_details`, the service's other members such as `thought_signature`, kept to be
 * sent back), tool calls (the search-documents call taken out into `web_search_documents`), legacy `<think>`
 * blocks split off, and the request-level metadata (usage, cost, the parameters echo, citations, headers) that
 * the stream path (./stream.ts) puts on exactly one chunk. A refused answer is a `ContentFilterError`.
 */
import { AIMessage, type InvalidToolCall, type ToolCall } from "@langchain/core/messages";
import type { ChatGeneration, ChatResult } from "@langchain/core/outputs";
import { makeInvalidToolCall, parseToolCall } from "@langchain/core/output_parsers/openai_tools";
import type { Document } from "@langchain/core/documents";
import type { BrandNames } from "../config.js";
import { ResponseFormatError } from "../http/errors.js";
import type { ServiceResponseHeaders } from "../http/headers.js";
import { messageExtras, searchDocumentsFromArguments, toUsageMetadata, type WireMessage, type WireUsage } from "./convert.js";
import { finishReasonWithoutDocuments, takeSearchDocumentsCalls } from "./search-documents.js";
import type { ServiceParametersEcho, WebSearchCitation } from "./service-parameters.js";
import { refusalError } from "./stream-errors.js";
import { splitThinkTags } from "./think-tags.js";
import type { ServiceCost, WireCompletion } from "./types.js";
import { checkCompletion } from "./wire-check.js";

/** What reading an answer needs of the model. */
export interface ChatReadContext {
  names: BrandNames;
  /** `response_metadata.model_provider`: the brand, whose content-block translator reads the message */
  provider: string;
  /** split legacy `<think>` blocks out of the content */
  splitThinkTags: boolean;
}

export function isEmpty(obj: object | undefined): boolean {
  if (!obj) return true;
  for (const _ in obj) return false;
  return true;
}

/** Request-level response metadata, identical on the JSON and stream paths. */
export function requestMetadata(
  names: BrandNames,
  data: {
    usage?: WireUsage;
    cost?: ServiceCost;
    echo?: ServiceParametersEcho;
    citations?: WebSearchCitation[];
    promptLogprobs?: unknown;
    systemFingerprint?: string;
  },
): Record<string, unknown> {
  const meta: Record<string, unknown> = {};
  if (data.usage) meta.usage = data.usage;
  if (data.cost) meta.cost = { usd: data.cost.usd, diem: data.cost.diem };
  if (data.echo && !isEmpty(data.echo)) meta[names.parameters] = data.echo;
  if (data.citations) meta.web_search_citations = data.citations;
  if (data.promptLogprobs !== undefined && data.promptLogprobs !== null) meta.prompt_logprobs = data.promptLogprobs;
  if (data.systemFingerprint) meta.system_fingerprint = data.systemFingerprint;
  return meta;
}

/** `llmOutput.tokenUsage` as ChatOpenAI reports it. */
export function llmOutputOf(
  usage: { input_tokens: number; output_tokens: number; total_tokens: number } | undefined,
): ChatResult["llmOutput"] {
  return usage
    ? { tokenUsage: { promptTokens: usage.input_tokens, completionTokens: usage.output_tokens, totalTokens: usage.total_tokens } }
    : undefined;
}

/** Removes the search-documents tool call (live or seed) from a wire message; returns its documents. */
function takeDocuments(wire: WireMessage, names: BrandNames): Document[] | undefined {
  const args = takeSearchDocumentsCalls(wire, names.webSearchDocumentsTool);
  return args === undefined ? undefined : args.flatMap((a) => searchDocumentsFromArguments(a));
}

export function resultFromCompletion(data: WireCompletion, headers: ServiceResponseHeaders, ctx: ChatReadContext): ChatResult {
  if (!data || typeof data !== "object" || !Array.isArray(data.choices) || data.choices.length === 0) {
    throw new ResponseFormatError("response has no choices", { status: 200, body: data, headers });
  }
  checkCompletion(data, ctx.names.parameters, headers);
  // a refusal is an error, not an answer (./stream-errors.ts)
  const refused = data.choices.find((c) => c.finish_reason === "content_filter");
  if (refused) throw refusalError(typeof refused.message?.content === "string" ? refused.message.content : "", data, headers);
  const echo = data[ctx.names.parameters] as ServiceParametersEcho | undefined;
  const requestMeta = requestMetadata(ctx.names, {
    usage: data.usage,
    cost: data.cost,
    echo,
    citations: echo?.web_search_citations,
    promptLogprobs: data.prompt_logprobs,
    systemFingerprint: data.system_fingerprint,
  });
  const usage = toUsageMetadata(data.usage);
  const generations: ChatGeneration[] = [];
  for (const choice of data.choices) {
    const wire: WireMessage = { ...(choice.message ?? { role: "assistant" }) };
    const documents = takeDocuments(wire, ctx.names);
    const finishReason = finishReasonWithoutDocuments(choice.finish_reason, documents !== undefined, !!wire.tool_calls?.length);
    let content = wire.content ?? "";
    let reasoning = typeof wire.reasoning_content === "string" ? wire.reasoning_content : undefined;
    if (ctx.splitThinkTags && typeof content === "string") {
      const split = splitThinkTags(content);
      if (split.content !== content) {
        content = split.content;
        reasoning = (reasoning ?? "") + split.reasoning;
      }
    }
    const toolCalls: ToolCall[] = [];
    const invalidToolCalls: InvalidToolCall[] = [];
    for (const raw of wire.tool_calls ?? []) {
      try {
        toolCalls.push(parseToolCall(raw as never, { returnId: true }) as ToolCall);
      } catch (e) {
        invalidToolCalls.push(makeInvalidToolCall(raw as never, (e as Error).message));
      }
    }
    // the service's own members (`thought_signature`...) are kept as received, to be sent back
    const additional_kwargs: Record<string, unknown> = { ...messageExtras(wire) };
    if (wire.tool_calls?.length) additional_kwargs.tool_calls = wire.tool_calls;
    if (reasoning !== undefined) additional_kwargs.reasoning_content = reasoning;
    if (Array.isArray(wire.reasoning_details)) additional_kwargs.reasoning_details = wire.reasoning_details;
    const response_metadata: Record<string, unknown> = {
      model_provider: ctx.provider,
      // `model` is what LangChain's standard tests read; `model_name` is ChatOpenAI's key
      model: data.model,
      model_name: data.model,
      headers,
      finish_reason: finishReason,
      ...(choice.stop_reason != null ? { stop_reason: choice.stop_reason } : {}),
      ...(choice.logprobs != null ? { logprobs: choice.logprobs } : {}),
      ...(documents ? { web_search_documents: documents } : {}),
      ...requestMeta,
    };
    const message = new AIMessage({
      id: data.id,
      content: content as string,
      tool_calls: toolCalls,
      invalid_tool_calls: invalidToolCalls,
      additional_kwargs,
      response_metadata,
      usage_metadata: usage,
    });
    generations.push({
      text: typeof content === "string" ? content : message.text,
      message,
      generationInfo: finishReason ? { finish_reason: finishReason } : undefined,
    });
  }
  return { generations, llmOutput: llmOutputOf(usage) };
}
