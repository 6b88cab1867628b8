/**
 * The option and call-option types of `ChatService`, and the wire shapes of a chat completion it reads. Kept
 * apart from the model file (as provider packages keep their `types.ts`), so that the files the model is made of
 * (request fields, profile, streams, structured output) share them without importing the model.
 */
import type {
  BaseChatModelCallOptions,
  BaseChatModelParams,
  BindToolsInput,
  ToolChoice,
} from "@langchain/core/language_models/chat_models";
import type { FetchStackOptions, ServiceFetch } from "../stack.js";
import type { ServiceClient } from "../client.js";
import type { ChatRequestFields } from "./request-fields.js";
import type { ServiceModelProfile } from "./profile.js";
import type { ServiceParameters } from "./service-parameters.js";
import type { WireMessage, WireUsage } from "./convert.js";
import type { SpendBudget } from "../spend/budget.js";

export type ServiceToolChoice = ToolChoice | "required";

export type ServiceResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | {
      type: "json_schema";
      json_schema: { name?: string; description?: string; schema?: Record<string, unknown>; strict?: boolean; [k: string]: unknown };
    };

export interface ChatServiceInput extends BaseChatModelParams, ChatRequestFields, Omit<FetchStackOptions, "paymentLayer" | "pacingLayer"> {
  /** model id, optionally with feature suffixes `id:key=value&key2=value2` (see `buildModelId`) */
  model: string;
  /** share one fetch stack between several models and clients (else one is built from the options) */
  serviceFetch?: ServiceFetch;
  /** send through this client's stack (as `serviceFetch: client.fetch`): many models over one client share one */
  client?: Pick<ServiceClient, "fetch">;
  /** extra request body fields, sent unchanged (the spec lets unlisted fields pass through) */
  modelKwargs?: Record<string, unknown>;
  /** up to 4 stop sequences */
  stop?: string | string[];
  responseFormat?: ServiceResponseFormat;
  toolChoice?: ServiceToolChoice;
  /** stream on `invoke` too (the answer is the merged stream) */
  streaming?: boolean;
  /** usage (and cost) on streamed answers; default true */
  streamUsage?: boolean;
  /** `service_parameters` (camelCase here, snake_case on the wire under the brand's name) */
  serviceParameters?: ServiceParameters;
  /** split legacy `<think>` blocks out of content into reasoning (default true) */
  splitThinkTags?: boolean;
  /**
   * A model whose `/models` record carries a `deprecation` with a `replacementModelId`: send the replacement in its
   * place (default false: the model as configured, with a one-time warning naming the replacement)
   */
  followDeprecation?: boolean;
  /**
   * Overrides the profile read from the service's `/models`, field by field (`{ maxInputTokens: 8000 }`,
   * `{ toolCalling: false }`); an explicit `false` also refuses requests needing that capability.
   */
  profile?: Partial<ServiceModelProfile>;
}

export interface ChatServiceCallOptions extends BaseChatModelCallOptions, ChatRequestFields {
  /** merged over the constructor's `serviceParameters` */
  serviceParameters?: ServiceParameters;
  tools?: BindToolsInput[];
  tool_choice?: ServiceToolChoice;
  response_format?: ServiceResponseFormat;
  /** as `parallelToolCalls` (OpenAI's name; wins over it) */
  parallel_tool_calls?: boolean;
  /** strict JSON schema for tools */
  strict?: boolean;
  /** request body fields sent unchanged (pass-through) */
  extraBody?: Record<string, unknown>;
  /** a spend budget for this call (one agent run can carry its own; or put it in the run's `configurable.budget`) */
  budget?: SpendBudget;
  streamUsage?: boolean;
}

/** Cost of one request (spec 2.3). */
export interface ServiceCost {
  usd: number;
  diem: number;
}

export interface WireChoice {
  index?: number;
  message?: WireMessage;
  delta?: WireMessage;
  finish_reason?: string | null;
  stop_reason?: string | null;
  logprobs?: unknown;
}

export interface WireCompletion {
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
