/**
 * `ChatService`: the LangChain chat model for the service. A drop-in for `ChatOpenAI` (tools, structured
 * output, streaming, callbacks, `streamEvents`) plus what only this service has: `service_parameters`, every
 * request field it takes (./request-fields.ts), reasoning that survives tool-call turns, web-search citations
 * and documents, cost, response headers; LangChain's v1 conventions: `profile` from the service's `/models`
 * (./profile.ts), refusing before sending what the model cannot do, and standard content blocks under the brand
 * as provider (./content-blocks.ts).
 *
 * Built on `BaseChatModel` rather than `ChatOpenAICompletions`: every request goes through the package's fetch
 * stack (auth, x402 payment, pacing, retries, typed errors) with its own lean SSE parser, and the
 * `streamEvents()` path of the OpenAI class calls its own stream converter that would skip our extras. The
 * model file holds the options and the request; reading answers is in ./completion.ts, ./stream.ts and
 * ./stream-events.ts, structured output in ./structured-output.ts, the configured model in ./binding.ts.
 */
import { BaseChatModel, type BindToolsInput, type LangSmithParams } from "@langchain/core/language_models/chat_models";
import { isOpenAITool, type BaseLanguageModelInput, type StructuredOutputMethodOptions } from "@langchain/core/language_models/base";
import type { ChatModelStreamEvent } from "@langchain/core/language_models/event";
import type { AIMessageChunk, BaseMessage } from "@langchain/core/messages";
import type { ChatGenerationChunk, ChatResult, LLMResult } from "@langchain/core/outputs";
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import { convertToOpenAITool } from "@langchain/core/utils/function_calling";
import type { Runnable } from "@langchain/core/runnables";
import type { InteropZodType } from "@langchain/core/utils/types";
import type { SerializableSchema } from "@langchain/core/utils/standard_schema";

import { brandNames, DEFAULT_BRAND, type BrandNames } from "../config.js";
import { spendOf } from "../spend/call-options.js";
import { PAYMENT_EVENT_NAME } from "../x402/event-name.js";
import { responseHeaders } from "../http/fetch-stack.js";
import { createServiceFetch, faceStackOptions, sharedStackOf, type ServiceFetch } from "../stack.js";
import { ConfigurationError, ResponseFormatError, ValidationError } from "../http/errors.js";
import { stackContext } from "../http/context.js";
import { readResponseText } from "../http/body.js";
import { estimateChatTokens } from "../http/token-estimate.js";
import type { RetryOptions } from "../http/retry.js";
import type { ServiceResponseHeaders } from "../http/headers.js";
import { modelRecordsFor, type ModelRecords } from "../models/records.js";
import {
  toWireServiceParameters,
  validateServiceParameters,
  type ServiceParameters,
  type WebSearchCitation,
} from "./service-parameters.js";
import { parseModelId } from "./model-id.js";
import { toWireMessages } from "./convert.js";
import { DEFAULT_STREAM_RETRIES, withTransientRetries, type StreamProgress } from "./stream-errors.js";
import { withCharacterCheck } from "./character-check.js";
import { structuredOutput, type SchemaRecord } from "./structured-output.js";
import {
  pickRequestFields,
  REQUEST_FIELD_NAMES,
  toWireRequestFields,
  validateRequestFields,
  wireToolChoice,
  type ChatRequestFields,
} from "./request-fields.js";
import { checkCapabilities, profileFromRecord, schemaInPrompt, type ServiceModelProfile } from "./profile.js";
import { checkModelRecord, learnRefusal, modelToSend, warnDeprecatedOnce, withModel } from "./model-checks.js";
import { registerContentBlockTranslator, withCitationAnnotations } from "./content-blocks.js";
import { isEmpty, llmOutputOf, resultFromCompletion, type ChatReadContext } from "./completion.js";
import { readChatStream, type StreamPiece } from "./stream.js";
import { askStreamSearchResults } from "./stream-search-results.js";
import { chatModelEvents } from "./stream-events.js";
import { ChatServiceBinding } from "./binding.js";
import type { ChatServiceCallOptions, ChatServiceInput, ServiceResponseFormat, ServiceToolChoice, WireCompletion } from "./types.js";

export { ChatServiceBinding } from "./binding.js";
export { ReasoningEffortSchema, type ReasoningEffort } from "./request-fields.js";
export type { ChatServiceCallOptions, ChatServiceInput, ServiceCost, ServiceResponseFormat, ServiceToolChoice } from "./types.js";
export type { ServiceParameters, WebSearchCitation };

/**
 * LangChain's `maxRetries` (BaseChatModel's AsyncCaller, ChatOpenAI's client: retries after the first attempt)
 * is applied by the fetch stack, the only place this model retries (the AsyncCaller is never used): it becomes
 * `retry.maxRetries` (and bounds the re-requests of a stream that failed in-band transiently before any content,
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
  if (fields.serviceFetch || fields.client) {
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

/** The profile fields a `profile` option may set: booleans and positive token counts. */
function validateProfileOverrides(profile: unknown): Partial<ServiceModelProfile> {
  if (profile === undefined) return {};
  if (typeof profile !== "object" || profile === null || Array.isArray(profile))
    throw new ValidationError("profile must be an object of ModelProfile fields");
  for (const [key, value] of Object.entries(profile)) {
    const ok =
      key === "maxInputTokens" || key === "maxOutputTokens"
        ? typeof value === "number" && Number.isFinite(value) && value > 0
        : key === "fileMimeTypes"
          ? Array.isArray(value) && value.every((v) => typeof v === "string")
          : typeof value === "boolean" || value === undefined;
    if (!ok)
      throw new ValidationError(
        `profile.${key} must be ${key.startsWith("max") ? "a positive number" : "a boolean"} (got ${JSON.stringify(value)})`,
      );
  }
  return { ...(profile as Partial<ServiceModelProfile>) };
}

// the request fields are members of the model (declared once, in ChatRequestFields)
export interface ChatService extends ChatRequestFields {}

// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the fields are optional and the constructor assigns those given
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
      "idleTimeout",
      "totalTimeout",
      "maxResponseBytes",
      "maxEventBytes",
      "model",
      "apiKey",
      "baseUrl",
      "brand",
      "timeout",
      "defaultHeaders",
      "modelKwargs",
      ...REQUEST_FIELD_NAMES,
      "stop",
      "responseFormat",
      "toolChoice",
      "streaming",
      "streamUsage",
      "serviceParameters",
      "splitThinkTags",
      "followDeprecation",
      "profile",
      "disableStreaming",
      "outputVersion",
      "tags",
      "metadata",
      "verbose",
    ];
  }

  model: string;
  brand: string;
  modelKwargs?: Record<string, unknown>;
  stop?: string | string[];
  responseFormat?: ServiceResponseFormat;
  toolChoice?: ServiceToolChoice;
  streaming: boolean;
  streamUsage: boolean;
  serviceParameters: ServiceParameters;
  splitThinkTags: boolean;
  /** send a deprecated model's `replacementModelId` (from its `/models` record) in its place */
  followDeprecation: boolean;

  readonly #fetch: ServiceFetch;
  readonly #names: BrandNames;
  /** model id without suffix: the stack paces per key and model, and `/models` lists it so */
  readonly #baseModelId: string;
  readonly #url: string;
  /** `maxRetries: 0` on a shared stack: every request asks the stack not to retry */
  readonly #noRetry: boolean;
  /** re-requests of a stream that failed in-band transiently before any content (within `maxRetries`) */
  readonly #streamRetries: number;
  /** the deployment's `/models` records (shared by every instance on the same base URL) */
  readonly #records: ModelRecords;
  /** the `profile` option: wins field by field over the service's */
  readonly #profileOverrides: Partial<ServiceModelProfile>;
  readonly #read: ChatReadContext;

  constructor(fields: ChatServiceInput) {
    super(fields ?? {});
    if (!fields || typeof fields.model !== "string") throw new ValidationError("ChatService needs `model`");
    const requestFields = validateRequestFields(fields, "ChatService options");
    if (fields.stop !== undefined) {
      const stop = fields.stop;
      const ok =
        typeof stop === "string" ||
        (Array.isArray(stop) && stop.length >= 1 && stop.length <= 4 && stop.every((s) => typeof s === "string"));
      if (!ok) throw new ValidationError("invalid ChatService options: stop: a string or 1 to 4 strings");
    }
    for (const key of ["streaming", "streamUsage", "splitThinkTags", "followDeprecation"] as const) {
      if (fields[key] !== undefined && typeof fields[key] !== "boolean") throw new ValidationError(`${key} must be a boolean`);
    }
    const kwargs = fields.modelKwargs;
    if (kwargs !== undefined && (typeof kwargs !== "object" || kwargs === null || Array.isArray(kwargs))) {
      throw new ValidationError("modelKwargs must be an object of request body fields");
    }
    this.#profileOverrides = validateProfileOverrides(fields.profile);
    const { retry, noRetry } = retryFromMaxRetries(fields);
    this.#noRetry = noRetry;
    this.#streamRetries = noRetry || retry === false ? 0 : (retry?.maxRetries ?? DEFAULT_STREAM_RETRIES);
    const shared = sharedStackOf(fields);
    this.brand = shared?.brand ?? fields.brand ?? DEFAULT_BRAND;
    this.#names = brandNames(this.brand);
    this.model = fields.model;
    this.#baseModelId = parseModelId(fields.model, this.brand).id;
    this.serviceParameters = validateServiceParameters(fields.serviceParameters ?? {});
    this.modelKwargs = fields.modelKwargs;
    Object.assign(this, requestFields);
    this.stop = fields.stop;
    this.responseFormat = fields.responseFormat;
    this.toolChoice = fields.toolChoice;
    this.streaming = fields.streaming ?? false;
    this.streamUsage = fields.streamUsage ?? true;
    this.splitThinkTags = fields.splitThinkTags ?? true;
    this.followDeprecation = fields.followDeprecation ?? false;
    this.#fetch = shared ?? createServiceFetch({ ...faceStackOptions(fields), brand: this.brand, retry });
    this.#url = this.#fetch.url("/chat/completions");
    this.#records = modelRecordsFor(this.#fetch);
    registerContentBlockTranslator(this.brand);
    const model = this;
    this.#read = {
      names: this.#names,
      provider: this.brand,
      get splitThinkTags() {
        return model.splitThinkTags;
      },
    };
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
      ...REQUEST_FIELD_NAMES,
      "serviceParameters",
      "tools",
      "tool_choice",
      "response_format",
      "parallel_tool_calls",
      "strict",
      "extraBody",
      "streamUsage",
    ];
  }

  /** The fetch stack this model sends through (share it with `serviceFetch`). */
  get serviceFetch(): ServiceFetch {
    return this.#fetch;
  }

  /**
   * What the model can do, as LangChain reads it (`createAgent`, middleware): from the service's `/models` record
   * of the model once read (`loadProfile()`, or in the background on the first call), with the `profile` option
   * over it field by field. `{}` (plus the option) before that, and for a model the service does not list.
   */
  override get profile(): ServiceModelProfile {
    return { ...this.#currentProfile() }; // a copy: the caller may change it
  }

  /** The profile as last built, and the record it was built from (a fresh read builds it again). */
  #profileOf: { record?: unknown; profile?: Readonly<ServiceModelProfile> } = {};

  /** The profile, built once per record read (every call checks it), without a copy. */
  #currentProfile(): Readonly<ServiceModelProfile> {
    const record = this.#records.get(this.#baseModelId);
    if (this.#profileOf.record !== record || !this.#profileOf.profile) {
      this.#profileOf = { record, profile: Object.freeze({ ...(record ? profileFromRecord(record) : {}), ...this.#profileOverrides }) };
    }
    return this.#profileOf.profile!;
  }

  /**
   * Reads the service's `/models` once for every instance on this base URL (fresh for an hour; concurrent calls
   * share one request, sent without credentials) and returns `profile`. Rejects with the stack's typed error when
   * the listing cannot be read.
   */
  async loadProfile(options: { signal?: AbortSignal } = {}): Promise<ServiceModelProfile> {
    // a trait (`fastest`) or a compatibility name (`gpt-4o`) is the profile of the model it resolves to
    await this.#records.resolve(this.#baseModelId, { signal: options.signal });
    return this.profile;
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
  override _combineLLMOutput(...llmOutputs: LLMResult["llmOutput"][]): LLMResult["llmOutput"] {
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
   * The request body without `messages` (also used for tracing: no secrets, no side effects). Validates the
   * per-call request fields and `serviceParameters` (throws `ValidationError` before any request).
   */
  override invocationParams(options?: this["ParsedCallOptions"], extra?: { streaming?: boolean }): Record<string, unknown> {
    const streaming = extra?.streaming ?? this.streaming;
    const callParams = options?.serviceParameters
      ? { ...this.serviceParameters, ...validateServiceParameters(options.serviceParameters) }
      : this.serviceParameters;
    const callFields = isEmpty(pickRequestFields(options)) ? {} : validateRequestFields(options, "call options");
    const fields = { ...pickRequestFields(this), ...callFields } as ChatRequestFields;
    const stop = options?.stop ?? this.stop;
    if (Array.isArray(stop) && stop.length > 4) throw new ValidationError("stop takes at most 4 sequences");
    const tools = options?.tools?.length ? options.tools.map((t) => this.#toWireTool(t, options.strict)) : undefined;
    const wire = toWireRequestFields(fields);
    delete wire.parallel_tool_calls;
    const params: Record<string, unknown> = {
      model: this.model,
      ...wire,
      stop,
      response_format: options?.response_format ?? this.responseFormat,
      tools,
      tool_choice: wireToolChoice(options?.tool_choice ?? (tools ? this.toolChoice : undefined)),
      parallel_tool_calls: tools ? (options?.parallel_tool_calls ?? fields.parallelToolCalls) : undefined,
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

  #body(messages: BaseMessage[], options: this["ParsedCallOptions"], streaming: boolean): Record<string, unknown> {
    const body: Record<string, unknown> = {
      ...this.invocationParams(options, { streaming }),
      messages: toWireMessages(messages, this.model),
    };
    if (streaming) {
      body.stream = true;
      askStreamSearchResults(body, this.#names.parameters, this.brand);
    }
    return body;
  }

  /**
   * Sends one request. A request the profile says the model cannot serve is refused here, before anything is sent
   * (`UnsupportedCapabilityError`); the first call of a model reads the profile in the background.
   */
  async #post(
    wireBody: Record<string, unknown>,
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): Promise<Response> {
    options.signal?.throwIfAborted();
    // a deprecated model: reported once, replaced only when the caller asked (./model-checks.ts)
    const context = stackContext(this.#fetch);
    const { model } = modelToSend(context, this.#records, this.#baseModelId, this.followDeprecation === true, this.brand);
    const record = this.#records.get(model);
    // a model with neither response schemas nor tools gets a JSON-schema request as the schema in its prompt
    const body = schemaInPrompt(withModel(wireBody, this.#baseModelId, model), record);
    checkModelRecord(context, body, record, this.#records, model);
    const profile =
      model === this.#baseModelId ? this.#currentProfile() : { ...(record ? profileFromRecord(record) : {}), ...this.#profileOverrides };
    checkCapabilities(body, profile, model);
    this.#records.refreshInBackground();
    return withCharacterCheck(this.#fetch, body, this.#names.parameters, this.brand, () =>
      this.#fetch(this.#url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: body.stream ? "text/event-stream" : "application/json" },
        body: JSON.stringify(body),
        signal: options.signal,
        service: {
          model,
          // its input and completion cap, for the token window: near the limit the send waits instead of drawing a 429
          estimatedTokens: estimateChatTokens(body),
          timeout: options.timeout,
          ...(this.#noRetry ? { retry: false } : {}),
          // the payments this request causes reach this run's own callbacks (`invoke(x, { callbacks })`)
          onPaymentEvent: runManager ? (event) => runManager.handleCustomEvent(PAYMENT_EVENT_NAME, event) : undefined,
          // this call's budgets (`invoke(x, { budget })`, the run's `configurable.budget`) and the SpendLogs among its callbacks
          spend: spendOf(options, runManager),
        },
      }),
    ).catch((err: unknown) => {
      learnRefusal(context, err, this.#records, model); // a parameter this model refuses is refused unsent next time
      throw err;
    });
  }

  #headers(response: Response): ServiceResponseHeaders {
    const headers = responseHeaders(response, this.brand);
    const dep = headers.deprecation;
    if (dep?.warning || dep?.date) {
      const detail = `${dep.date ? ` (date: ${dep.date})` : ""}${dep.warning ? `: ${dep.warning}` : ""}`;
      warnDeprecatedOnce(stackContext(this.#fetch), this.brand, headers.model?.id ?? this.#baseModelId, detail);
    }
    return headers;
  }

  override async _generate(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): Promise<ChatResult> {
    if (this.streaming) return this.#generateFromStream(messages, options, runManager);
    const response = await this.#post(this.#body(messages, options, false), options, runManager);
    const headers = this.#headers(response);
    const text = await readResponseText(response, { what: "the chat completion", signal: options.signal, headers });
    let data: WireCompletion;
    try {
      data = JSON.parse(text) as WireCompletion;
    } catch {
      throw new ResponseFormatError("response body is not JSON", { status: response.status, body: text, headers });
    }
    return resultFromCompletion(data, headers, this.#read);
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
    return { generations, llmOutput: llmOutputOf((generations[0]!.message as AIMessageChunk).usage_metadata) };
  }

  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    const v1 = !this.disableStreaming && (options.outputVersion ?? this.outputVersion) === "v1";
    if (v1 && (options.n ?? this.n ?? 1) === 1) {
      yield* withCitationAnnotations(this.#streamChunks(messages, options, runManager));
      return;
    }
    // the pieces read here, not through #streamChunks: one generator less to step through per chunk
    for await (const pieces of this.#streamPieces(messages, options, runManager)) {
      for (const piece of pieces) yield piece.chunk;
    }
  }

  async *#streamChunks(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    for await (const pieces of this.#streamPieces(messages, options, runManager)) {
      for (const piece of pieces) yield piece.chunk;
    }
  }

  /** One streamed answer; requested again when it failed in-band transiently (overloaded, an outage) before any content. */
  #streamPieces(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<StreamPiece[]> {
    const retries = this.#noRetry ? 0 : this.#streamRetries;
    return withTransientRetries((progress) => this.#streamAttempt(messages, options, runManager, progress), {
      retries,
      signal: options.signal,
    });
  }

  async *#streamAttempt(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager: CallbackManagerForLLMRun | undefined,
    progress: StreamProgress,
  ): AsyncGenerator<StreamPiece[]> {
    const response = await this.#post(this.#body(messages, options, true), options, runManager);
    const headers = this.#headers(response);
    yield* readChatStream(response, headers, this.#read, {
      streamUsage: options.streamUsage ?? this.streamUsage,
      signal: options.signal,
      runManager,
      progress,
      maxEventBytes: this.#fetch.limits?.maxEventBytes,
    });
  }

  /**
   * The content-block event protocol (`streamEvents()` without a version, and LangGraph's v3 message streaming),
   * from the same pieces as `.stream()` (./stream-events.ts).
   */
  override async *_streamChatModelEvents(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatModelStreamEvent> {
    yield* chatModelEvents(this.#streamPieces(messages, options, runManager));
  }

  override withStructuredOutput<RunOutput extends SchemaRecord = SchemaRecord>(
    outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | SchemaRecord,
    config?: StructuredOutputMethodOptions<false>,
  ): Runnable<BaseLanguageModelInput, RunOutput>;
  override withStructuredOutput<RunOutput extends SchemaRecord = SchemaRecord>(
    outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | SchemaRecord,
    config?: StructuredOutputMethodOptions<true>,
  ): Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }>;
  override withStructuredOutput<RunOutput extends SchemaRecord = SchemaRecord>(
    outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | SchemaRecord,
    config?: StructuredOutputMethodOptions<boolean>,
  ): Runnable<BaseLanguageModelInput, RunOutput> | Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }>;
  /**
   * Structured output by `json_schema` response format, a forced function call, or `jsonMode`; without a `method`,
   * the one the profile allows (./structured-output.ts).
   */
  override withStructuredOutput<RunOutput extends SchemaRecord = SchemaRecord>(
    outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | SchemaRecord,
    config?: StructuredOutputMethodOptions<boolean>,
  ): Runnable<BaseLanguageModelInput, RunOutput> | Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }> {
    return structuredOutput(this, outputSchema, config) as never;
  }
}
