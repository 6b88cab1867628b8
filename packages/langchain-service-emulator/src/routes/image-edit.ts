/**
 * Image manipulation, as the live guide describes the four routes: POST /image/edit (JSON only: `model`, `prompt`,
 * `image` as plain base64 or an https URL), /image/multi-edit (JSON with `images`, or multipart with repeated
 * `images` file parts; `modelId` is the only model field it takes), /image/upscale (JSON or multipart: `image`,
 * `scale` 2|4, `creativity`) and /image/background-remove (JSON with exactly one of `image` / `image_url`, or
 * multipart with an `image` file). A wrong content type is 415; every answer is image bytes (never JSON).
 *
 * What it does to the pixels, deterministically: an edit blends the input with the prompt's picture (../media/png.ts);
 * a multi-edit lays the other images over the base first; an upscale repeats pixels (at most 16 MP out); a
 * background removal makes the colour of the top-left corner transparent (RGBA). It decodes PNG; a JPEG or WebP
 * input (or an https URL, which it cannot fetch) is stood in for by a picture of its bytes' hash. Output is PNG.
 */
import { createHash } from "node:crypto";
import { IMAGE_EDIT_ASPECT_RATIOS } from "langchain-service";
import { z } from "zod";
import { findMediaModel, defaultMediaModel, type MediaModel } from "../models/catalog.js";
import { decodePng, drawPicture, encodePng } from "../media/png.js";
import { EmulatorHttpError, type Caller, type EmulatorContext, type EmulatorRequest, type RouteSpec } from "../types.js";
import { badRequest, parseBody, requestId } from "./strict-body.js";

export const BACKGROUND_REMOVE_PRICE_USD = 0.02;
const MIN_PIXELS = 65_536;
const MAX_PIXELS = 33_177_600;
const MAX_UPSCALED_PIXELS = 16_777_216;
const MAX_IMAGE_BYTES = 25 * 1024 * 1024;

const editFields = {
  prompt: z.string().min(1).max(32_768),
  aspect_ratio: z.enum(IMAGE_EDIT_ASPECT_RATIOS).optional(),
  resolution: z
    .string()
    .regex(/^[1-9]K$/)
    .optional(),
  output_format: z.enum(["jpeg", "png", "webp"]).optional(),
  enhance_prompt: z.boolean().optional(),
  disable_prompt_optimization_thinking: z.boolean().optional(),
  safe_mode: z.boolean().optional(),
};
const editSchema = z
  .object({ ...editFields, model: z.string().optional(), modelId: z.string().optional(), image: z.string().min(1) })
  .strict();
const multiSchema = z
  .object({
    ...editFields,
    modelId: z.string().optional(),
    quality: z.enum(["low", "medium", "high"]).optional(),
    images: z.array(z.string().min(1)).min(1),
  })
  .strict();
const upscaleSchema = z
  .object({ image: z.string().min(1), scale: z.union([z.literal(2), z.literal(4)]).optional(), creativity: z.number().nullish() })
  .strict();
const removeSchema = z.union([z.object({ image: z.string().min(1) }).strict(), z.object({ image_url: z.string().url() }).strict()]);

interface Pixels {
  width: number;
  height: number;
  rgb: Uint8Array;
}

/** An input image's pixels: a PNG decoded; anything else stood in for by its hash's picture. Size limits checked. */
function pixelsOf(bytes: Uint8Array, what: string): Pixels {
  if (bytes.length === 0) throw badRequest(`${what} is empty`, { _errors: [], image: { _errors: ["Empty"] } });
  if (bytes.length > MAX_IMAGE_BYTES) throw badRequest(`${what} is larger than 25 MB`, { _errors: [], image: { _errors: ["Too large"] } });
  const png = decodePng(bytes);
  const b = Buffer.from(bytes);
  const known =
    png !== undefined ||
    (b[0] === 0xff && b[1] === 0xd8) ||
    (b.toString("latin1", 0, 4) === "RIFF" && b.toString("latin1", 8, 12) === "WEBP");
  if (!known)
    throw badRequest(`${what} is not an image (PNG, JPEG or WebP)`, { _errors: [], image: { _errors: ["Unrecognized image data"] } });
  const px = png ?? standIn(createHash("sha256").update(bytes).digest("hex"));
  if (px.width * px.height < MIN_PIXELS || px.width * px.height > MAX_PIXELS) {
    throw badRequest(`${what} is ${px.width}×${px.height}: images must have 65,536 to 33,177,600 pixels`, {
      _errors: [],
      image: { _errors: ["Dimensions out of range"] },
    });
  }
  return px;
}

function standIn(seed: string): Pixels {
  return { width: 512, height: 512, rgb: drawPicture(seed, 512, 512) };
}

/** A JSON image field: plain base64 (edit, upscale), a data URL (multi-edit), or an https URL (stood in for). */
function fromField(value: string, what: string, dataUrls: boolean): Pixels {
  if (/^https:\/\//i.test(value)) return standIn(value);
  if (/^data:/i.test(value)) {
    if (!dataUrls)
      throw badRequest(`${what}: send plain base64 here, not a data URL`, {
        _errors: [],
        image: { _errors: ["data: URLs are not accepted on this route"] },
      });
    value = value.replace(/^data:[^,]*;base64,/, "");
  }
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value))
    throw badRequest(`${what} is neither base64 nor an https URL`, { _errors: [], image: { _errors: ["Invalid image"] } });
  return pixelsOf(Buffer.from(value, "base64"), what);
}

/** The body as JSON or a form, by content type (`forms: false`: JSON only, 415 otherwise). */
async function formOrJson(req: EmulatorRequest, forms: boolean): Promise<FormData | undefined> {
  const type = req.headers["content-type"] ?? "";
  if (/^multipart\/form-data\b/i.test(type)) {
    if (!forms) throw new EmulatorHttpError(415, { error: "Invalid request content-type: expected application/json" });
    try {
      return await new Request("http://emulator.invalid/", {
        method: "POST",
        headers: { "content-type": type },
        body: new Uint8Array(req.body),
      }).formData();
    } catch {
      throw badRequest("Invalid request", { _errors: ["Body is not valid multipart/form-data"] });
    }
  }
  if (type && !/^application\/json\b/i.test(type))
    throw new EmulatorHttpError(415, {
      error: `Invalid request content-type: expected application/json or multipart/form-data, got ${type.split(";")[0]}`,
    });
  return undefined;
}

async function filePixels(form: FormData, name: string): Promise<Pixels[]> {
  const parts = form.getAll(name);
  const out: Pixels[] = [];
  for (const part of parts) {
    if (typeof part === "string")
      throw badRequest(`${name} must be a file part`, { _errors: [], [name]: { _errors: ["Expected a file"] } });
    out.push(pixelsOf(new Uint8Array(await part.arrayBuffer()), name));
  }
  return out;
}

function editModel(id: string | undefined): MediaModel {
  if (id === undefined) return defaultMediaModel("inpaint");
  const model = findMediaModel(id, "inpaint");
  if (!model)
    throw badRequest(`Specified model not found: ${id}`, {
      _errors: [],
      model: { _errors: ["Edit model not found; see GET /models?type=inpaint"] },
    });
  return model;
}

/** Blends `over` onto `base` (resized by nearest pixel), weight `w` of `over`. */
function blend(base: Pixels, over: Uint8Array, overW: number, overH: number, w: number): Uint8Array {
  const out = new Uint8Array(base.rgb.length);
  for (let y = 0; y < base.height; y++) {
    const oy = Math.floor((y * overH) / base.height);
    for (let x = 0; x < base.width; x++) {
      const ox = Math.floor((x * overW) / base.width);
      for (let c = 0; c < 3; c++) {
        const i = (y * base.width + x) * 3 + c;
        out[i] = Math.round(base.rgb[i]! * (1 - w) + over[(oy * overW + ox) * 3 + c]! * w);
      }
    }
  }
  return out;
}

function png(px: Pixels, extra: Record<string, string> = {}, modelId?: string) {
  return {
    status: 200,
    headers: { "content-type": "image/png", ...extra },
    body: encodePng(px.width, px.height, px.rgb),
    meta: modelId ? { modelId } : undefined,
  };
}

function charge(caller: Caller, ctx: EmulatorContext, usd: number, kind: string, modelId: string): void {
  if (caller.kind !== "anonymous") ctx.ledger.charge(caller.account, usd, { kind, modelId, requestId: requestId(kind) });
}

/** A prompt with `[[emu:blocked]]` is refused as live edits are: the content-policy 422, uncharged. */
function refuseBlocked(prompt: string): void {
  if (prompt.includes("[[emu:blocked]]"))
    throw new EmulatorHttpError(422, { error: "Your prompt violates the content policy of the service or the model provider" });
}

/** An edit: the input with the prompt's picture blended over it (40%). */
function edited(base: Pixels, prompt: string): Pixels {
  return { ...base, rgb: blend(base, drawPicture(prompt, base.width, base.height), base.width, base.height, 0.4) };
}

interface MultiEdit {
  modelId?: string;
  prompt: string;
  enhance: boolean;
  images: Pixels[];
}
const multiEdits = new WeakMap<EmulatorRequest, MultiEdit>();

async function multiEditOf(req: EmulatorRequest): Promise<MultiEdit> {
  const known = multiEdits.get(req);
  if (known) return known;
  const form = await formOrJson(req, true);
  let edit: MultiEdit;
  if (form) {
    for (const key of form.keys()) {
      if (
        ![
          "modelId",
          "prompt",
          "images",
          "aspect_ratio",
          "resolution",
          "output_format",
          "quality",
          "enhance_prompt",
          "disable_prompt_optimization_thinking",
          "safe_mode",
        ].includes(key)
      ) {
        throw badRequest("Invalid request", { _errors: [`Unrecognized key: "${key}"`] });
      }
    }
    const prompt = form.get("prompt");
    if (typeof prompt !== "string" || !prompt || prompt.length > 32_768)
      throw badRequest("prompt is required", { _errors: [], prompt: { _errors: ["Required, at most 32768 characters"] } });
    const images = await filePixels(form, "images");
    if (images.length === 0) throw badRequest("images is required", { _errors: [], images: { _errors: ["At least one image file"] } });
    const modelId = form.get("modelId");
    edit = { ...(typeof modelId === "string" ? { modelId } : {}), prompt, enhance: form.get("enhance_prompt") === "true", images };
  } else {
    const body = parseBody(req, multiSchema);
    edit = {
      modelId: body.modelId,
      prompt: body.prompt,
      enhance: body.enhance_prompt === true,
      images: body.images.map((v, i) => fromField(v, `images[${i}]`, true)),
    };
  }
  const model = editModel(edit.modelId);
  if (edit.images.length > (model.maxInputImages ?? 3)) {
    throw badRequest(`${model.id} takes at most ${model.maxInputImages ?? 3} images`, {
      _errors: [],
      images: { _errors: ["Too many images"] },
    });
  }
  multiEdits.set(req, edit);
  return edit;
}

const enhanced = (ctx: EmulatorContext, prompt: string, on: boolean): Record<string, string> =>
  on ? { [`${ctx.names.headerPrefix}enhanced-prompt`]: encodeURIComponent(`${prompt}, crisp detail, balanced light`) } : {};

export const imageEditRoutes = {
  edit: {
    auth: "required",
    inference: true,
    resolveModel: async (req) => {
      await formOrJson(req, false);
      const body = parseBody(req, editSchema);
      return { model: editModel(body.model ?? body.modelId), bucket: "image" };
    },
    handler(req, ctx, caller) {
      const body = parseBody(req, editSchema);
      const model = editModel(body.model ?? body.modelId);
      refuseBlocked(body.prompt);
      const out = edited(fromField(body.image, "image", false), body.prompt);
      charge(caller, ctx, model.priceUsd, "image-edit", model.id);
      return png(out, enhanced(ctx, body.prompt, body.enhance_prompt === true), model.id);
    },
  },
  multiEdit: {
    auth: "required",
    inference: true,
    resolveModel: async (req) => ({ model: editModel((await multiEditOf(req)).modelId), bucket: "image" }),
    async handler(req, ctx, caller) {
      const edit = await multiEditOf(req);
      const model = editModel(edit.modelId);
      refuseBlocked(edit.prompt);
      let base = edit.images[0]!;
      for (const layer of edit.images.slice(1)) base = { ...base, rgb: blend(base, layer.rgb, layer.width, layer.height, 0.3) };
      charge(caller, ctx, model.priceUsd, "image-edit", model.id);
      return png(edited(base, edit.prompt), enhanced(ctx, edit.prompt, edit.enhance), model.id);
    },
  },
  upscale: {
    auth: "required",
    inference: true,
    resolveModel: () => ({ model: defaultMediaModel("upscale"), bucket: "image" }),
    async handler(req, ctx, caller) {
      const form = await formOrJson(req, true);
      let input: Pixels;
      let scale: number;
      if (form) {
        for (const key of form.keys())
          if (!["image", "scale", "creativity"].includes(key))
            throw badRequest("Invalid request", { _errors: [`Unrecognized key: "${key}"`] });
        const images = await filePixels(form, "image");
        if (images.length !== 1) throw badRequest("image is required", { _errors: [], image: { _errors: ["One image file"] } });
        input = images[0]!;
        scale = Number(form.get("scale") ?? 2);
        const creativity = form.get("creativity");
        if (creativity !== null && !Number.isFinite(Number(creativity)))
          throw badRequest("creativity must be a number", { _errors: [], creativity: { _errors: ["Expected a number"] } });
      } else {
        const body = parseBody(req, upscaleSchema);
        input = fromField(body.image, "image", false);
        scale = body.scale ?? 2;
      }
      if (scale !== 2 && scale !== 4) throw badRequest("scale must be 2 or 4", { _errors: [], scale: { _errors: ["Expected 2 | 4"] } });
      const model = defaultMediaModel("upscale");
      const price = model.upscaleUsd![scale === 4 ? "4x" : "2x"];
      // 4x on a large image is reduced to stay within 16 MP
      let f = scale;
      while (f > 1 && input.width * f * input.height * f > MAX_UPSCALED_PIXELS) f--;
      const width = input.width * f;
      const height = input.height * f;
      const rgb = new Uint8Array(width * height * 3);
      for (let y = 0; y < height; y++)
        for (let x = 0; x < width; x++)
          rgb.set(
            input.rgb.subarray(
              (Math.floor(y / f) * input.width + Math.floor(x / f)) * 3,
              (Math.floor(y / f) * input.width + Math.floor(x / f)) * 3 + 3,
            ),
            (y * width + x) * 3,
          );
      charge(caller, ctx, price, "upscale", model.id);
      return png({ width, height, rgb }, {}, model.id);
    },
  },
  backgroundRemove: {
    auth: "required",
    inference: true,
    resolveModel: () => ({ bucket: "image" }),
    async handler(req, ctx, caller) {
      const form = await formOrJson(req, true);
      let input: Pixels;
      if (form) {
        for (const key of form.keys())
          if (key !== "image")
            throw badRequest("Invalid request", { _errors: [`Unrecognized key: "${key}" (the multipart form takes an image file only)`] });
        const images = await filePixels(form, "image");
        if (images.length !== 1) throw badRequest("image is required", { _errors: [], image: { _errors: ["One image file"] } });
        input = images[0]!;
      } else {
        const body = parseBody(req, removeSchema);
        input = "image" in body ? fromField(body.image, "image", false) : standIn(body.image_url);
      }
      const [r0, g0, b0] = [input.rgb[0]!, input.rgb[1]!, input.rgb[2]!];
      const rgba = new Uint8Array(input.width * input.height * 4);
      for (let i = 0; i < input.width * input.height; i++) {
        const [r, g, b] = [input.rgb[i * 3]!, input.rgb[i * 3 + 1]!, input.rgb[i * 3 + 2]!];
        rgba.set([r, g, b, Math.hypot(r - r0, g - g0, b - b0) < 48 ? 0 : 255], i * 4);
      }
      charge(caller, ctx, BACKGROUND_REMOVE_PRICE_USD, "background-remove", "background-remove");
      return { status: 200, headers: { "content-type": "image/png" }, body: encodePng(input.width, input.height, rgba, undefined, 4) };
    },
  },
} satisfies Record<string, RouteSpec>;
