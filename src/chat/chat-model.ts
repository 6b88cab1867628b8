/**
 * `ChatService`: the LangChain chat model for the service. A drop-in for `ChatOpenAI` (tools, structured
 * output, streaming, callbacks, `streamEvents`) plus what only this service has: `service_parameters`,
 * reasoning that survives tool-call turns, web-search citations and documents, cost, response headers.
 *
 * Built on `BaseChatModel` rather than `ChatOpenAICompletions`: every request goes through the package's fetch
 * stack (auth, x402 payment, pacing, retries, typed errors) with its own lean SSE parser, and the
 * `streamEvents()` path of the OpenAI class calls its own stream converter that would skip our extras.
 */
import {
  BaseChatModel,
  type BaseChatModelCallOptions,
  type BaseChatModelParams,
  type BindToolsInput,
  type LangSmithParams,
  type ToolChoice,
} from "@langchain/core/language_models/chat_models";
import {
  isOpenAITool,
  type BaseLanguageModelInput,
  type StructuredOutputMethodOptions,
} from "@langchain/core/language_models/base";
import type { ChatModelStreamEvent, FinishReason } from "@langchain/core/language_models/event";
import {
  AIMessage,
  AIMessageChunk,
  type BaseMessage,
  type ToolCall,
  type InvalidToolCall,
  type ToolCallChunk,
  type UsageMetadata,
} from "@langchain/core/messages";
import { ChatGenerationChunk, type ChatGeneration, type ChatResult } from "@langchain/core/outputs";
import { CallbackManager, type CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import { convertToOpenAITool } from "@langchain/core/utils/function_calling";
import { makeInvalidToolCall, parseToolCall } from "@langchain/core/output_parsers/openai_tools";
import { mergeConfigs, RunnableBinding, type Runnable, type RunnableConfig } from "@langchain/core/runnables";
import type { InteropZodType } from "@langchain/core/utils/types";
import type { SerializableSchema } from "@langchain/core/utils/standard_schema";
import type { Document } from "@langchain/core/documents";
import { z } from "zod";

import { brandNames, DEFAULT_BRAND, type BrandNames } from "../config.js";
import { PAYMENT_EVENT_NAME } from "../x402/event-name.js";
import { responseHeaders } from "../http/fetch-stack.js";
import { createServiceFetch, faceStackOptions, type FetchStackOptions, type ServiceFetch } from "../stack.js";
import { ConfigurationError, ResponseFormatError, ValidationError } from "../http/errors.js";
import { readResponseText } from "../http/body.js";
import { LruMap } from "../http/bounded.js";
import type { RetryOptions } from "../http/retry.js";
import type { ServiceResponseHeaders } from "../http/headers.js";
import {
  toWireServiceParameters,
  validateServiceParameters,
  type ServiceParameters,
  type ServiceParametersEcho,
  type WebSearchCitation,
} from "./service-parameters.js";
import { parseModelId } from "./model-id.js";
import { withCharacterCheck } from "./character-check.js";
import { checkChunk, checkCompletion } from "./wire-check.js";
import { ThinkTagSplitter, splitThinkTags } from "./think-tags.js";
import { parseSseBatches } from "./sse.js";
import {
  MESSAGE_EXTRAS_METADATA_KEY,
  mergeReasoningDetails,
  messageExtras,
  toolCallExtras,
  searchDocumentsFromArguments,
  toUsageMetadata,
  toWireMessages,
  type ReasoningDetail,
  type WireMessage,
  type WireToolCall,
  type WireUsage,
} from "./convert.js";
import { finishReasonWithoutDocuments, SearchDocumentsFilter, takeSearchDocumentsCalls } from "./search-documents.js";
import { DEFAULT_STREAM_RETRIES, refusalError, withOverloadRetries, withTypedStreamErrors, type StreamProgress } from "./stream-errors.js";
import { structuredOutput } from "./structured-output.js";

/**
 * `response_metadata.model_provider` picks LangChain's content-block translator (`message.contentBlocks`).
 * `registerTranslator` is not exported, so we reuse the translator whose conventions are ours:
 * `additional_kwargs.reasoning_content` + `additional_kwargs.reasoning_details`. `ls_provider` stays the brand.
 */
const CONTENT_BLOCK_PROVIDER = "openrouter";

export const ReasoningEffortSchema = z.enum(["none", "minimal", "low", "medium", "high", "xhigh", "max"]);
export type ReasoningEffort = z.infer<typeof ReasoningEffortSchema>;

export type ServiceToolChoice = ToolChoice | "required";

export type ServiceResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | { type: "json_schema"; json_schema: { name?: string; description?: string; schema?: Record<string, unknown>; strict?: boolean; [k: string]: unknown } };

/** The sampling options of the request schema, camelCase; validated in the constructor. */
const SamplingSchema = z.object({
  temperature: z.number().min(0).max(2).optional(),
  topP: z.number().min(0).max(1).optional(),
  // -1 as in ChatOpenAI: no limit (not sent); the service silently ignores 0 and below, so they are refused
  maxTokens: z
    .number()
    .int()
    .refine((v) => v === -1 || v >= 1, "must be a positive integer, or -1 for no limit")
    .optional(),
  maxCompletionTokens: z.number().int().positive().optional(),
  stop: z.union([z.string(), z.array(z.string()).min(1).max(4)]).optional(),
  seed: z.number().int().positive().optional(),
  frequencyPenalty: z.number().min(-2).max(2).optional(),
  presencePenalty: z.number().min(-2).max(2).optional(),
  repetitionPenalty: z.number().min(0).optional(),
  topK: z.number().int().min(0).optional(),
  minP: z.number().min(0).max(1).optional(),
  reasoningEffort: ReasoningEffortSchema.optional(),
  logprobs: z.boolean().optional(),
  topLogprobs: z.number().int().min(0).optional(),
  n: z.number().int().min(1).optional(),
  parallelToolCalls: z.boolean().optional(),
  promptCacheKey: z.string().min(1).optional(),
});

export interface ChatServiceInput
  extends BaseChatModelParams,
    Omit<FetchStackOptions, "paymentLayer" | "pacingLayer"> {
  /** model id, optionally with feature suffixes `id:key=value&key2=value2` (see `buildModelId`) */
  model: string;
  /** share one fetch stack between several models and clients (else one is built from the options) */
  serviceFetch?: ServiceFetch;
  /** extra request body fields, sent unchanged (the spec lets unlisted fields pass through) */
  modelKwargs?: Record<string, unknown>;
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  maxCompletionTokens?: number;
  stop?: string | string[];
  seed?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  repetitionPenalty?: number;
  topK?: number;
  minP?: number;
  reasoningEffort?: ReasoningEffort;
  responseFormat?: ServiceResponseFormat;
  logprobs?: boolean;
  topLogprobs?: number;
  n?: number;
  parallelToolCalls?: boolean;
  toolChoice?: ServiceToolChoice;
  /** stream on `invoke` too (the answer is the merged stream) */
  streaming?: boolean;
  /** usage (and cost) on streamed answers; default true */
  streamUsage?: boolean;
  /** `service_parameters` (camelCase here, snake_case on the wire under the brand's name) */
  serviceParameters?: ServiceParameters;
  /** routing hint for prompt caching across turns */
  promptCacheKey?: string;
  /** split legacy `<think>` blocks out of content into reasoning (default true) */
  splitThinkTags?: boolean;
}

export interface ChatServiceCallOptions extends BaseChatModelCallOptions {
  /** merged over the constructor's `serviceParameters` */
  serviceParameters?: ServiceParameters;
  promptCacheKey?: string;
  tools?: BindToolsInput[];
  tool_choice?: ServiceToolChoice;
  response_format?: ServiceResponseFormat;
  parallel_tool_calls?: boolean;
  seed?: number;
  /** strict JSON schema for tools */
  strict?: boolean;
  /** request body fields sent unchanged (pass-through) */
  extraBody?: Record<string, unknown>;
  streamUsage?: boolean;
}

export type { ServiceParameters, WebSearchCitation };

/** Cost of one request (spec 2.3). */
export interface ServiceCost {
  usd: number;
  diem: number;
}

interface WireChoice {
  index?: number;
  message?: WireMessage;
  delta?: WireMessage;
  finish_reason?: string | null;
  stop_reason?: string | null;
  logprobs?: unknown;
}

interface WireCompletion {
  id?: string;
  object?: string;
  created?: number;
  model?: string;
  choices?: WireChoice[];
  usage?: WireUsage;
  cost?: ServiceCost;
  prompt_logprobs?: unknown;
  system_fingerprint?: string;
  [key: string]: unknown;
}

/**
 * Models whose deprecation was already reported in this process. Model ids come from the service's answers:
 * capped (the least recently warned forgotten first; a forgotten one only warns again), as no process serves
 * anywhere near 256 deprecated models.
 */
const deprecationWarned = new LruMap<string, true>(256);

function formatToolChoice(choice: ServiceToolChoice | undefined): unknown {
  if (choice === undefined) return undefined;
  if (choice === "any") return "required";
  if (choice === "auto" || choice === "none" || choice === "required") return choice;
  if (typeof choice === "string") return { type: "function", function: { name: choice } };
  return choice;
}

function toFinishReason(reason: unknown): FinishReason {
  if (reason === "tool_calls" || reason === "function_call") return "tool_use";
  if (reason === "length") return "length";
  if (reason === "content_filter") return "content_filter";
  return "stop";
}

function isEmpty(obj: object | undefined): boolean {
  if (!obj) return true;
  for (const _ in obj) return false;
  return true;
}

/**
 * LangChain's `maxRetries` (BaseChatModel's AsyncCaller, ChatOpenAI's client: retries after the first attempt)
 * is applied by the fetch stack, the only place this model retries (the AsyncCaller is never used): it becomes
 * `retry.maxRetries` (and bounds the re-requests of a stream refused in-band as overloaded before any content,
 * ./stream-errors.ts), so `maxRetries: 0` is exactly one attempt and `.withRetry()` or fallbacks multiply
 * nothing hidden. Absent, the stack's default holds (4 retries, 5xx and one 429 wait only). Given with a
 * `retry.maxRetries` (or `retry: false`) that disagrees, or with a shared `serviceFetch` (whose policy is set
 * where it was built; only 0 applies, per request), it is a ConfigurationError rather than a silent choice.
 */
function retryFromMaxRetries(fields: ChatServiceInput): { retry: ChatServiceInput["retry"]; noRetry: boolean } {
  const max: unknown = fields.maxRetries;
  if (max === undefined) return { retry: fields.retry, noRetry: false };
  if (!(typeof max === "number" && Number.isInteger(max) && max >= 0)) {
    throw new ConfigurationError(`maxRetries must be a non-negative integer (retries after the first attempt); got ${String(max)}`);
  }
  if (fields.serviceFetch) {
    if (max === 0) return { retry: undefined, noRetry: true };
    throw new ConfigurationError(
      `maxRetries: ${max} cannot change a shared serviceFetch's retry policy; set retry.maxRetries where the stack is built (maxRetries: 0 is allowed: it turns retries off for this model)`,
    );
  }
  const retry = fields.retry;
  if (retry === false) {
    if (max === 0) return { retry: false, noRetry: false };
    throw new ConfigurationError(`maxRetries: ${max} contradicts retry: false; give one of them`);
  }
  const stackMax = (retry as Partial<RetryOptions> | undefined)?.maxRetries;
  if (stackMax !== undefined && stackMax !== max) {
    throw new ConfigurationError(`maxRetries (${max}) and retry.maxRetries (${String(stackMax)}) disagree; give one of them`);
  }
  return { retry: { ...retry, maxRetries: max }, noRetry: false };
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

/** One streamed piece: a LangChain chunk tagged with the choice it belongs to. */
interface StreamPiece {
  choice: number;
  chunk: ChatGenerationChunk;
}

export class ChatService extends BaseChatModel<ChatServiceCallOptions, AIMessageChunk> {
  static override lc_name() {
    return "ChatService";
  }

  override lc_serializable = true;
  override lc_namespace = ["langchain_service", "chat_models"];

  override get lc_secrets(): { [key: string]: string } | undefined {
    return { apiKey: "SERVICE_API_KEY" };
  }

  /** Only data options are serialized: never the wallet, payment hooks, fetch functions or callbacks. */
  override get lc_serializable_keys(): string[] {
    return [
      "idleTimeout", "totalTimeout", "maxResponseBytes", "maxEventBytes",
      "model", "apiKey", "baseUrl", "brand", "timeout", "defaultHeaders", "modelKwargs", "temperature", "topP",
      "maxTokens", "maxCompletionTokens", "stop", "seed", "frequencyPenalty", "presencePenalty", "repetitionPenalty",
      "topK", "minP", "reasoningEffort", "responseFormat", "logprobs", "topLogprobs", "n", "parallelToolCalls",
      "toolChoice", "streaming", "streamUsage", "serviceParameters", "promptCacheKey", "splitThinkTags",
      "disableStreaming", "outputVersion", "tags", "metadata", "verbose",
    ];
  }

  model: string;
  brand: string;
  modelKwargs?: Record<string, unknown>;
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  maxCompletionTokens?: number;
  stop?: string | string[];
  seed?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  repetitionPenalty?: number;
  topK?: number;
  minP?: number;
  reasoningEffort?: ReasoningEffort;
  responseFormat?: ServiceResponseFormat;
  logprobs?: boolean;
  topLogprobs?: number;
  n?: number;
  parallelToolCalls?: boolean;
  toolChoice?: ServiceToolChoice;
  streaming: boolean;
  streamUsage: boolean;
  serviceParameters: ServiceParameters;
  promptCacheKey?: string;
  splitThinkTags: boolean;

  readonly #fetch: ServiceFetch;
  readonly #names: BrandNames;
  /** model id without suffix: the stack paces per key and model */
  readonly #baseModelId: string;
  readonly #url: string;
  /** `maxRetries: 0` on a shared stack: every request asks the stack not to retry */
  readonly #noRetry: boolean;
  /** re-requests of a stream refused in-band as overloaded before any content (within `maxRetries`) */
  readonly #streamRetries: number;

  constructor(fields: ChatServiceInput) {
    super(fields ?? {});
    if (!fields || typeof fields.model !== "string") throw new ValidationError("ChatService needs `model`");
    const sampling = SamplingSchema.safeParse({
      temperature: fields.temperature,
      topP: fields.topP,
      maxTokens: fields.maxTokens,
      maxCompletionTokens: fields.maxCompletionTokens,
      stop: fields.stop,
      seed: fields.seed,
      frequencyPenalty: fields.frequencyPenalty,
      presencePenalty: fields.presencePenalty,
      repetitionPenalty: fields.repetitionPenalty,
      topK: fields.topK,
      minP: fields.minP,
      reasoningEffort: fields.reasoningEffort,
      logprobs: fields.logprobs,
      topLogprobs: fields.topLogprobs,
      n: fields.n,
      parallelToolCalls: fields.parallelToolCalls,
      promptCacheKey: fields.promptCacheKey,
    });
    if (!sampling.success) {
      const detail = sampling.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
      throw new ValidationError(`invalid ChatService options: ${detail}`, { issues: sampling.error.issues });
    }
    for (const key of ["streaming", "streamUsage", "splitThinkTags"] as const) {
      if (fields[key] !== undefined && typeof fields[key] !== "boolean") throw new ValidationError(`${key} must be a boolean`);
    }
    const kwargs = fields.modelKwargs;
    if (kwargs !== undefined && (typeof kwargs !== "object" || kwargs === null || Array.isArray(kwargs))) {
      throw new ValidationError("modelKwargs must be an object of request body fields");
    }
    const { retry, noRetry } = retryFromMaxRetries(fields);
    this.#noRetry = noRetry;
    this.#streamRetries = noRetry || retry === false ? 0 : (retry?.maxRetries ?? DEFAULT_STREAM_RETRIES);
    this.brand = fields.serviceFetch?.brand ?? fields.brand ?? DEFAULT_BRAND;
    this.#names = brandNames(this.brand);
    this.model = fields.model;
    this.#baseModelId = parseModelId(fields.model, this.brand).id;
    this.serviceParameters = validateServiceParameters(fields.serviceParameters ?? {});
    this.modelKwargs = fields.modelKwargs;
    Object.assign(this, sampling.data);
    this.responseFormat = fields.responseFormat;
    this.toolChoice = fields.toolChoice;
    this.streaming = fields.streaming ?? false;
    this.streamUsage = fields.streamUsage ?? true;
    this.splitThinkTags = fields.splitThinkTags ?? true;
    this.#fetch =
      fields.serviceFetch ??
      createServiceFetch({ ...faceStackOptions(fields), brand: this.brand, retry });
    this.#url = this.#fetch.url("/chat/completions");
  }

  /** `console.log(model)` shows the serializable view, where the key is a secret reference, never the key. */
  [Symbol.for("nodejs.util.inspect.custom")](): unknown {
    return this.toJSON();
  }

  _llmType(): string {
    // Called by the base constructor before `brand` is set.
    return this.brand ?? DEFAULT_BRAND;
  }

  override get callKeys(): string[] {
    return [
      ...super.callKeys,
      "serviceParameters",
      "promptCacheKey",
      "tools",
      "tool_choice",
      "response_format",
      "parallel_tool_calls",
      "seed",
      "strict",
      "extraBody",
      "streamUsage",
    ];
  }

  /** The fetch stack this model sends through (share it with `serviceFetch`). */
  get serviceFetch(): ServiceFetch {
    return this.#fetch;
  }

  override getLsParams(options: this["ParsedCallOptions"]): LangSmithParams {
    const stop = options?.stop ?? this.stop;
    return {
      ls_provider: this.brand,
      ls_model_name: this.model,
      ls_model_type: "chat",
      ls_temperature: this.temperature,
      ls_max_tokens: this.maxTokens ?? this.maxCompletionTokens,
      ls_stop: stop === undefined ? undefined : Array.isArray(stop) ? stop : [stop],
    };
  }

  override bindTools(tools: BindToolsInput[], kwargs?: Partial<ChatServiceCallOptions>): ChatServiceBinding {
    const strict = kwargs?.strict;
    return this.withConfig({
      tools: tools.map((tool) => this.#toWireTool(tool, strict)),
      ...kwargs,
    } as Partial<ChatServiceCallOptions>);
  }

  /**
   * A `RunnableBinding` (as core's) that still acts like the model, as a configured `ChatOpenAI` does:
   * `streamEvents()` keeps the content-block protocol, `bindTools`/`withStructuredOutput` keep the bound options.
   */
  override withConfig(config: Partial<ChatServiceCallOptions>): ChatServiceBinding {
    return new ChatServiceBinding({ bound: this, config, kwargs: {} });
  }

  /** Sums `tokenUsage` over the prompts of one `generate()` call (as `ChatOpenAI`), else `llmOutput` is empty. */
  override _combineLLMOutput(...llmOutputs: Array<Record<string, any> | undefined>): Record<string, any> | undefined {
    let tokenUsage: { promptTokens: number; completionTokens: number; totalTokens: number } | undefined;
    for (const output of llmOutputs) {
      const usage = output?.tokenUsage;
      if (!usage) continue;
      tokenUsage ??= { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
      tokenUsage.promptTokens += usage.promptTokens ?? 0;
      tokenUsage.completionTokens += usage.completionTokens ?? 0;
      tokenUsage.totalTokens += usage.totalTokens ?? 0;
    }
    return tokenUsage ? { tokenUsage } : undefined;
  }

  #toWireTool(tool: BindToolsInput, strict?: boolean): Record<string, unknown> {
    if (isOpenAITool(tool)) {
      return strict === undefined ? (tool as unknown as Record<string, unknown>) : { ...tool, function: { ...tool.function, strict } };
    }
    return convertToOpenAITool(tool, strict === undefined ? undefined : { strict }) as unknown as Record<string, unknown>;
  }

  /**
   * The request body without `messages` (also used for tracing: no secrets, no side effects). Validates
   * per-call `serviceParameters` (throws `ValidationError` before any request).
   */
  override invocationParams(options?: this["ParsedCallOptions"], extra?: { streaming?: boolean }): Record<string, unknown> {
    const streaming = extra?.streaming ?? this.streaming;
    const callParams = options?.serviceParameters
      ? { ...this.serviceParameters, ...validateServiceParameters(options.serviceParameters) }
      : this.serviceParameters;
    const promptCacheKey = options?.promptCacheKey ?? this.promptCacheKey;
    if (promptCacheKey !== undefined && (typeof promptCacheKey !== "string" || promptCacheKey === "")) {
      throw new ValidationError("promptCacheKey must be a non-empty string");
    }
    const stop = options?.stop ?? this.stop;
    if (Array.isArray(stop) && stop.length > 4) throw new ValidationError("stop takes at most 4 sequences");
    const tools = options?.tools?.length ? options.tools.map((t) => this.#toWireTool(t, options.strict)) : undefined;
    const params: Record<string, unknown> = {
      model: this.model,
      temperature: this.temperature,
      top_p: this.topP,
      max_tokens: this.maxTokens === -1 ? undefined : this.maxTokens,
      max_completion_tokens: this.maxCompletionTokens,
      stop,
      seed: options?.seed ?? this.seed,
      frequency_penalty: this.frequencyPenalty,
      presence_penalty: this.presencePenalty,
      repetition_penalty: this.repetitionPenalty,
      top_k: this.topK,
      min_p: this.minP,
      reasoning_effort: this.reasoningEffort,
      response_format: options?.response_format ?? this.responseFormat,
      logprobs: this.logprobs,
      top_logprobs: this.topLogprobs,
      n: this.n,
      tools,
      tool_choice: formatToolChoice(options?.tool_choice ?? (tools ? this.toolChoice : undefined)),
      parallel_tool_calls: tools ? (options?.parallel_tool_calls ?? this.parallelToolCalls) : undefined,
      prompt_cache_key: promptCacheKey,
      stream: streaming,
      stream_options: streaming && (options?.streamUsage ?? this.streamUsage) ? { include_usage: true } : undefined,
    };
    if (!isEmpty(callParams)) params[this.#names.parameters] = toWireServiceParameters(callParams, this.brand);
    if (this.modelKwargs) Object.assign(params, this.modelKwargs);
    if (options?.extraBody) Object.assign(params, options.extraBody);
    return params;
  }

  override _identifyingParams(): Record<string, unknown> {
    return { model_name: this.model, ...this.invocationParams() };
  }

  async #post(body: Record<string, unknown>, options: this["ParsedCallOptions"], runManager?: CallbackManagerForLLMRun): Promise<Response> {
    options.signal?.throwIfAborted();
    return withCharacterCheck(this.#fetch, body, this.#names.parameters, this.brand, () => this.#fetch(this.#url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: body.stream ? "text/event-stream" : "application/json" },
      body: JSON.stringify(body),
      signal: options.signal,
      service: {
        model: this.#baseModelId,
        timeout: options.timeout,
        ...(this.#noRetry ? { retry: false } : {}),
        // the payments this request causes reach this run's own callbacks (`invoke(x, { callbacks })`)
        onPaymentEvent: runManager ? (event) => runManager.handleCustomEvent(PAYMENT_EVENT_NAME, event) : undefined,
      },
    }));
  }

  #headers(response: Response): ServiceResponseHeaders {
    const headers = responseHeaders(response, this.brand);
    const dep = headers.deprecation;
    if (dep?.warning || dep?.date) {
      const id = headers.model?.id ?? this.#baseModelId;
      if (!deprecationWarned.has(id)) {
        deprecationWarned.set(id, true);
        console.warn(
          `[${this.brand}] model ${id} is deprecated${dep.date ? ` (date: ${dep.date})` : ""}${dep.warning ? `: ${dep.warning}` : ""}`,
        );
      }
    }
    return headers;
  }

  /** Request-level response metadata, identical on the JSON and stream paths. */
  #requestMetadata(data: {
    usage?: WireUsage;
    cost?: ServiceCost;
    echo?: ServiceParametersEcho;
    citations?: WebSearchCitation[];
    promptLogprobs?: unknown;
    systemFingerprint?: string;
  }): Record<string, unknown> {
    const meta: Record<string, unknown> = {};
    if (data.usage) meta.usage = data.usage;
    if (data.cost) meta.cost = { usd: data.cost.usd, diem: data.cost.diem };
    if (data.echo && !isEmpty(data.echo)) meta[this.#names.parameters] = data.echo;
    if (data.citations) meta.web_search_citations = data.citations;
    if (data.promptLogprobs !== undefined && data.promptLogprobs !== null) meta.prompt_logprobs = data.promptLogprobs;
    if (data.systemFingerprint) meta.system_fingerprint = data.systemFingerprint;
    return meta;
  }

  override async _generate(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): Promise<ChatResult> {
    if (this.streaming) return this.#generateFromStream(messages, options, runManager);
    const body: Record<string, unknown> = { ...this.invocationParams(options, { streaming: false }), messages: toWireMessages(messages, this.model) };
    const response = await this.#post(body, options, runManager);
    const headers = this.#headers(response);
    const text = await readResponseText(response, { what: "the chat completion", signal: options.signal, headers });
    let data: WireCompletion;
    try {
      data = JSON.parse(text) as WireCompletion;
    } catch {
      throw new ResponseFormatError("response body is not JSON", { status: response.status, body: text, headers });
    }
    return this.#resultFromCompletion(data, headers);
  }

  #resultFromCompletion(data: WireCompletion, headers: ServiceResponseHeaders): ChatResult {
    if (!data || typeof data !== "object" || !Array.isArray(data.choices) || data.choices.length === 0) {
      throw new ResponseFormatError("response has no choices", { status: 200, body: data, headers });
    }
    checkCompletion(data, this.#names.parameters, headers);
    // a refusal is an error, not an answer (./stream-errors.ts)
    const refused = data.choices.find((c) => c.finish_reason === "content_filter");
    if (refused) throw refusalError(typeof refused.message?.content === "string" ? refused.message.content : "", data, headers);
    const echo = data[this.#names.parameters] as ServiceParametersEcho | undefined;
    const requestMeta = this.#requestMetadata({
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
      const documents = this.#takeDocuments(wire);
      const finishReason = finishReasonWithoutDocuments(choice.finish_reason, documents !== undefined, !!wire.tool_calls?.length);
      let content = wire.content ?? "";
      let reasoning = typeof wire.reasoning_content === "string" ? wire.reasoning_content : undefined;
      if (this.splitThinkTags && typeof content === "string") {
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
        model_provider: CONTENT_BLOCK_PROVIDER,
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
    return {
      generations,
      llmOutput: usage
        ? { tokenUsage: { promptTokens: usage.input_tokens, completionTokens: usage.output_tokens, totalTokens: usage.total_tokens } }
        : undefined,
    };
  }

  /** Removes the search-documents tool call (live or seed) from a wire message; returns its documents. */
  #takeDocuments(wire: WireMessage): Document[] | undefined {
    const args = takeSearchDocumentsCalls(wire, this.#names.webSearchDocumentsTool);
    return args === undefined ? undefined : args.flatMap((a) => searchDocumentsFromArguments(a));
  }

  async #generateFromStream(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): Promise<ChatResult> {
    const byChoice = new Map<number, ChatGenerationChunk>();
    for await (const pieces of this.#streamPieces(messages, options, runManager)) {
      for (const piece of pieces) {
        const prev = byChoice.get(piece.choice);
        byChoice.set(piece.choice, prev ? prev.concat(piece.chunk) : piece.chunk);
      }
    }
    const generations = [...byChoice.entries()].sort(([a], [b]) => a - b).map(([, g]) => g);
    if (generations.length === 0) throw new ResponseFormatError("stream carried no answer");
    const usage = (generations[0]!.message as AIMessageChunk).usage_metadata;
    return {
      generations,
      llmOutput: usage
        ? { tokenUsage: { promptTokens: usage.input_tokens, completionTokens: usage.output_tokens, totalTokens: usage.total_tokens } }
        : undefined,
    };
  }

  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    for await (const pieces of this.#streamPieces(messages, options, runManager)) {
      for (const piece of pieces) yield piece.chunk;
    }
  }

  /** Whether any callback handler or tracer would see this run (the same test the base class makes). */
  async #hasCallbacks(config: RunnableConfig): Promise<boolean> {
    const manager = await CallbackManager.configure(
      config.callbacks,
      this.callbacks,
      config.tags,
      this.tags,
      config.metadata,
      this.metadata,
      { verbose: this.verbose },
    );
    return manager !== undefined;
  }

  /**
   * `invoke()`: with no callback handler, tracer or cache, calls `_generate` directly and shapes the message
   * exactly as the base class does (generation info and token usage folded into `response_metadata`), without
   * the run bookkeeping nobody receives. Otherwise the base implementation runs unchanged.
   */
  override async invoke(input: BaseLanguageModelInput, options?: Partial<ChatServiceCallOptions>): Promise<AIMessageChunk> {
    if (this.cache) return super.invoke(input, options);
    const [config, callOptions] = this._separateRunnableConfigFromCallOptionsCompat(options);
    if ((callOptions.outputVersion ?? this.outputVersion) === "v1" || (await this.#hasCallbacks(config))) {
      return super.invoke(input, options);
    }
    const messages = ChatService._convertInputToPromptValue(input).toChatMessages();
    const result = await this._generate(messages, callOptions);
    const generation = result.generations[0];
    if (!generation) throw new ResponseFormatError("response has no choices");
    const message = generation.message;
    message.response_metadata = { ...result.llmOutput, ...generation.generationInfo, ...message.response_metadata };
    return message as AIMessageChunk;
  }

  /**
   * `.stream()`: when no callback handler or tracer is configured, yields the chunks without the base class's
   * per-chunk bookkeeping (a `concat` per chunk to build an end-of-run result nobody receives). Otherwise,
   * and for `outputVersion: "v1"`, the base implementation runs unchanged.
   */
  override async *_streamIterator(
    input: BaseLanguageModelInput,
    options?: Partial<ChatServiceCallOptions>,
  ): AsyncGenerator<AIMessageChunk> {
    const [config, callOptions] = this._separateRunnableConfigFromCallOptionsCompat(options);
    if (!this.disableStreaming && (callOptions.outputVersion ?? this.outputVersion) === "v1") {
      // Core translates each chunk to v1 blocks. The closing chunk carries the whole `reasoning_details`,
      // which the translator turns into the whole reasoning again: drop it when reasoning was streamed
      // already (it stays in `additional_kwargs` for the next turn), or the merged message repeats it.
      let streamedReasoning = false;
      for await (const chunk of super._streamIterator(input, options)) {
        if (Array.isArray(chunk.content)) {
          const blocks = chunk.content as Array<{ type?: string }>;
          if (chunk.additional_kwargs.reasoning_details !== undefined) {
            if (streamedReasoning) chunk.content = blocks.filter((b) => b?.type !== "reasoning") as typeof chunk.content;
          } else if (blocks.some((b) => b?.type === "reasoning")) streamedReasoning = true;
        }
        yield chunk;
      }
      return;
    }
    if (this.disableStreaming || (await this.#hasCallbacks(config))) {
      yield* super._streamIterator(input, options);
      return;
    }
    const messages = ChatService._convertInputToPromptValue(input).toChatMessages();
    const signal = callOptions.signal;
    for await (const pieces of this.#streamPieces(messages, callOptions)) {
      for (const piece of pieces) {
        signal?.throwIfAborted();
        yield piece.chunk.message as AIMessageChunk;
      }
    }
    signal?.throwIfAborted();
  }

  /** One streamed answer; requested again when refused in-band as overloaded before any content. */
  #streamPieces(messages: BaseMessage[], options: this["ParsedCallOptions"], runManager?: CallbackManagerForLLMRun): AsyncGenerator<StreamPiece[]> {
    const retries = this.#noRetry ? 0 : this.#streamRetries;
    return withOverloadRetries((progress) => this.#streamAttempt(messages, options, runManager, progress), { retries, signal: options.signal });
  }

  /**
   * Reads one streamed answer and turns it into LangChain chunks. Merge-safety: `concat` adds numbers and
   * joins strings, so anything that is not a delta (headers, citations, usage, cost, echo, model name,
   * finish reason, the whole `reasoning_details`) is put on exactly one chunk. Nothing reaches the caller (nor
   * its callbacks) before the first text, reasoning or tool-call delta (`progress.started`), so an attempt that
   * fails before it can be replaced by the next one without a trace.
   */
  async *#streamAttempt(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager: CallbackManagerForLLMRun | undefined,
    progress: StreamProgress,
  ): AsyncGenerator<StreamPiece[]> {
    const streamUsage = options.streamUsage ?? this.streamUsage;
    const body = { ...this.invocationParams(options, { streaming: true }), messages: toWireMessages(messages, this.model), stream: true };
    const response = await this.#post(body, options, runManager);
    const headers = this.#headers(response);
    const paramsKey = this.#names.parameters;
    const docsTool = this.#names.webSearchDocumentsTool;
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

    // Pieces are handed out per network read (one async step per read, not per chunk).
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
      const meta: Record<string, unknown> = { model_provider: CONTENT_BLOCK_PROVIDER };
      if (headersPending) {
        meta.headers = headers;
        headersPending = false;
      }
      return meta;
    };

    const batches = parseSseBatches<WireCompletion>(response.body, { signal: options.signal, headers, maxEventBytes: this.#fetch.limits?.maxEventBytes });
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
        const choices = data.choices;
        if (!choices) continue;
        for (const choice of choices) {
          const index = choice.index ?? 0;
          let state = states.get(index);
          if (!state) {
            state = { index };
            if (this.splitThinkTags) state.think = new ThinkTagSplitter();
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
          for (const [key, value] of Object.entries(messageExtras(delta) ?? {})) {
            const acc = (state.extras ??= {});
            const prev = acc[key];
            acc[key] = typeof prev === "string" && typeof value === "string" ? prev + value : value;
          }
          let toolCalls: WireToolCall[] | undefined;
          if (Array.isArray(delta.tool_calls) && delta.tool_calls.length) {
            toolCalls = (state.docs ??= new SearchDocumentsFilter(docsTool)).push(delta.tool_calls) as WireToolCall[] | undefined;
          }
          const hasLogprobs = choice.logprobs != null;
          if (!content && !reasoning && !toolCalls && !hasLogprobs) continue;
          if (content || reasoning || toolCalls) progress.started = true;
          const additional_kwargs: Record<string, unknown> = {};
          if (reasoning) additional_kwargs.reasoning_content = reasoning;
          if (toolCalls) additional_kwargs.tool_calls = toolCalls;
          const tool_call_chunks: ToolCallChunk[] | undefined = toolCalls?.map((c) => ({
            type: "tool_call_chunk",
            name: c.function?.name,
            args: c.function?.arguments,
            id: c.id,
            index: c.index,
          }));
          const meta = baseMeta();
          if (hasLogprobs) meta.logprobs = choice.logprobs;
          const chunk = new AIMessageChunk({ content, id, additional_kwargs, tool_call_chunks, response_metadata: meta });
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
          this.#requestMetadata({
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
        tool_call_chunks: released?.map((c) => ({ type: "tool_call_chunk", name: c.function?.name, args: c.function?.arguments, id: c.id, index: c.index })),
        response_metadata: meta,
        usage_metadata: usageMetadata,
      });
      emit(state.index, chunk, content);
    }
    yield await deliver();
  }

  /**
   * The content-block event protocol (`streamEvents()` without a version, and LangGraph's v3 message
   * streaming). Built from the same pieces as `.stream()`, so reasoning (with its `reasoning_details`, kept
   * on the reasoning block and sent back from there), cost, citations and headers survive on this path too.
   * Only the first choice is reported here.
   */
  override async *_streamChatModelEvents(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatModelStreamEvent> {
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
    for await (const pieces of this.#streamPieces(messages, options, runManager)) {
      for (const piece of pieces) {
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
    for (const { index, block } of [...blocks.values()].sort((a, b) => a.index - b.index)) {
      let content: Record<string, unknown> = block;
      if (block.type === "reasoning" && details !== undefined) content = { ...block, reasoning_details: details };
      if (block.type === "tool_call_chunk") {
        const more = callExtras.get(block.index as number);
        try {
          content = { type: "tool_call", id: block.id, name: block.name, args: JSON.parse((block.args as string) || "{}"), ...(more ? { extras: more } : {}) };
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

  override withStructuredOutput<RunOutput extends Record<string, any> = Record<string, any>>(
    outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | Record<string, any>,
    config?: StructuredOutputMethodOptions<false>,
  ): Runnable<BaseLanguageModelInput, RunOutput>;
  override withStructuredOutput<RunOutput extends Record<string, any> = Record<string, any>>(
    outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | Record<string, any>,
    config?: StructuredOutputMethodOptions<true>,
  ): Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }>;
  override withStructuredOutput<RunOutput extends Record<string, any> = Record<string, any>>(
    outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | Record<string, any>,
    config?: StructuredOutputMethodOptions<boolean>,
  ): Runnable<BaseLanguageModelInput, RunOutput> | Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }>;
  /**
   * Structured output by `json_schema` response format (default; the service validates it) or by a forced
   * function call (`method: "functionCalling"`), or `jsonMode`.
   */
  override withStructuredOutput<RunOutput extends Record<string, any> = Record<string, any>>(
    outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | Record<string, any>,
    config?: StructuredOutputMethodOptions<boolean>,
  ): Runnable<BaseLanguageModelInput, RunOutput> | Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }> {
    return structuredOutput(this, outputSchema, config) as never;
  }
}

/**
 * What `ChatService.withConfig` and `bindTools` return. A core `RunnableBinding` (same `config`, same
 * serialization) that keeps acting like the chat model, as a configured `ChatOpenAI` does (its `withConfig`
 * returns a `ChatOpenAI`): `streamEvents()` without a version gives the content-block stream (`.text`,
 * awaitable message), and `bindTools` / `withStructuredOutput` keep the options bound so far.
 */
export class ChatServiceBinding extends RunnableBinding<BaseLanguageModelInput, AIMessageChunk, ChatServiceCallOptions> {
  declare bound: ChatService;

  /** `streamEvents(input)` / `(input, options)` without `version`: the model's content-block stream. */
  override streamEvents(input: BaseLanguageModelInput, options?: any, streamOptions?: any): any {
    if (options?.version !== undefined) return super.streamEvents(input, options, streamOptions);
    if (this.configFactories?.length) {
      throw new ValidationError("streamEvents() without a version is not supported on a binding with config factories");
    }
    return this.bound.streamEvents(input, mergeConfigs<ChatServiceCallOptions>(this.config, options, this.kwargs));
  }

  /** Binds other tools (they replace the bound ones); the other bound options stay. */
  bindTools(tools: BindToolsInput[], kwargs?: Partial<ChatServiceCallOptions>): ChatServiceBinding {
    return this.withConfig(this.bound.bindTools(tools, kwargs).config) as ChatServiceBinding;
  }

  withStructuredOutput<RunOutput extends Record<string, any> = Record<string, any>>(
    outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | Record<string, any>,
    config?: StructuredOutputMethodOptions<false>,
  ): Runnable<BaseLanguageModelInput, RunOutput>;
  withStructuredOutput<RunOutput extends Record<string, any> = Record<string, any>>(
    outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | Record<string, any>,
    config?: StructuredOutputMethodOptions<true>,
  ): Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }>;
  withStructuredOutput<RunOutput extends Record<string, any> = Record<string, any>>(
    outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | Record<string, any>,
    config?: StructuredOutputMethodOptions<boolean>,
  ): Runnable<BaseLanguageModelInput, RunOutput> | Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }>;
  /** Structured output from the configured model: the bound call options reach the request. */
  withStructuredOutput<RunOutput extends Record<string, any> = Record<string, any>>(
    outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | Record<string, any>,
    config?: StructuredOutputMethodOptions<boolean>,
  ): Runnable<BaseLanguageModelInput, RunOutput> | Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }> {
    return structuredOutput(this, outputSchema, config) as never;
  }
}

/** For tests: forget which deprecations were already reported. */
export function resetDeprecationWarnings(): void {
  deprecationWarned.clear();
}
