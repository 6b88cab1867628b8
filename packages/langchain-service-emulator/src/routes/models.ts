/**
 * GET /models: the emulator's catalog in the published `ModelResponse` shape (openapi-subset.yaml), with the
 * capability flags the description marks as required. Auth is optional; `?type=` filters by model type (`text`,
 * `all` and `code` list the text models; `image` and `tts` the media models of ./media-models.ts;
 * `embedding` those of ./embeddings.ts; `all` every one; others none).
 */
import {
  EMBEDDING_MODELS,
  MEDIA_MODELS,
  MODELS,
  compatibilityMapping,
  modelTraits,
  reasoningEffortOptions,
  textTraits,
  type EmulatedModel,
} from "../models/catalog.js";
import { modelGatesOn } from "../models/availability.js";
import { embeddingModelRecord } from "./embeddings.js";
import { mediaModelRecord } from "./media-models.js";
import type { EmulatorContext, RouteSpec } from "../types.js";
import { EmulatorHttpError } from "../types.js";

const MODEL_TYPES = ["asr", "embedding", "image", "music", "text", "tts", "upscale", "inpaint", "video", "all", "code"];
/** a fixed "release date" keeps the listing deterministic */
const CREATED = 1_767_225_600; // 2026-01-01T00:00:00Z

/** One model as the published description lists it. */
export function modelRecord(model: EmulatedModel, ctx: EmulatorContext): Record<string, unknown> {
  const price = (usd: number) => ({ usd, diem: usd });
  const pricing: Record<string, unknown> = { input: price(model.pricing.input), output: price(model.pricing.output) };
  if (model.pricing.cache_input !== undefined) pricing.cache_input = price(model.pricing.cache_input);
  const efforts = reasoningEffortOptions(model);
  const spec: Record<string, unknown> = {
    name: model.name,
    description: `${model.name}: a deterministic ${model.tier}-tier model of the local ${ctx.names.brand} emulator`,
    availableContextTokens: model.contextTokens,
    maxCompletionTokens: model.maxCompletionTokens,
    beta: false,
    betaModel: false,
    privacy: "private",
    offline: model.offline === true,
    ...(model.regionRestrictions ? { regionRestrictions: model.regionRestrictions } : {}),
    modelSource: "local-emulator",
    pricing,
    capabilities: {
      // the description requires these members; the catalog's own flags override the defaults
      optimizedForCode: false,
      quantization: "fp8",
      supportsReasoningEffort: efforts !== undefined,
      ...(efforts ? { reasoningEffortOptions: efforts, defaultReasoningEffort: "medium" } : {}),
      supportsMultipleImages: model.capabilities.supportsVision,
      ...(model.capabilities.supportsVision ? { maxImages: 10 } : {}),
      ...(model.capabilities.supportsVideoInput ? { maxVideos: 3 } : {}),
      supportsTeeAttestation: model.capabilities.supportsE2EE,
      supportsXSearch: false,
      ...model.capabilities,
    },
    constraints: { temperature: { default: 0.7 }, top_p: { default: 0.9 } },
    traits: textTraits(model),
  };
  if (model.deprecated) {
    spec.deprecation = {
      autoRemap: model.deprecated.autoRemap === true,
      date: model.deprecated.date,
      startsAt: model.deprecated.date,
      removesAt: model.deprecated.date,
      ...(model.deprecated.replacementModelId ? { replacementModelId: model.deprecated.replacementModelId } : {}),
    };
  }
  if (model.proOnly) spec.proOnly = true;
  return {
    id: model.id,
    object: "model",
    owned_by: `${ctx.names.brand}.example`,
    type: "text",
    created: CREATED,
    context_length: model.contextTokens,
    model_spec: spec,
  };
}

/** The `?type=` of a model list (default `text`); 400 for one the service does not know. */
function listType(asked: string | null): string {
  const type = asked ?? "text";
  if (!MODEL_TYPES.includes(type)) {
    throw new EmulatorHttpError(400, {
      error: `Invalid model type "${type}"`,
      details: { type: { _errors: [`Expected one of ${MODEL_TYPES.join(", ")}`] } },
    });
  }
  return type;
}

export const modelRoutes = {
  traits: {
    // trait -> model id ({ object: "list", type, data: { default: "emu-s", fastest: "emu-xs", ... } })
    auth: "optional",
    handler(req) {
      const type = listType(req.query.get("type"));
      return { status: 200, body: { object: "list", type, data: modelTraits(type) } };
    },
  },
  compatibilityMapping: {
    // OpenAI-style or legacy id -> model id ({ object: "list", type, data: { "gpt-4o": "emu-m", ... } })
    auth: "optional",
    handler(req, ctx) {
      const type = listType(req.query.get("type"));
      // live: the mapping is per list; the two lists that span several are refused
      if ((type === "all" || type === "code") && modelGatesOn(ctx.options)) {
        throw new EmulatorHttpError(400, {
          error: `Invalid model type "${type}" for the compatibility mapping`,
          details: { type: { _errors: [`Compatibility mappings are per model type; "${type}" has none`] } },
        });
      }
      return { status: 200, body: { object: "list", type, data: compatibilityMapping(type) } };
    },
  },
  list: {
    auth: "optional",
    handler(req, ctx) {
      const type = listType(req.query.get("type"));
      const listed = type === "text" || type === "all" || type === "code" ? MODELS : [];
      const media = MEDIA_MODELS.filter((m) => type === "all" || m.type === type);
      const embeddings = type === "all" || type === "embedding" ? EMBEDDING_MODELS : [];
      return {
        status: 200,
        body: {
          object: "list",
          type,
          data: [
            ...listed.map((m) => modelRecord(m, ctx)),
            ...media.map((m) => mediaModelRecord(m, ctx)),
            ...embeddings.map((m) => embeddingModelRecord(m, ctx)),
          ],
        },
      };
    },
  },
  one: {
    auth: "optional",
    handler(req, ctx) {
      const model = MODELS.find((m) => m.id === req.params.id);
      const media = MEDIA_MODELS.find((m) => m.id === req.params.id);
      if (media) return { status: 200, body: mediaModelRecord(media, ctx) };
      const embedding = EMBEDDING_MODELS.find((m) => m.id === req.params.id);
      if (embedding) return { status: 200, body: embeddingModelRecord(embedding, ctx) };
      if (!model) throw new EmulatorHttpError(404, { error: `Model not found: ${req.params.id}` });
      return { status: 200, body: modelRecord(model, ctx) };
    },
  },
} satisfies Record<string, RouteSpec>;
