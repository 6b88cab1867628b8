/**
 * The chat request's own fields, camelCase in TypeScript, as constructor options of `ChatService` and per call:
 * one zod schema validates both (a bad value is a `ValidationError` naming the option, before any request), and
 * one table maps them to their wire names. The rules are the live service's (its chat guide): `anonUserId` is
 * trimmed, 1–128 printable ASCII characters without `||` (blank is treated as absent, as the service does);
 * `reasoning` is `{ effort, enabled, summary }` (`enabled: false` is the recommended off switch, ignored when an
 * effort is set); `promptCacheRetention` is `default | extended | 24h`; `verbosity` `low | medium | high | auto`;
 * `minTemp` / `maxTemp` 0–2; `stopTokenIds` token ids; `topLogprobs` an integer ≥ 0.
 */
import { z } from "zod";
import { ValidationError } from "../http/errors.js";

export const ReasoningEffortSchema = z.enum(["none", "minimal", "low", "medium", "high", "xhigh", "max"]);
export type ReasoningEffort = z.infer<typeof ReasoningEffortSchema>;

/** `reasoning` (sent as is): `enabled: false` turns thinking off on supported models unless an effort is set. */
export const ReasoningOptionsSchema = z.strictObject({
  effort: ReasoningEffortSchema.optional(),
  enabled: z.boolean().optional(),
  summary: z.enum(["auto", "concise", "detailed"]).optional(),
});
export type ReasoningOptions = z.infer<typeof ReasoningOptionsSchema>;

export const PromptCacheRetentionSchema = z.enum(["default", "extended", "24h"]);
export type PromptCacheRetention = z.infer<typeof PromptCacheRetentionSchema>;
export const VerbositySchema = z.enum(["low", "medium", "high", "auto"]);
export type Verbosity = z.infer<typeof VerbositySchema>;

/** `anon_user_id`: trimmed; blank means absent; then 1–128 printable ASCII (0x20–0x7E) without `||`. */
export const AnonUserIdSchema = z
  .string()
  .transform((s) => s.trim())
  .refine((s) => s.length <= 128, "must be at most 128 characters (after trimming)")
  .refine((s) => /^[\x20-\x7E]*$/.test(s), "must be printable ASCII (0x20-0x7E)")
  .refine((s) => !s.includes("||"), "must not contain '||'")
  .transform((s) => (s === "" ? undefined : s));

/** Every request field a `ChatService` takes by name, with the service's bounds. */
export const RequestFieldsSchema = z
  .object({
    temperature: z.number().min(0).max(2),
    topP: z.number().min(0).max(1),
    // -1 as in ChatOpenAI: no limit (not sent); the service silently ignores 0 and below, so they are refused
    maxTokens: z
      .number()
      .int()
      .refine((v) => v === -1 || v >= 1, "must be a positive integer, or -1 for no limit"),
    maxCompletionTokens: z.number().int().positive(),
    seed: z.number().int().positive(),
    frequencyPenalty: z.number().min(-2).max(2),
    presencePenalty: z.number().min(-2).max(2),
    repetitionPenalty: z.number().min(0),
    topK: z.number().int().min(0),
    minP: z.number().min(0).max(1),
    minTemp: z.number().min(0).max(2),
    maxTemp: z.number().min(0).max(2),
    reasoningEffort: ReasoningEffortSchema,
    reasoning: ReasoningOptionsSchema,
    logprobs: z.boolean(),
    topLogprobs: z.number().int().min(0),
    n: z.number().int().min(1),
    parallelToolCalls: z.boolean(),
    promptCacheKey: z.string().min(1),
    promptCacheRetention: PromptCacheRetentionSchema,
    verbosity: VerbositySchema,
    anonUserId: AnonUserIdSchema,
    stopTokenIds: z.array(z.number().int().min(0)).min(1),
  })
  .partial()
  .refine((f) => f.minTemp === undefined || f.maxTemp === undefined || f.minTemp <= f.maxTemp, {
    message: "minTemp must not be above maxTemp",
    path: ["minTemp"],
  });

/** The request fields, as options of `ChatService` and of each call (call options win). */
export interface ChatRequestFields {
  /** 0–2 */
  temperature?: number;
  /** 0–1 */
  topP?: number;
  /** deprecated by the service for `maxCompletionTokens`; -1: no limit (not sent), as in ChatOpenAI */
  maxTokens?: number;
  /** the output cap, reasoning tokens included (at most the model's `maxOutputTokens`) */
  maxCompletionTokens?: number;
  /** a positive integer */
  seed?: number;
  /** -2–2 */
  frequencyPenalty?: number;
  /** -2–2 */
  presencePenalty?: number;
  /** ≥ 0; 1 is no penalty */
  repetitionPenalty?: number;
  /** an integer ≥ 0 */
  topK?: number;
  /** 0–1 */
  minP?: number;
  /** dynamic temperature scaling: lowest temperature, 0–2 */
  minTemp?: number;
  /** dynamic temperature scaling: highest temperature, 0–2 */
  maxTemp?: number;
  /** sent as `reasoning_effort` (wins over `reasoning.effort` at the service) */
  reasoningEffort?: ReasoningEffort;
  /** `{ effort, enabled, summary }`; `enabled: false` turns thinking off (ignored when an effort is set) */
  reasoning?: ReasoningOptions;
  /** needs a model with `profile.logprobs` */
  logprobs?: boolean;
  /** an integer ≥ 0; needs a model with `profile.logprobs` */
  topLogprobs?: number;
  /** choices per request (each is paid) */
  n?: number;
  /** sent only with tools */
  parallelToolCalls?: boolean;
  /** routing hint for prompt caching across turns */
  promptCacheKey?: string;
  /** `default` | `extended` | `24h` (the last two keep the cache 24 hours on supported models) */
  promptCacheRetention?: PromptCacheRetention;
  /** `low` | `medium` | `high` | `auto` */
  verbosity?: Verbosity;
  /** your end user's id (not `user`): 1–128 printable ASCII characters without `||`, trimmed; blank is absent */
  anonUserId?: string;
  /** token ids that stop the answer */
  stopTokenIds?: number[];
}
export type ParsedRequestFields = ChatRequestFields;
// the schema and the interface name the same fields with the same types (a mismatch fails to compile)
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameFields: Same<Required<z.output<typeof RequestFieldsSchema>>, Required<ChatRequestFields>> = true;
void sameFields;
export type RequestFieldName = keyof ChatRequestFields;

/** camelCase name -> wire name, in the order they are sent. */
export const REQUEST_FIELD_WIRE_NAMES = {
  temperature: "temperature",
  topP: "top_p",
  maxTokens: "max_tokens",
  maxCompletionTokens: "max_completion_tokens",
  seed: "seed",
  frequencyPenalty: "frequency_penalty",
  presencePenalty: "presence_penalty",
  repetitionPenalty: "repetition_penalty",
  topK: "top_k",
  minP: "min_p",
  minTemp: "min_temp",
  maxTemp: "max_temp",
  reasoningEffort: "reasoning_effort",
  reasoning: "reasoning",
  logprobs: "logprobs",
  topLogprobs: "top_logprobs",
  n: "n",
  parallelToolCalls: "parallel_tool_calls",
  promptCacheKey: "prompt_cache_key",
  promptCacheRetention: "prompt_cache_retention",
  verbosity: "verbosity",
  anonUserId: "anon_user_id",
  stopTokenIds: "stop_token_ids",
} as const satisfies Record<RequestFieldName, string>;

export const REQUEST_FIELD_NAMES = Object.keys(REQUEST_FIELD_WIRE_NAMES) as RequestFieldName[];

/** The request fields among `source`'s members (undefined ones left out). */
export function pickRequestFields(source: object | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!source) return out;
  for (const key of REQUEST_FIELD_NAMES) {
    const value = (source as Record<string, unknown>)[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/**
 * Validates the request fields of `source` (constructor fields or call options); throws a `ValidationError`
 * naming each bad option (`label`: "ChatService options" or "call options").
 */
export function validateRequestFields(source: object | undefined, label: string): ParsedRequestFields {
  const parsed = RequestFieldsSchema.safeParse(pickRequestFields(source));
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new ValidationError(`invalid ${label}: ${detail}`, { issues: parsed.error.issues });
  }
  const out: ParsedRequestFields = {};
  for (const [key, value] of Object.entries(parsed.data)) if (value !== undefined) (out as Record<string, unknown>)[key] = value;
  return out;
}

/** The wire members of parsed fields (`maxTokens: -1`, no limit, is not sent). */
export function toWireRequestFields(fields: ParsedRequestFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of REQUEST_FIELD_NAMES) {
    const value = fields[key];
    if (value === undefined || (key === "maxTokens" && value === -1)) continue;
    out[REQUEST_FIELD_WIRE_NAMES[key]] = value;
  }
  return out;
}

/** LangChain's `tool_choice` as the wire takes it (`any` is `required`; a bare name forces that function). */
export function wireToolChoice(choice: ToolChoiceInput | undefined): unknown {
  if (choice === undefined) return undefined;
  if (choice === "any") return "required";
  if (choice === "auto" || choice === "none" || choice === "required") return choice;
  if (typeof choice === "string") return { type: "function", function: { name: choice } };
  return choice;
}
type ToolChoiceInput = string | Record<string, unknown>;
