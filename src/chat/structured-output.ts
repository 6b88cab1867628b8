/**
 * `withStructuredOutput` of `ChatService` and of a configured model (`ChatServiceBinding`): by `json_schema`
 * response format (default; the service validates it), by a forced function call (`method: "functionCalling"`),
 * or `jsonMode`. A refused answer (`finish_reason: "content_filter"`) fails the model call with its
 * `ContentFilterError` before any parser runs.
 */
import type { BaseLanguageModelInput, StructuredOutputMethodOptions } from "@langchain/core/language_models/base";
import type { AIMessageChunk } from "@langchain/core/messages";
import { JsonOutputParser } from "@langchain/core/output_parsers";
import type { Runnable } from "@langchain/core/runnables";
import { toJsonSchema } from "@langchain/core/utils/json_schema";
import { getSchemaDescription, isInteropZodSchema, type InteropZodType } from "@langchain/core/utils/types";
import { isSerializableSchema, type SerializableSchema } from "@langchain/core/utils/standard_schema";
import {
  assembleStructuredOutputPipeline,
  createContentParser,
  createFunctionCallingParser,
} from "@langchain/core/language_models/structured_output";
import { ValidationError } from "../http/errors.js";

/**
 * What structured output needs of a model: a copy of it with call options bound (`ChatService` and its configured
 * bindings). Structural, so that this file does not import the model file that imports it.
 */
export interface ConfigurableChatModel {
  withConfig(config: Record<string, unknown>): Runnable<BaseLanguageModelInput, AIMessageChunk>;
}

/**
 * Structured output by `json_schema` response format (default; the service validates it) or by a forced
 * function call (`method: "functionCalling"`), or `jsonMode`, on a model or a configured model.
 */
export function structuredOutput<RunOutput extends Record<string, any>>(
  base: ConfigurableChatModel,
  outputSchema: InteropZodType<RunOutput> | SerializableSchema<RunOutput> | Record<string, any>,
  config?: StructuredOutputMethodOptions<boolean>,
): Runnable<BaseLanguageModelInput, unknown> {
  const schema = outputSchema as Record<string, any>;
  const includeRaw = config?.includeRaw ?? false;
  const method = config?.method ?? "jsonSchema";
  const isTyped = isInteropZodSchema(schema) || isSerializableSchema(schema);
  const asJsonSchema = (isTyped ? toJsonSchema(schema as never) : schema) as Record<string, any>;
  // for tracing (handleChatModelStart's options, LangSmith), never sent: the method as named here, the JSON schema
  const traced = (jsonSchema: unknown) => ({ ls_structured_output_format: { kwargs: { method }, schema: jsonSchema } });
  let llm: Runnable<BaseLanguageModelInput, AIMessageChunk>;
  let parser: Runnable<any, RunOutput>;
  if (method === "jsonMode") {
    llm = base.withConfig({ outputVersion: "v0", response_format: { type: "json_object" }, ...traced(asJsonSchema) });
    parser = createContentParser(schema) as Runnable<any, RunOutput>;
  } else if (method === "jsonSchema") {
    const name: string = config?.name ?? (asJsonSchema.title as string | undefined) ?? "extract";
    const description = getSchemaDescription(schema as never) ?? (asJsonSchema.description as string | undefined);
    llm = base.withConfig({
      outputVersion: "v0",
      response_format: {
        type: "json_schema",
        json_schema: { name, ...(description ? { description } : {}), schema: asJsonSchema, ...(config?.strict !== undefined ? { strict: config.strict } : {}) },
      },
      ...traced(asJsonSchema),
    });
    parser = (isTyped ? createContentParser(schema) : new JsonOutputParser()) as Runnable<any, RunOutput>;
  } else if (method === "functionCalling") {
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
    parser = createFunctionCallingParser(schema, name) as unknown as Runnable<any, RunOutput>;
  } else {
    throw new ValidationError(`withStructuredOutput: unknown method ${JSON.stringify(method)} (jsonSchema | functionCalling | jsonMode)`);
  }
  return assembleStructuredOutputPipeline(llm, parser, includeRaw) as never;
}
