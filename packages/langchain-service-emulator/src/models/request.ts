/**
 * The chat completion request as the emulator accepts it (zod), the `<brand>_parameters` object, and the
 * model feature suffix (`emu-s:enable_web_search=on&enable_web_citations=true`).
 * The top level is closed, as published (`ChatCompletionRequest` has `additionalProperties: false`): an
 * unknown member is a 400, and so is a known field with a wrong type. Messages and content parts stay open
 * (their published schemas are). Unknown keys inside `<brand>_parameters` are dropped silently. `null`
 * counts as absent for optional fields (OpenAI clients send `null` for unset options).
 */
import { z } from "zod";
import type { BrandNames } from "langchain-service";

const cacheControl = z.object({ type: z.literal("ephemeral"), ttl: z.string().optional() });

export const textPartSchema = z.looseObject({
  type: z.literal("text"),
  text: z.string().min(1),
  cache_control: cacheControl.nullish(),
});

const contentPartSchema = z.discriminatedUnion("type", [
  textPartSchema,
  z.looseObject({
    type: z.literal("image_url"),
    image_url: z.looseObject({ url: z.string(), detail: z.string().nullish() }),
    cache_control: cacheControl.nullish(),
  }),
  z.looseObject({
    type: z.literal("input_audio"),
    input_audio: z.looseObject({
      data: z.string(),
      format: z.enum(["wav", "mp3", "aiff", "aac", "ogg", "flac", "m4a", "pcm16", "pcm24"]).nullish(),
    }),
    cache_control: cacheControl.nullish(),
  }),
  z.looseObject({
    type: z.literal("video_url"),
    video_url: z.looseObject({ url: z.string() }),
    cache_control: cacheControl.nullish(),
  }),
  z.looseObject({
    type: z.literal("file"),
    // published: "The file content as a data URL (e.g., data:application/pdf;base64,...) or a publicly
    // accessible URL"; raw text or base64 is neither
    file: z.looseObject({
      file_data: z.string().regex(/^(data:[^,]*,|https?:\/\/)/i, "file_data must be a data URL or a publicly accessible URL"),
      filename: z.string().nullish(),
    }),
    cache_control: cacheControl.nullish(),
  }),
]);

const textContent = z.union([z.string(), z.array(textPartSchema)]);

const toolCallSchema = z.looseObject({
  id: z.string(),
  type: z.literal("function").optional(),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

const reasoningDetailSchema = z.looseObject({
  type: z.string(),
  data: z.string().nullish(),
  format: z.string().nullish(),
  id: z.string().nullish(),
  index: z.number().nullish(),
  text: z.string().nullish(),
});

export const messageSchema = z.discriminatedUnion("role", [
  z.looseObject({ role: z.literal("system"), content: textContent, name: z.string().nullish() }),
  z.looseObject({ role: z.literal("developer"), content: textContent, name: z.string().nullish() }),
  z.looseObject({
    role: z.literal("user"),
    content: z.union([z.string(), z.array(contentPartSchema)]),
    name: z.string().nullish(),
  }),
  z.looseObject({
    role: z.literal("assistant"),
    content: textContent.nullish(),
    name: z.string().nullish(),
    reasoning_content: z.string().nullish(),
    reasoning_details: z.array(reasoningDetailSchema).nullish(),
    tool_calls: z.array(toolCallSchema).nullish(),
    thought_signature: z.string().nullish(),
  }),
  z.looseObject({
    role: z.literal("tool"),
    // published: a string (not the content-part arrays of the other roles)
    content: z.string(),
    tool_call_id: z.string(),
    name: z.string().nullish(),
  }),
]);

export type ChatMessage = z.infer<typeof messageSchema>;
export type ContentPart = z.infer<typeof contentPartSchema>;
export type ToolCallWire = z.infer<typeof toolCallSchema>;

const functionToolSchema = z.looseObject({
  type: z.literal("function").optional(),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().nullish(),
    parameters: z.record(z.string(), z.unknown()).nullish(),
    strict: z.boolean().nullish(),
  }),
});
const builtinToolSchema = z.looseObject({ type: z.enum(["web_search", "x_search"]) });

// each variant is published with `additionalProperties: false`
const responseFormatSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("text") }),
  z.strictObject({ type: z.literal("json_object") }),
  z.strictObject({
    type: z.literal("json_schema"),
    json_schema: z.looseObject({
      name: z.string().nullish(),
      description: z.string().nullish(),
      schema: z.record(z.string(), z.unknown()).nullish(),
      strict: z.boolean().nullish(),
    }),
  }),
]);

const effort = z.enum(["none", "minimal", "low", "medium", "high", "xhigh", "max"]);

/** `<brand>_parameters` members. Keys not listed here are dropped (zod's default strip). */
export function serviceParametersSchema(names: BrandNames) {
  return z.object({
    character_slug: z.string().optional(),
    strip_thinking_response: z.boolean().optional(),
    disable_thinking: z.boolean().optional(),
    enable_e2ee: z.boolean().optional(),
    enable_web_search: z.enum(["off", "on", "auto"]).optional(),
    enable_web_scraping: z.boolean().optional(),
    enable_web_citations: z.boolean().optional(),
    include_search_results_in_stream: z.boolean().optional(),
    return_search_results_as_documents: z.boolean().optional(),
    [names.includeSystemPrompt]: z.boolean().optional(),
    enable_x_search: z.boolean().optional(),
  });
}

const baseChatRequestSchema = z.strictObject({
  model: z.string().min(1),
  messages: z.array(messageSchema).min(1),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  n: z.number().int().min(1).max(16).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  max_tokens: z.number().int().nullish(),
  max_completion_tokens: z.number().int().nullish(),
  stop: z.union([z.string(), z.array(z.string()).min(1).max(4)]).nullish(),
  stop_token_ids: z.array(z.number()).nullish(),
  seed: z.number().int().nullish(),
  frequency_penalty: z.number().min(-2).max(2).nullish(),
  presence_penalty: z.number().min(-2).max(2).nullish(),
  repetition_penalty: z.number().min(0).nullish(),
  top_k: z.number().int().min(0).nullish(),
  min_p: z.number().min(0).max(1).nullish(),
  max_temp: z.number().min(0).max(2).nullish(),
  min_temp: z.number().min(0).max(2).nullish(),
  reasoning_effort: effort.nullish(),
  reasoning: z.looseObject({ effort: effort.nullish(), summary: z.enum(["auto", "concise", "detailed"]).nullish() }).nullish(),
  response_format: responseFormatSchema.nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).nullish(),
  tools: z.array(z.union([builtinToolSchema, functionToolSchema])).nullish(),
  tool_choice: z
    .union([
      z.enum(["none", "auto", "required", "any"]),
      z.looseObject({ type: z.string(), function: z.looseObject({ name: z.string().min(1) }) }),
    ])
    .nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  user: z.string().nullish(),
  prompt_cache_key: z.string().nullish(),
  prompt_cache_retention: z.enum(["default", "extended", "24h"]).nullish(),
  store: z.boolean().nullish(),
  verbosity: z.enum(["low", "medium", "high", "auto"]).nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  fallbacks: z
    .array(z.looseObject({ model: z.string() }))
    .max(10)
    .nullish(),
  text: z.looseObject({ verbosity: z.enum(["low", "medium", "high", "auto"]).nullish() }).nullish(),
  include: z.array(z.string()).nullish(),
});

/**
 * `anon_user_id` as the live service checks it: trimmed (blank is absent), then 1–128 printable ASCII characters
 * (0x20–0x7E) without `||`.
 */
export const anonUserIdSchema = z
  .string()
  .transform((s) => s.trim())
  .refine((s) => s.length <= 128, "anon_user_id must be at most 128 characters")
  .refine((s) => /^[\x20-\x7E]*$/.test(s), "anon_user_id must be printable ASCII")
  .refine((s) => !s.includes("||"), "anon_user_id must not contain '||'");

/**
 * The fields the live service accepts beyond the published request (its chat guide): `anon_user_id`, and
 * `reasoning.enabled` (`false` turns thinking off unless an effort is set).
 */
const liveChatRequestSchema = baseChatRequestSchema.extend({
  reasoning: z
    .looseObject({ effort: effort.nullish(), enabled: z.boolean().nullish(), summary: z.enum(["auto", "concise", "detailed"]).nullish() })
    .nullish(),
  anon_user_id: anonUserIdSchema.nullish(),
});

export type ChatRequest = z.infer<typeof liveChatRequestSchema>;

const requestSchemas = new Map<string, typeof liveChatRequestSchema>();

/**
 * The request schema for a brand and mode (live: with the fields of `liveChatRequestSchema`; seed: the
 * published request, where they are unknown members): the base plus `<brand>_parameters`. Typed as the live one
 * (a computed key would widen every field's type); the route reads the parameters object by its brand name.
 */
export function chatRequestSchema(names: BrandNames, live = true): typeof liveChatRequestSchema {
  const key = `${names.brand}\n${live ? "live" : "seed"}`;
  let schema = requestSchemas.get(key);
  if (!schema) {
    const base = live ? liveChatRequestSchema : baseChatRequestSchema;
    schema = base.extend({ [names.parameters]: serviceParametersSchema(names).nullish() }) as unknown as typeof liveChatRequestSchema;
    requestSchemas.set(key, schema);
  }
  return schema;
}

/** The effective `<brand>_parameters` after defaults, body and suffix. */
export interface EffectiveParameters {
  character_slug?: string;
  strip_thinking_response: boolean;
  disable_thinking: boolean;
  enable_e2ee: boolean;
  enable_web_search: "off" | "on" | "auto";
  enable_web_scraping: boolean;
  enable_web_citations: boolean;
  include_search_results_in_stream: boolean;
  return_search_results_as_documents: boolean;
  include_system_prompt: boolean;
  enable_x_search: boolean;
}

/** Thrown for a 400 with a DetailedError body. */
export class InvalidRequest extends Error {
  constructor(
    message: string,
    readonly details: unknown,
    readonly issues?: unknown[],
  ) {
    super(message);
  }
}

const SUFFIX_FORBIDDEN = new Set(["enable_e2ee", "enable_x_search"]);

/**
 * Parses `id:key=value&key2=value2` (values URL-decoded) into typed parameters. Throws InvalidRequest for a
 * forbidden or unknown key or a value of the wrong type.
 */
export function parseModelSuffix(model: string, names: BrandNames): { id: string; overrides: Record<string, unknown> } {
  const colon = model.indexOf(":");
  if (colon === -1) return { id: model, overrides: {} };
  const id = model.slice(0, colon);
  const suffix = model.slice(colon + 1);
  const shape = serviceParametersSchema(names).shape as Record<string, z.ZodType>;
  const overrides: Record<string, unknown> = {};
  for (const pair of suffix.split("&")) {
    if (!pair) continue;
    const eq = pair.indexOf("=");
    let key: string;
    let raw: string;
    try {
      key = decodeURIComponent(eq === -1 ? pair : pair.slice(0, eq));
      raw = eq === -1 ? "true" : decodeURIComponent(pair.slice(eq + 1).replace(/\+/g, " "));
    } catch {
      throw new InvalidRequest("Invalid model feature suffix", { model: `malformed percent-encoding in ${JSON.stringify(pair)}` });
    }
    if (SUFFIX_FORBIDDEN.has(key)) {
      throw new InvalidRequest(`${key} cannot be set with a model feature suffix`, {
        model: `${key} is not accepted as a suffix; use ${names.parameters}`,
      });
    }
    const fieldSchema = shape[key];
    if (!fieldSchema) {
      throw new InvalidRequest(`Unknown model feature suffix parameter: ${key}`, {
        model: `unknown suffix parameter ${JSON.stringify(key)}`,
      });
    }
    const value: unknown = raw === "true" ? true : raw === "false" ? false : raw;
    // enable_web_search takes strings; "true"/"false" there mean on/off
    const coerced = key === "enable_web_search" && typeof value === "boolean" ? (value ? "on" : "off") : value;
    const parsed = fieldSchema.safeParse(coerced);
    if (!parsed.success) {
      throw new InvalidRequest(
        `Invalid value for model feature suffix parameter ${key}`,
        { model: `${key}=${raw} is not valid` },
        parsed.error.issues,
      );
    }
    overrides[key] = parsed.data;
  }
  return { id, overrides };
}

export function effectiveParameters(
  body: Record<string, unknown> | null | undefined,
  overrides: Record<string, unknown>,
  names: BrandNames,
  supportsE2EE: boolean,
): EffectiveParameters {
  const p = { ...(body ?? {}), ...overrides } as Record<string, unknown>;
  const bool = (k: string, d: boolean): boolean => (typeof p[k] === "boolean" ? (p[k] as boolean) : d);
  return {
    ...(typeof p.character_slug === "string" ? { character_slug: p.character_slug } : {}),
    strip_thinking_response: bool("strip_thinking_response", false),
    disable_thinking: bool("disable_thinking", false),
    enable_e2ee: supportsE2EE && bool("enable_e2ee", true),
    enable_web_search: (p.enable_web_search as EffectiveParameters["enable_web_search"] | undefined) ?? "off",
    enable_web_scraping: bool("enable_web_scraping", false),
    enable_web_citations: bool("enable_web_citations", false),
    include_search_results_in_stream: bool("include_search_results_in_stream", false),
    return_search_results_as_documents: bool("return_search_results_as_documents", false),
    include_system_prompt: bool(names.includeSystemPrompt, true),
    enable_x_search: bool("enable_x_search", false),
  };
}

/** The `<brand>_parameters` echo with every member 2.3 requires. */
export function parametersEcho(p: EffectiveParameters, names: BrandNames): Record<string, unknown> {
  return {
    enable_e2ee: p.enable_e2ee,
    enable_web_search: p.enable_web_search,
    enable_web_citations: p.enable_web_citations,
    enable_web_scraping: p.enable_web_scraping,
    [names.includeSystemPrompt]: p.include_system_prompt,
    include_search_results_in_stream: p.include_search_results_in_stream,
    return_search_results_as_documents: p.return_search_results_as_documents,
    strip_thinking_response: p.strip_thinking_response,
    disable_thinking: p.disable_thinking,
    ...(p.character_slug !== undefined ? { character_slug: p.character_slug } : {}),
  };
}
