/**
 * POST /image/generate (the service's own) and POST /images/generations (OpenAI-compatible). Both draw a small
 * real PNG from the prompt's hash (../media/png.ts): the same prompt and seed give the same bytes. Bodies are
 * checked against the published schemas, both closed (`additionalProperties: false`): an unknown member is a
 * 400. Charged per image from the ledger; paced in the `image` bucket (spec part 8).
 *
 * A prompt carrying `[[emu:blocked]]` is one the content policy refuses: as live, a 200 whose
 * `x-<brand>-is-content-violation` header is `true` (a blank picture in place of the one asked for; charged as
 * drawn), on both routes; other answers carry the header `false`.
 *
 * The emulator encodes PNG only (no WebP or JPEG encoder offline): a request for `webp` or `jpeg` gets PNG
 * bytes; a client should tell the format from the bytes (PNG signature), as the agent tool does.
 */
import { z } from "zod";
import { findImageModel, MEDIA_MODELS, type MediaModel } from "../models/catalog.js";
import { pictureFor } from "../media/png.js";
import type { Caller, EmulatorContext, EmulatorRequest, RouteSpec } from "../types.js";
import { badRequest, parseBody, requestId } from "./strict-body.js";

const styleReference = z.object({ image: z.string(), strength: z.number().min(0.1).max(1).optional() }).strict();

/** GenerateImageRequest, closed. */
const generateSchema = z
  .object({
    model: z.string(),
    prompt: z.string().min(1).max(7500),
    negative_prompt: z.string().max(7500).optional(),
    cfg_scale: z.number().gt(0).max(20).optional(),
    embed_exif_metadata: z.boolean().optional(),
    format: z.enum(["jpeg", "png", "webp"]).optional(),
    height: z.number().int().gt(0).max(1280).optional(),
    width: z.number().int().gt(0).max(1280).optional(),
    hide_watermark: z.boolean().optional(),
    inpaint: z.unknown().optional(),
    lora_strength: z.number().int().min(0).max(100).optional(),
    return_binary: z.boolean().optional(),
    variants: z.number().int().min(1).max(4).optional(),
    safe_mode: z.boolean().optional(),
    seed: z.number().int().min(-999999999).max(999999999).optional(),
    steps: z.number().int().optional(),
    style_preset: z.string().optional(),
    aspect_ratio: z.string().optional(),
    resolution: z.string().optional(),
    quality: z.enum(["low", "medium", "high"]).optional(),
    enable_web_search: z.boolean().optional(),
    disable_prompt_optimization_thinking: z.boolean().optional(),
    enhance_prompt: z.boolean().optional(),
    style_references: z.array(styleReference).optional(),
  })
  .strict()
  .refine((b) => !(b.return_binary && (b.variants ?? 1) > 1), {
    message: "variants is only supported when return_binary is false",
    path: ["variants"],
  });

const SIZES = ["auto", "256x256", "512x512", "1024x1024", "1536x1024", "1024x1536", "1792x1024", "1024x1792"] as const;

/** SimpleGenerateImageRequest, closed. */
const simpleSchema = z
  .object({
    prompt: z.string().min(1).max(1500),
    model: z.string().optional(),
    background: z.enum(["transparent", "opaque", "auto"]).nullish(),
    moderation: z.enum(["low", "auto"]).nullish(),
    n: z.number().int().min(1).max(1).nullish(),
    output_compression: z.number().int().min(0).max(100).nullish(),
    output_format: z.enum(["jpeg", "png", "webp"]).optional(),
    quality: z.enum(["auto", "high", "medium", "low", "hd", "standard"]).nullish(),
    response_format: z.enum(["b64_json", "url"]).nullish(),
    size: z.enum(SIZES).nullish(),
    style: z.enum(["vivid", "natural"]).nullish(),
    user: z.string().optional(),
  })
  .strict();

const DEFAULT_IMAGE_MODEL = MEDIA_MODELS.find((m) => m.type === "image" && m.traits?.includes("default"))!;

function imageModel(id: string): MediaModel {
  const model = findImageModel(id);
  if (!model)
    throw badRequest(`Specified model not found: ${id}`, {
      _errors: [],
      model: { _errors: ["Image model not found; see GET /models?type=image"] },
    });
  return model;
}

/** `/images/generations`: "a non-existent model (ie an OpenAI model name) defaults to the default image model" */
function simpleModel(req: EmulatorRequest): MediaModel {
  const id = parseBody(req, simpleSchema).model;
  return (id && findImageModel(id)) || DEFAULT_IMAGE_MODEL;
}

/** The test directive of a prompt the content policy refuses. */
const BLOCKED = "[[emu:blocked]]";

/** `x-<brand>-is-blurred` and `-is-content-violation` of an image answer. */
function policyHeaders(ctx: EmulatorContext, prompt: string): Record<string, string> {
  const p = ctx.names.headerPrefix;
  return { [`${p}is-blurred`]: "false", [`${p}is-content-violation`]: String(prompt.includes(BLOCKED)) };
}

/** The picture drawn for `prompt`: a blank one (all from the empty prompt) when the policy refused it. */
function drawn(prompt: string, width: number, height: number, seed?: number): Buffer {
  return prompt.includes(BLOCKED) ? pictureFor("", width, height, 0) : pictureFor(prompt, width, height, seed);
}

function charge(caller: Caller, ctx: EmulatorContext, model: MediaModel, images: number, id: string): void {
  if (caller.kind !== "anonymous")
    ctx.ledger.charge(caller.account, model.priceUsd * images, { kind: "image", modelId: model.id, requestId: id });
}

export const imageRoutes = {
  generate: {
    auth: "required",
    inference: true,
    resolveModel: (req) => ({ model: imageModel(parseBody(req, generateSchema).model), bucket: "image" }),
    handler(req, ctx, caller) {
      const started = Date.now();
      const body = parseBody(req, generateSchema);
      const model = imageModel(body.model);
      const width = body.width ?? 1024;
      const height = body.height ?? 1024;
      const variants = body.variants ?? 1;
      const seed = body.seed ?? 0;
      const images = Array.from({ length: variants }, (_, i) => drawn(body.prompt, width, height, seed + i));
      const id = requestId("generate-image");
      charge(caller, ctx, model, variants, id);
      const headers = policyHeaders(ctx, body.prompt);
      if (body.return_binary)
        return { status: 200, headers: { ...headers, "content-type": "image/png" }, body: images[0]!, meta: { modelId: model.id } };
      const total = Date.now() - started;
      return {
        status: 200,
        headers,
        body: {
          id,
          images: images.map((b) => b.toString("base64")),
          request: body,
          timing: { inferenceDuration: total, inferencePreprocessingTime: 0, inferenceQueueTime: 0, total },
        },
        meta: { modelId: model.id },
      };
    },
  },
  generations: {
    auth: "required",
    inference: true,
    resolveModel: (req) => ({ model: simpleModel(req), bucket: "image" }),
    handler(req, ctx, caller) {
      const body = parseBody(req, simpleSchema);
      const model = simpleModel(req);
      const size = body.size && body.size !== "auto" ? body.size : "1024x1024";
      const [width, height] = size.split("x").map(Number) as [number, number];
      const png = drawn(body.prompt, width, height).toString("base64");
      charge(caller, ctx, model, 1, requestId("images-generations"));
      const item = body.response_format === "url" ? { url: `data:image/png;base64,${png}` } : { b64_json: png };
      return {
        status: 200,
        headers: policyHeaders(ctx, body.prompt),
        body: { created: Math.floor(ctx.now() / 1000), data: [item] },
        meta: { modelId: model.id },
      };
    },
  },
} satisfies Record<string, RouteSpec>;
