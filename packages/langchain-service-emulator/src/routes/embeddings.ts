/**
 * POST /embeddings (openapi-more.yaml `createEmbedding`). The server authenticates the caller, finds the model
 * through `resolveModel` (its headers, Pro-only, the credit 402s, the `embedding` rate-limit bucket of spec part
 * 8); this route validates the body as strictly as the published `CreateEmbeddingRequestSchema` (closed:
 * `additionalProperties: false`), embeds deterministically (../models/embeddings.ts), charges the ledger the
 * way chat does, and answers the published shape: `{object: "list", data: [{object: "embedding", index,
 * embedding}], model, usage: {prompt_tokens, total_tokens}}`.
 *
 * What the published description refuses, refused here with 400: token arrays (integer ids, what LangChain's
 * Python `OpenAIEmbeddings` sends by default), an empty string, more than 2048 inputs, an input over the model's
 * 8192 tokens, `dimensions` on a model without custom dimensions or above its native number.
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { findEmbeddingModel, type EmbeddingModel } from "../models/catalog.js";
import { embedText, toBase64Float32 } from "../models/embeddings.js";
import { countTokens } from "../models/tokenizer.js";
import { badRequest, parseBody } from "./strict-body.js";
import type { Caller, EmulatorContext, EmulatorRequest, EmulatorResponse, RouteSpec } from "../types.js";

/** published: "any array must contain 2048 items or less" */
export const MAX_EMBEDDING_INPUTS = 2048;

const requestSchema = z
  .object({
    input: z.union([
      z.string().min(1, "cannot be an empty string"),
      z.array(z.string().min(1, "cannot be an empty string")).min(1).max(MAX_EMBEDDING_INPUTS),
    ]),
    model: z.string(),
    dimensions: z.number().int().min(1).optional(),
    encoding_format: z.enum(["float", "base64"]).optional(),
    user: z.string().optional(),
  })
  .strict();

/** Integer ids, or arrays of them: the token-array forms of OpenAI's `input`. */
function isTokenArray(input: unknown): boolean {
  if (!Array.isArray(input) || input.length === 0) return false;
  return input.every((x) => typeof x === "number" || (Array.isArray(x) && x.every((y) => typeof y === "number")));
}

/** The body as a JSON object: 415 / 400 as every media route answers (the fields are checked below). */
function parseJson(req: EmulatorRequest): Record<string, unknown> {
  return parseBody(req, z.record(z.string(), z.unknown()));
}

/** The server's model step: the embedding model named by the body (400 when absent or unknown). */
function resolveModel(req: EmulatorRequest): { model: EmbeddingModel; bucket: "embedding" } {
  const json = parseJson(req);
  if (typeof json.model !== "string" || json.model === "") {
    throw badRequest("Invalid request: model is required", { model: { _errors: ["Required"] } });
  }
  const model = findEmbeddingModel(json.model);
  if (!model) {
    throw badRequest(`Specified model not found or not an embedding model: ${json.model}`, {
      model: { _errors: ["Model not found; see GET /models?type=embedding"] },
    });
  }
  return { model, bucket: "embedding" };
}

export function embeddingCostUsd(model: EmbeddingModel, promptTokens: number): number {
  return Math.round(((promptTokens * model.priceUsd) / 1e6) * 1e9) / 1e9;
}

export async function handleEmbeddings(req: EmulatorRequest, ctx: EmulatorContext, caller: Caller): Promise<EmulatorResponse> {
  const json = parseJson(req);
  if (isTokenArray(json.input)) {
    throw badRequest("Token arrays are not supported: `input` must be a string or an array of strings", {
      input: { _errors: ["Expected a string or an array of strings; token arrays (integer ids) are not supported"] },
    });
  }
  const parsed = requestSchema.safeParse(json);
  if (!parsed.success) throw badRequest("Invalid request", z.formatError(parsed.error), parsed.error.issues);
  const request = parsed.data;
  const { model } = resolveModel(req);

  let dimensions = model.dimensions;
  if (request.dimensions !== undefined && request.dimensions !== model.dimensions) {
    if (!model.supportsCustomDimensions) {
      throw badRequest(`Model ${model.id} does not support custom dimensions`, {
        dimensions: { _errors: ["Not supported by this model"] },
      });
    }
    if (request.dimensions > model.dimensions) {
      throw badRequest(`dimensions must be at most ${model.dimensions} for ${model.id}`, {
        dimensions: { _errors: [`Number must be less than or equal to ${model.dimensions}`] },
      });
    }
    dimensions = request.dimensions;
  }

  const inputs = typeof request.input === "string" ? [request.input] : request.input;
  let promptTokens = 0;
  for (let i = 0; i < inputs.length; i++) {
    const tokens = countTokens(inputs[i]!);
    if (tokens > model.maxInputTokens) {
      throw badRequest(`Input ${i} has ${tokens} tokens, over the model's ${model.maxInputTokens}`, {
        input: { _errors: [`Input ${i} exceeds the max input tokens (${model.maxInputTokens})`] },
      });
    }
    promptTokens += tokens;
  }

  const base64 = request.encoding_format === "base64";
  const data = inputs.map((text, index) => {
    const vector = embedText(text, dimensions, model.id);
    return { object: "embedding", index, embedding: base64 ? toBase64Float32(vector) : Array.from(vector) };
  });

  // the same ledger and charge as chat: DIEM first, then USD (an anonymous caller never reaches a required route)
  if (caller.kind !== "anonymous") {
    ctx.ledger.charge(caller.account, embeddingCostUsd(model, promptTokens), {
      kind: "embedding",
      modelId: model.id,
      requestId: `emb-${randomUUID().replace(/-/g, "")}`,
    });
  }
  return {
    status: 200,
    body: { object: "list", data, model: model.id, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } },
    meta: { tokens: promptTokens, modelId: model.id },
  };
}

/** One embedding model as GET /models lists it (published `ModelResponse`, type `embedding`). */
export function embeddingModelRecord(model: EmbeddingModel, ctx: EmulatorContext): Record<string, unknown> {
  const spec: Record<string, unknown> = {
    name: model.name,
    description: `${model.name}: deterministic hashed bag-of-words vectors of the local ${ctx.names.brand} emulator`,
    beta: false,
    privacy: "private",
    offline: false,
    modelSource: "local-emulator",
    pricing: { input: { usd: model.priceUsd, diem: model.priceUsd }, output: { usd: 0, diem: 0 } },
    traits: model.traits ?? [],
    embeddingDimensions: model.dimensions,
    maxInputTokens: model.maxInputTokens,
  };
  if (model.supportsCustomDimensions) spec.supportsCustomDimensions = true;
  return {
    id: model.id,
    object: "model",
    owned_by: `${ctx.names.brand}.example`,
    type: "embedding",
    // the catalog's fixed "release date" (2026-01-01), as for the text models
    created: 1_767_225_600,
    model_spec: spec,
  };
}

export const embeddingRoutes = {
  embeddings: { auth: "required", inference: true, resolveModel, handler: handleEmbeddings },
} satisfies Record<string, RouteSpec>;
