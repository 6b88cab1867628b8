/**
 * Image manipulation: `POST /image/edit` (one image and a prompt), `/image/multi-edit` (several, the first the
 * base), `/image/upscale` (2× or 4×) and `/image/background-remove` (a transparent cutout). Every one answers the
 * image as bytes (never JSON), told here from the bytes. Inputs are a file path, bytes, a Blob, or an https or
 * data URL where the route takes URLs; local bytes go as multipart file parts where the route has a multipart
 * form (multi-edit, upscale, background removal), as base64 in JSON where it has only JSON (edit). Sizes the
 * service refuses (25 MB; a known PNG under 256×256 or over ~5,761×5,761 pixels) are a ValidationError first.
 */
import { z } from "zod";
import { ResponseFormatError, ValidationError } from "../http/errors.js";
import { ContentViolationError } from "../http/model-errors.js";
import type { ServiceResponseHeaders } from "../http/headers.js";
import { checkArgs, requestMedia, type ServiceApi } from "../api/request.js";
import { readMediaInput, type MediaInput } from "./input.js";
import { sniffImage, type GeneratedImage } from "./sniff.js";
import { base64ToBytes, bytesToBase64 } from "../runtime/bytes.js";

/** A file path, bytes, a Blob, or (where the route takes one) an https URL or a `data:image/…;base64,` URL. */
export type ImageInput = MediaInput;

export const MAX_IMAGE_BYTES = 25 * 1024 * 1024;
/** the service's bounds on an input image's pixels (256×256 … ~5,761×5,761) */
export const MIN_IMAGE_PIXELS = 65_536;
export const MAX_IMAGE_PIXELS = 33_177_600;
export const IMAGE_EDIT_ASPECT_RATIOS = ["auto", "1:1", "3:2", "16:9", "21:9", "9:16", "2:3", "3:4", "4:3", "4:5"] as const;

export interface EditedImage extends GeneratedImage {
  /** the rewritten prompt (`enhancePrompt`), from the `x-<brand>-enhanced-prompt` header */
  enhancedPrompt?: string;
  headers: ServiceResponseHeaders;
}

export interface CallOptions {
  signal?: AbortSignal;
}

interface EditCommon {
  prompt: string;
  aspectRatio?: (typeof IMAGE_EDIT_ASPECT_RATIOS)[number];
  /** `1K` (default), `2K`, `4K`: model-specific */
  resolution?: string;
  outputFormat?: "png" | "jpeg" | "webp";
  /** rewrite the prompt against the image first (extra cost, up to ~30 s) */
  enhancePrompt?: boolean;
  /** default true: blurs adult content */
  safeMode?: boolean;
}

export interface EditImageParameters extends EditCommon {
  image: ImageInput;
  /** edit model (default: the service's, `GET /models?type=inpaint`) */
  model?: string;
}

export interface MultiEditImageParameters extends EditCommon {
  /** the first is the base, the rest layers or references (at most the model's `maxInputImages`) */
  images: ImageInput[];
  /** sent as `modelId`, the only name this route takes */
  model?: string;
  quality?: "low" | "medium" | "high";
}

export interface UpscaleImageParameters {
  image: ImageInput;
  /** 2 (default) or 4; 4 is reduced by the service to stay within 16 MP */
  scale?: 2 | 4;
  /** 0–0.02 (default 0.01): detail the upscaler adds */
  creativity?: number;
}

export interface RemoveBackgroundParameters {
  image: ImageInput;
}

const common = {
  prompt: z.string().trim().min(1, "prompt must not be empty").max(32_768, "prompt is at most 32768 characters"),
  aspectRatio: z.enum(IMAGE_EDIT_ASPECT_RATIOS).optional(),
  resolution: z
    .string()
    .regex(/^[1-9]K$/, "resolution is a tier like 1K, 2K, 4K")
    .optional(),
  outputFormat: z.enum(["png", "jpeg", "webp"]).optional(),
  enhancePrompt: z.boolean().optional(),
  safeMode: z.boolean().optional(),
};
const input = z.custom<ImageInput>((v) => v !== undefined && v !== null, "image is required");
const editArgs = z.object({ ...common, image: input, model: z.string().min(1).optional() }).strict();
const multiEditArgs = z
  .object({
    ...common,
    images: z.array(input).min(1, "at least one image").max(16),
    model: z.string().min(1).optional(),
    quality: z.enum(["low", "medium", "high"]).optional(),
  })
  .strict();
const upscaleArgs = z
  .object({
    image: input,
    scale: z.union([z.literal(2), z.literal(4)]).optional(),
    creativity: z.number().min(0).max(0.02, "creativity is 0 to 0.02").optional(),
  })
  .strict();
const removeArgs = z.object({ image: input }).strict();

/** A loaded input: bytes (checked, with a MIME type), or a URL the route fetches itself. */
type Loaded = { kind: "bytes"; bytes: Uint8Array; mimeType: string; filename: string } | { kind: "url"; url: string };

const DATA_URL = /^data:(image\/[\w.+-]+);base64,([A-Za-z0-9+/]*={0,2})$/;

async function load(image: ImageInput, what: string, urls: boolean): Promise<Loaded> {
  if (typeof image === "string" && /^https?:\/\//i.test(image)) {
    if (!urls) throw new ValidationError(`${what}: this route takes the image itself, not a URL`);
    if (!/^https:\/\/[^\s/]+/i.test(image)) throw new ValidationError(`${what}: only https URLs (the service fetches them)`);
    return { kind: "url", url: image };
  }
  let bytes: Uint8Array;
  let filename: string | undefined;
  if (typeof image === "string" && image.startsWith("data:")) {
    const m = DATA_URL.exec(image);
    if (!m) throw new ValidationError(`${what}: a data URL must be data:image/<type>;base64,<data>`);
    const decoded = base64ToBytes(m[2]!);
    if (!decoded) throw new ValidationError(`${what}: a data URL must be data:image/<type>;base64,<data>`);
    bytes = decoded;
    if (bytes.length > MAX_IMAGE_BYTES) throw new ValidationError(`${what} is larger than 25 MB (the service's limit)`);
  } else {
    ({ bytes, filename } = await readMediaInput(image, what, MAX_IMAGE_BYTES));
  }
  const sniffed = sniffImage(bytes);
  if (sniffed.extension === "bin") throw new ValidationError(`${what} is not a PNG, JPEG or WebP image (told from its bytes)`);
  if (sniffed.width !== undefined && sniffed.height !== undefined) {
    const pixels = sniffed.width * sniffed.height;
    if (pixels < MIN_IMAGE_PIXELS || pixels > MAX_IMAGE_PIXELS) {
      throw new ValidationError(
        `${what} is ${sniffed.width}×${sniffed.height}: the service takes 65,536 to 33,177,600 pixels (256×256 to ~5,761×5,761)`,
      );
    }
  }
  return { kind: "bytes", bytes, mimeType: sniffed.mimeType, filename: filename ?? `image.${sniffed.extension}` };
}

function base64Of(l: Loaded): string {
  return l.kind === "url" ? l.url : bytesToBase64(l.bytes);
}

function filePart(form: FormData, name: string, l: Extract<Loaded, { kind: "bytes" }>): void {
  form.append(name, new Blob([new Uint8Array(l.bytes)], { type: l.mimeType }), l.filename);
}

async function imageAnswer(
  client: ServiceApi,
  path: string,
  body: unknown,
  signal: AbortSignal | undefined,
  model?: string,
): Promise<EditedImage> {
  const res = await requestMedia(client, path, { method: "POST", body, accept: "image/*", signal, service: { model, modelType: "image" } });
  if (res.headers.contentPolicy?.isContentViolation === true) {
    throw new ContentViolationError(`${path} withheld the picture: the content policy refused it (x-*-is-content-violation: true)`, {
      status: res.status,
      headers: res.headers,
    });
  }
  if (!res.bytes || res.bytes.length === 0)
    throw new ResponseFormatError(`${path} answered ${res.contentType || "nothing"} instead of an image`, {
      body: res.json,
      headers: res.headers,
    });
  const image = sniffImage(res.bytes);
  if (image.extension === "bin") throw new ResponseFormatError(`${path} answered bytes that are not an image`, { headers: res.headers });
  const enhanced = res.rawHeaders.get(`x-${client.brand}-enhanced-prompt`) ?? undefined;
  let enhancedPrompt: string | undefined;
  try {
    enhancedPrompt = enhanced ? decodeURIComponent(enhanced) : undefined;
  } catch {
    enhancedPrompt = enhanced;
  }
  return { ...image, ...(enhancedPrompt ? { enhancedPrompt } : {}), headers: res.headers };
}

function editFields(p: EditCommon): Record<string, unknown> {
  const out: Record<string, unknown> = { prompt: p.prompt };
  if (p.aspectRatio) out.aspect_ratio = p.aspectRatio;
  if (p.resolution) out.resolution = p.resolution;
  if (p.outputFormat) out.output_format = p.outputFormat;
  if (p.enhancePrompt !== undefined) out.enhance_prompt = p.enhancePrompt;
  if (p.safeMode !== undefined) out.safe_mode = p.safeMode;
  return out;
}

/** POST /image/edit: one image changed as `prompt` says (JSON; the image as base64 or an https URL). */
export async function editImage(client: ServiceApi, parameters: EditImageParameters, options: CallOptions = {}): Promise<EditedImage> {
  const p = checkArgs(editArgs, parameters, "image edit");
  const image = await load(p.image, "image", true);
  const body = { ...(p.model ? { model: p.model } : {}), ...editFields(p), image: base64Of(image) };
  return imageAnswer(client, "/image/edit", body, options.signal, p.model);
}

/**
 * POST /image/multi-edit: several images composed by `prompt` (the first is the base). Local images go as
 * multipart file parts named `images`, in order; with any URL among them, as JSON (base64 and URLs).
 */
export async function multiEditImage(
  client: ServiceApi,
  parameters: MultiEditImageParameters,
  options: CallOptions = {},
): Promise<EditedImage> {
  const p = checkArgs(multiEditArgs, parameters, "multi-image edit");
  const images = await Promise.all(p.images.map((img, i) => load(img, `images[${i}]`, true)));
  const fields = { ...(p.model ? { modelId: p.model } : {}), ...editFields(p), ...(p.quality ? { quality: p.quality } : {}) };
  if (images.some((i) => i.kind === "url")) {
    return imageAnswer(client, "/image/multi-edit", { ...fields, images: images.map(base64Of) }, options.signal, p.model);
  }
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, String(v));
  for (const image of images) filePart(form, "images", image as Extract<Loaded, { kind: "bytes" }>);
  return imageAnswer(client, "/image/multi-edit", form, options.signal, p.model);
}

/** POST /image/upscale: 2× or 4× (multipart: the image file, `scale`, `creativity`); always PNG. */
export async function upscaleImage(
  client: ServiceApi,
  parameters: UpscaleImageParameters,
  options: CallOptions = {},
): Promise<EditedImage> {
  const p = checkArgs(upscaleArgs, parameters, "upscale");
  const image = (await load(p.image, "image", false)) as Extract<Loaded, { kind: "bytes" }>;
  const form = new FormData();
  filePart(form, "image", image);
  form.append("scale", String(p.scale ?? 2));
  if (p.creativity !== undefined) form.append("creativity", String(p.creativity));
  return imageAnswer(client, "/image/upscale", form, options.signal);
}

/** POST /image/background-remove: a transparent PNG cutout (multipart `image` file, or JSON `image_url` for a URL). */
export async function removeBackground(
  client: ServiceApi,
  parameters: RemoveBackgroundParameters,
  options: CallOptions = {},
): Promise<EditedImage> {
  const p = checkArgs(removeArgs, parameters, "background removal");
  const image = await load(p.image, "image", true);
  if (image.kind === "url") return imageAnswer(client, "/image/background-remove", { image_url: image.url }, options.signal);
  const form = new FormData();
  filePart(form, "image", image);
  return imageAnswer(client, "/image/background-remove", form, options.signal);
}
