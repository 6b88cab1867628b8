/**
 * What `ChatService.withConfig` and `bindTools` return. A core `RunnableBinding` (same `config`, same
 * serialization) that keeps acting like the chat model, as a configured `ChatOpenAI` does (its `withConfig`
 * returns a `ChatOpenAI`): `streamEvents()` without a version gives the content-block stream (`.text`, awaitable
 * message), `bindTools` / `withStructuredOutput` keep the options bound so far, and `profile` / `loadProfile()`
 * answer for the model (so `createAgent` reads a bound model's profile too).
 */
import type { BaseLanguageModelInput, StructuredOutputMethodOptions } from "@langchain/core/language_models/base";
import type { BindToolsInput } from "@langchain/core/language_models/chat_models";
import type { AIMessageChunk, BaseMessage } from "@langchain/core/messages";
import { mergeConfigs, RunnableBinding, type Runnable } from "@langchain/core/runnables";
import type { InteropZodType } from "@langchain/core/utils/types";
import type { SerializableSchema } from "@langchain/core/utils/standard_schema";
import { ValidationError } from "../http/errors.js";
import type { ServiceModelProfile } from "./profile.js";
import { structuredOutput, type SchemaRecord } from "./structured-output.js";
import type { ChatServiceCallOptions } from "./types.js";

/**
 * Core's `streamEvents` is overloaded by `version` and `encoding` (and, on chat models, without a version); one
 * override that serves them all is typed loosely, as core's own implementation is.
 */
// biome-ignore lint/suspicious/noExplicitAny: the one implementation of core's overloaded streamEvents
type StreamEventsLoose = any;

/** What the binding needs of the model it binds (`ChatService` is one): typed here, so the model file alone imports the other. */
export interface BindableChatModel extends Runnable<BaseLanguageModelInput, AIMessageChunk, ChatServiceCallOptions> {
  readonly profile: ServiceModelProfile;
  loadProfile(options?: { signal?: AbortSignal }): Promise<ServiceModelProfile>;
  bindTools(tools: BindToolsInput[], kwargs?: Partial<ChatServiceCallOptions>): { readonly config: Partial<ChatServiceCallOptions> };
  /** without a `version`: the content-block stream (`ChatService#streamEvents`) */
  streamEvents(input: BaseLanguageModelInput, options?: StreamEventsLoose): StreamEventsLoose;
}

export class ChatServiceBinding extends RunnableBinding<BaseLanguageModelInput, AIMessageChunk, ChatServiceCallOptions> {
  declare bound: BindableChatModel;

  /** The model's profile (`ChatService#profile`). */
  get profile(): ServiceModelProfile {
    return this.bound.profile;
  }

  /** Reads the model's profile from the service (`ChatService#loadProfile`). */
  loadProfile(options?: { signal?: AbortSignal }): Promise<ServiceModelProfile> {
    return this.bound.loadProfile(options);
  }

  /** `streamEvents(input)` / `(input, options)` without `version`: the model's content-block stream. */
  override streamEvents(input: BaseLanguageModelInput, options?: StreamEventsLoose, streamOptions?: StreamEventsLoose): StreamEventsLoose {
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

  withStructuredOutput<RunOutput extends SchemaRecord = SchemaRecord>(
    outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | SchemaRecord,
    config?: StructuredOutputMethodOptions<false>,
  ): Runnable<BaseLanguageModelInput, RunOutput>;
  withStructuredOutput<RunOutput extends SchemaRecord = SchemaRecord>(
    outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | SchemaRecord,
    config?: StructuredOutputMethodOptions<true>,
  ): Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }>;
  withStructuredOutput<RunOutput extends SchemaRecord = SchemaRecord>(
    outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | SchemaRecord,
    config?: StructuredOutputMethodOptions<boolean>,
  ): Runnable<BaseLanguageModelInput, RunOutput> | Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }>;
  /** Structured output from the configured model: the bound call options reach the request. */
  withStructuredOutput<RunOutput extends SchemaRecord = SchemaRecord>(
    outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | SchemaRecord,
    config?: StructuredOutputMethodOptions<boolean>,
  ): Runnable<BaseLanguageModelInput, RunOutput> | Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }> {
    return structuredOutput(this, outputSchema, config) as never;
  }
}
