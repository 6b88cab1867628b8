/**
 * `withStructuredOutput` of `ChatService` and of a configured model (`ChatServiceBinding`), by one of three
 * methods, chosen from the model's profile when none is given (as `ChatOpenAI` picks by model, here by what the
 * service says the model can do):
 * - `jsonSchema` (a `json_schema` response format, which the service validates) where `profile.structuredOutput`
 *   is true, or not known;
 * - else `functionCalling` (a forced call of one tool) where the model calls tools;
 * - else `jsonMode`. `jsonMode` sends `response_format: json_object` where the model takes response formats, and
 *   otherwise puts the JSON schema in the prompt (a system message) and parses the answer as JSON: the service
 *   refuses any non-text response format to such a model.
 * Without a `method` and before the profile is known, the choice waits for the profile's first read (shared by
 * every instance, see src/models/records.ts); `ls_structured_output_format` tells tracing which method ran. A refused
 * answer (`finish_reason: "content_filter"`) fails the model call with its `ContentFilterError` before any parser.
 */
import type { BaseLanguageModelInput, StructuredOutputMethodOptions } from "@langchain/core/language_models/base";
import { coerceMessageLikeToMessage, SystemMessage, type AIMessageChunk, type BaseMessage } from "@langchain/core/messages";
import { JsonOutputParser } from "@langchain/core/output_parsers";
import { RunnableLambda, type Runnable } from "@langchain/core/runnables";
import { toJsonSchema } from "@langchain/core/utils/json_schema";
import { getSchemaDescription, isInteropZodSchema, type InteropZodType } from "@langchain/core/utils/types";
import { isSerializableSchema, type SerializableSchema } from "@langchain/core/utils/standard_schema";
import {
  assembleStructuredOutputPipeline,
  createContentParser,
  createFunctionCallingParser,
} from "@langchain/core/language_models/structured_output";
import { ValidationError } from "../http/errors.js";
import { schemaInstruction } from "./profile.js";
import type { ServiceModelProfile } from "./profile.js";

/**
 * What structured output needs of a model: a copy of it with call options bound, and its profile (`ChatService`
 * and its configured bindings). Structural, so that this file does not import the model file that imports it.
 */
export interface ConfigurableChatModel {
  withConfig(config: Record<string, unknown>): Runnable<BaseLanguageModelInput, AIMessageChunk>;
  readonly profile: ServiceModelProfile;
  loadProfile(options?: { signal?: AbortSignal }): Promise<ServiceModelProfile>;
}

/**
 * The record type core's `withStructuredOutput` (and `assembleStructuredOutputPipeline`) is declared over: an
 * override has to take the same type to match it, and a JSON schema given as a plain object is read by key.
 */
// biome-ignore lint/suspicious/noExplicitAny: core's declarations use SchemaRecord; ours must match them
export type SchemaRecord = Record<string, any>;

export type StructuredOutputMethod = "jsonSchema" | "functionCalling" | "jsonMode";

/** The method a profile allows: `jsonSchema` unless the model is known to lack it, then `functionCalling`, then `jsonMode`. */
export function structuredOutputMethodFor(profile: ServiceModelProfile): StructuredOutputMethod {
  if (profile.structuredOutput !== false && profile.responseFormat !== false) return "jsonSchema";
  if (profile.toolCalling !== false) return "functionCalling";
  return "jsonMode";
}

export { schemaInstruction };

function toMessages(input: BaseLanguageModelInput): BaseMessage[] {
  if (typeof input === "string") return [coerceMessageLikeToMessage(input)];
  if (Array.isArray(input)) return input.map((m) => coerceMessageLikeToMessage(m));
  return input.toChatMessages();
}

/** The input with `instruction` in its leading system message (added, or appended to a text one). */
function withInstruction(input: BaseLanguageModelInput, instruction: string): BaseMessage[] {
  const messages = toMessages(input);
  const first = messages[0];
  if (first && first.getType() === "system" && typeof first.content === "string") {
    const merged = new SystemMessage({
      content: `${first.content}\n\n${instruction}`,
      additional_kwargs: first.additional_kwargs,
      name: first.name,
    });
    return [merged, ...messages.slice(1)];
  }
  return [new SystemMessage(instruction), ...messages];
}

/**
 * Structured output on a model or a configured model: by the given `method`, else by the one its profile allows
 * (read first when not known yet).
 */
export function structuredOutput<RunOutput extends SchemaRecord>(
  base: ConfigurableChatModel,
  outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | SchemaRecord,
  config?: StructuredOutputMethodOptions<boolean>,
): Runnable<BaseLanguageModelInput, unknown> {
  const method = config?.method;
  if (method !== undefined && method !== "jsonSchema" && method !== "functionCalling" && method !== "jsonMode") {
    throw new ValidationError(`withStructuredOutput: unknown method ${JSON.stringify(method)} (jsonSchema | functionCalling | jsonMode)`);
  }
  if (method !== undefined || base.profile.structuredOutput !== undefined) {
    return buildStructuredOutput(base, outputSchema, { ...config, method: method ?? structuredOutputMethodFor(base.profile) });
  }
  // the profile is not known yet: read it (once for every instance), then choose
  return RunnableLambda.from(async (_input: BaseLanguageModelInput, runConfig?: { signal?: AbortSignal }) => {
    try {
      await base.loadProfile({ signal: runConfig?.signal });
    } catch (err) {
      runConfig?.signal?.throwIfAborted();
      void err; // the listing could not be read: the default method, as for a model the service does not list
    }
    return buildStructuredOutput(base, outputSchema, { ...config, method: structuredOutputMethodFor(base.profile) });
  }).withConfig({ runName: "StructuredOutput" }) as Runnable<BaseLanguageModelInput, unknown>;
}

function buildStructuredOutput<RunOutput extends SchemaRecord>(
  base: ConfigurableChatModel,
  outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | SchemaRecord,
  config: StructuredOutputMethodOptions<boolean> & { method: StructuredOutputMethod },
): Runnable<BaseLanguageModelInput, unknown> {
  const schema = outputSchema as SchemaRecord;
  const includeRaw = config.includeRaw ?? false;
  const method = config.method;
  const isTyped = isInteropZodSchema(schema) || isSerializableSchema(schema);
  const asJsonSchema = (isTyped ? toJsonSchema(schema as never) : schema) as SchemaRecord;
  // for tracing (handleChatModelStart's options, LangSmith), never sent: the method as named here, the JSON schema
  const traced = (jsonSchema: unknown) => ({ ls_structured_output_format: { kwargs: { method }, schema: jsonSchema } });
  let llm: Runnable<BaseLanguageModelInput, AIMessageChunk>;
  let parser: Runnable<BaseMessage, RunOutput>;
  if (method === "jsonMode" && (base.profile.responseFormat === false || base.profile.structuredOutput === false)) {
    // no response format for this model: the schema goes in the prompt
    const instruction = schemaInstruction(asJsonSchema);
    llm = RunnableLambda.from((input: BaseLanguageModelInput) => withInstruction(input, instruction))
      .withConfig({ runName: "JsonSchemaInPrompt" })
      .pipe(base.withConfig({ outputVersion: "v0", ...traced(asJsonSchema) }));
    parser = createContentParser(schema) as Runnable<BaseMessage, RunOutput>;
  } else if (method === "jsonMode") {
    llm = base.withConfig({ outputVersion: "v0", response_format: { type: "json_object" }, ...traced(asJsonSchema) });
    parser = createContentParser(schema) as Runnable<BaseMessage, RunOutput>;
  } else if (method === "jsonSchema") {
    const name: string = config?.name ?? (asJsonSchema.title as string | undefined) ?? "extract";
    const description = getSchemaDescription(schema as never) ?? (asJsonSchema.description as string | undefined);
    llm = base.withConfig({
      outputVersion: "v0",
      response_format: {
        type: "json_schema",
        json_schema: {
          name,
          ...(description ? { description } : {}),
          schema: asJsonSchema,
          ...(config?.strict !== undefined ? { strict: config.strict } : {}),
        },
      },
      ...traced(asJsonSchema),
    });
    parser = (isTyped ? createContentParser(schema) : new JsonOutputParser()) as Runnable<BaseMessage, RunOutput>;
  } else {
    let name: string = config?.name ?? "extract";
    let fn: Record<string, unknown>;
    if (!isTyped && typeof schema.name === "string" && schema.parameters && typeof schema.parameters === "object") {
      fn = schema;
      name = schema.name;
    } else {
      if (!isTyped && typeof schema.title === "string" && !config?.name) name = schema.title;
      fn = { name, description: asJsonSchema.description ?? "", parameters: asJsonSchema };
    }
    llm = base.withConfig({
      outputVersion: "v0",
      tools: [{ type: "function", function: fn }],
      tool_choice: { type: "function", function: { name } },
      ...(config?.strict !== undefined ? { strict: config.strict } : {}),
      ...traced(fn.parameters),
    });
    parser = createFunctionCallingParser(schema, name) as unknown as Runnable<BaseMessage, RunOutput>;
  }
  return assembleStructuredOutputPipeline(llm, parser, includeRaw) as never;
}
