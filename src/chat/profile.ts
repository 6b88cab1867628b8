/**
 * What a chat model can do, as LangChain reads it (`model.profile`, a `ModelProfile`: `createAgent` picks its
 * structured-output strategy from `structuredOutput`, the summarization middleware reads `maxInputTokens`), built
 * from the service's `/models` record of the model (src/models/records.ts), and the checks that refuse, before
 * anything is sent, a request needing a capability the profile says the model lacks (the service's capability
 * gates: a 400 counted against the caller's unsupported-feature budget).
 *
 * | profile | `/models` record |
 * |---|---|
 * | `maxInputTokens` | `model_spec.availableContextTokens` (else `context_length`) |
 * | `maxOutputTokens` | `model_spec.maxCompletionTokens` |
 * | `toolCalling`, `toolChoice` | `capabilities.supportsFunctionCalling` |
 * | `structuredOutput` | `capabilities.supportsResponseSchema`; also true for a model with neither response schemas nor function calling, where this package sends a JSON-schema request with the schema in the prompt (`schemaInPrompt`) |
 * | `reasoningOutput` | `capabilities.supportsReasoning` |
 * | `imageInputs`, `imageUrlInputs` | `capabilities.supportsVision` |
 * | `audioInputs` / `videoInputs` | `capabilities.supportsAudioInput` / `supportsVideoInput` |
 * | `logprobs` (this package's) | `capabilities.supportsLogProbs` |
 * | `webSearch` (this package's) | `capabilities.supportsWebSearch` |
 * | `responseFormat` (this package's) | `capabilities.supportsResponseSchema` |
 * | `deprecation` (this package's) | `model_spec.deprecation` (`removesAt`, `replacementModelId`, …), only on a deprecated model |
 * | `pdfInputs` | always true: the service converts files to text before the model sees them |
 * | `imageToolMessage`, `pdfToolMessage` | false: a tool message's content is a string |
 * | `imageOutputs`, `audioOutputs`, `videoOutputs` | false: chat completions answer text |
 */
import type { ModelProfile } from "@langchain/core/language_models/profile";
import { UnsupportedCapabilityError } from "../http/errors.js";
import type { ServiceModel } from "../models/records.js";
import type { ModelDeprecation } from "../models/facts.js";

/** LangChain's `ModelProfile` plus what only this service publishes per model. */
export interface ServiceModelProfile extends ModelProfile {
  /** `logprobs` / `top_logprobs` are accepted (`supportsLogProbs`) */
  logprobs?: boolean;
  /** the service's web search runs for this model (`supportsWebSearch`) */
  webSearch?: boolean;
  /**
   * the service takes `response_format` for this model (`supportsResponseSchema`). `structuredOutput` says what this
   * package can deliver: also true for a model with neither response formats nor tools (the schema in the prompt)
   */
  responseFormat?: boolean;
  /** the model is deprecated: when it leaves the listing, and its `replacementModelId` (`followDeprecation` sends that one) */
  deprecation?: ModelDeprecation;
}

function flag(capabilities: Record<string, unknown>, name: string): boolean | undefined {
  const value = capabilities[name];
  return typeof value === "boolean" ? value : undefined;
}

/** The model takes no response schema and no tools: structured output is the schema in the prompt. */
function promptsForSchema(caps: Record<string, unknown>): boolean {
  return flag(caps, "supportsResponseSchema") === false && flag(caps, "supportsFunctionCalling") === false;
}

/** The instruction that carries a JSON schema when the model takes no response format. */
export function schemaInstruction(jsonSchema: unknown): string {
  return `Answer with one JSON object and nothing else (no prose, no code fences). It must be valid against this JSON schema:\n${JSON.stringify(jsonSchema)}`;
}

/**
 * A wire body with a JSON `response_format` (`json_schema`, `json_object`) for a model that takes no response
 * format and no tools: the schema (or the ask for JSON) moves into the leading system message and `response_format`
 * goes (the service would refuse it). Any other body is returned as it is.
 */
export function schemaInPrompt(body: Record<string, unknown>, record: ServiceModel | undefined): Record<string, unknown> {
  const format = body.response_format as { type?: unknown; json_schema?: { schema?: unknown } } | undefined | null;
  if ((format?.type !== "json_schema" && format?.type !== "json_object") || !record) return body;
  if (!promptsForSchema((record.model_spec?.capabilities ?? {}) as Record<string, unknown>)) return body;
  const instruction =
    format.type === "json_schema"
      ? schemaInstruction(format.json_schema?.schema ?? {})
      : "Answer with one JSON object and nothing else (no prose, no code fences).";
  const messages = Array.isArray(body.messages) ? [...(body.messages as Record<string, unknown>[])] : [];
  const first = messages[0];
  if (first?.role === "system" && typeof first.content === "string")
    messages[0] = { ...first, content: `${first.content}\n\n${instruction}` };
  else messages.unshift({ role: "system", content: instruction });
  const { response_format: _dropped, ...rest } = body;
  return { ...rest, messages };
}

function positiveNumber(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : undefined;
}

/** The profile of one `/models` record (members the record does not state are left out). */
export function profileFromRecord(record: ServiceModel): ServiceModelProfile {
  const spec = record.model_spec ?? {};
  const caps = (spec.capabilities ?? {}) as Record<string, unknown>;
  const profile: ServiceModelProfile = {};
  const set = <K extends keyof ServiceModelProfile>(key: K, value: ServiceModelProfile[K] | undefined) => {
    if (value !== undefined) profile[key] = value;
  };
  set("maxInputTokens", positiveNumber(spec.availableContextTokens) ?? positiveNumber(record.context_length));
  set("maxOutputTokens", positiveNumber(spec.maxCompletionTokens));
  const tools = flag(caps, "supportsFunctionCalling");
  set("toolCalling", tools);
  set("toolChoice", tools);
  // A model with neither response schemas nor function calling still answers in shape through this package: a
  // JSON-schema request goes out with the schema in the prompt (schemaInPrompt). Saying so lets `createAgent`
  // choose its provider strategy, the one that can work on such a model (its tool strategy cannot).
  set("structuredOutput", promptsForSchema(caps) ? true : flag(caps, "supportsResponseSchema"));
  set("responseFormat", flag(caps, "supportsResponseSchema"));
  set("reasoningOutput", flag(caps, "supportsReasoning"));
  const vision = flag(caps, "supportsVision");
  set("imageInputs", vision);
  set("imageUrlInputs", vision);
  set("audioInputs", flag(caps, "supportsAudioInput"));
  set("videoInputs", flag(caps, "supportsVideoInput"));
  set("logprobs", flag(caps, "supportsLogProbs"));
  set("webSearch", flag(caps, "supportsWebSearch"));
  set("deprecation", spec.deprecation ? { ...spec.deprecation } : undefined);
  profile.pdfInputs = true;
  profile.imageToolMessage = false;
  profile.pdfToolMessage = false;
  profile.imageOutputs = false;
  profile.audioOutputs = false;
  profile.videoOutputs = false;
  return profile;
}

/** The capabilities a request needs, in the order the service checks them, with the field that needs each. */
interface Need {
  capability: keyof ServiceModelProfile;
  field: string;
  what: string;
}

const PART_NEEDS: Record<string, Omit<Need, "field">> = {
  image_url: { capability: "imageInputs", what: "image input" },
  input_audio: { capability: "audioInputs", what: "audio input" },
  video_url: { capability: "videoInputs", what: "video input" },
};

function needsOf(body: Record<string, unknown>): Need[] {
  const needs: Need[] = [];
  const messages = Array.isArray(body.messages) ? (body.messages as Array<{ content?: unknown }>) : [];
  messages.forEach((message, i) => {
    if (!Array.isArray(message?.content)) return;
    (message.content as Array<{ type?: unknown }>).forEach((part, j) => {
      const need = typeof part?.type === "string" ? PART_NEEDS[part.type] : undefined;
      if (need) needs.push({ ...need, field: `messages.${i}.content.${j}` });
    });
  });
  if (Array.isArray(body.tools) && body.tools.length > 0) needs.push({ capability: "toolCalling", field: "tools", what: "tool calling" });
  if (body.tool_choice !== undefined && body.tool_choice !== null)
    needs.push({ capability: "toolChoice", field: "tool_choice", what: "tool choice" });
  if (body.parallel_tool_calls === true) needs.push({ capability: "toolCalling", field: "parallel_tool_calls", what: "tool calling" });
  const format = body.response_format as { type?: unknown } | undefined | null;
  if (format && format.type !== "text")
    needs.push({ capability: "structuredOutput", field: "response_format", what: `response_format ${String(format.type)}` });
  if (body.logprobs === true) needs.push({ capability: "logprobs", field: "logprobs", what: "logprobs" });
  if (body.top_logprobs !== undefined && body.top_logprobs !== null)
    needs.push({ capability: "logprobs", field: "top_logprobs", what: "logprobs" });
  return needs;
}

/**
 * Refuses (`UnsupportedCapabilityError`) a request body that needs a capability `profile` says `model` lacks.
 * Only an explicit `false` refuses: a capability the profile does not state (no profile loaded, a model the
 * service does not list) is left to the service.
 */
export function checkCapabilities(body: Record<string, unknown>, profile: ServiceModelProfile, model: string): void {
  for (const need of needsOf(body)) {
    if (profile[need.capability] !== false) continue;
    throw new UnsupportedCapabilityError(
      `model ${model} does not support ${need.what} (profile.${need.capability} is false), which ${need.field} needs; nothing was sent`,
      { capability: need.capability, model, field: need.field },
    );
  }
}
