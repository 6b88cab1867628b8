/**
 * The service's web, image and speech operations over a `ServiceClient` (the one fetch stack: API key or wallet,
 * x402 top-ups, pacing, retries, typed errors). Named after the published operationIds. Arguments are checked
 * here and refused with a `ValidationError` before any request; answers are validated with zod.
 * (They take the client as their first argument; `ServiceClient` methods can wrap them one-to-one.)
 */
import { z } from "zod";
import type { ServiceApi } from "../api/request.js";
import type { ServiceModel } from "../models/records.js";

/** What these operations need of a client (`ServiceClient` has it): the stack's requests, and the model lists. */
type ToolClient = ServiceApi & { listModels(options?: { type?: string; signal?: AbortSignal }): Promise<ServiceModel[]> };
import { parseWith } from "../api/request.js";
import { ResponseFormatError, ValidationError } from "../http/errors.js";
import { ContentViolationError } from "../http/model-errors.js";
import { responseHeaders, type ServiceRequestInit } from "../http/fetch-stack.js";
import { readResponseBytes } from "../http/body.js";
import type { ServiceResponseHeaders } from "../http/headers.js";
import { assertPublicHttpUrl } from "./url-guard.js";
import { sniffImage, wavDurationSeconds, type GeneratedImage } from "../media/sniff.js";
import { base64ToBytes, utf8Text } from "../runtime/bytes.js";

export interface CallOptions {
  signal?: AbortSignal;
}

function check(condition: boolean, message: string): void {
  if (!condition) throw new ValidationError(message);
}

function issues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? `${i.path.join(".")}: ` : ""}${i.message}`).join("; ");
}

/** Validates `input` against `schema`; a ValidationError names every problem. */
function args<T>(schema: z.ZodType<T>, input: unknown, what: string): T {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new ValidationError(`invalid ${what}: ${issues(parsed.error)}`, { issues: parsed.error.issues });
  return parsed.data;
}

// --- POST /augment/search -----------------------------------------------------------------------------

export const WEB_SEARCH_PROVIDERS = ["brave", "google"] as const;
export type WebSearchProvider = (typeof WEB_SEARCH_PROVIDERS)[number];

export interface WebSearchParameters {
  query: string;
  /** 1–20 (service default 10) */
  limit?: number;
  /** `brave` (service default, zero data retention) or `google` (anonymized) */
  provider?: WebSearchProvider;
}

const searchArgs = z
  .object({
    query: z.string().trim().min(1, "query must not be empty").max(400, "query is at most 400 characters"),
    limit: z.number().int("limit must be a whole number").min(1).max(20).optional(),
    provider: z.enum(WEB_SEARCH_PROVIDERS).optional(),
  })
  .strict();

const searchResponse = z
  .object({
    query: z.string(),
    results: z.array(z.object({ title: z.string(), url: z.string(), content: z.string(), date: z.string().nullish() }).passthrough()),
  })
  .passthrough();

export interface WebSearchResult {
  query: string;
  results: { title: string; url: string; content: string; date?: string | null }[];
  /** the response as received */
  raw: unknown;
  headers: ServiceResponseHeaders;
}

export async function webSearch(client: ToolClient, parameters: WebSearchParameters, options: CallOptions = {}): Promise<WebSearchResult> {
  const p = args(searchArgs, parameters, "web search");
  const body = {
    query: p.query,
    ...(p.limit !== undefined ? { limit: p.limit } : {}),
    ...(p.provider ? { search_provider: p.provider } : {}),
  };
  const res = await client.request("/augment/search", { method: "POST", body, signal: options.signal });
  const data = parseWith(searchResponse, res.data, "/augment/search", res.headers);
  return { query: data.query, results: data.results, raw: res.data, headers: res.headers };
}

// --- POST /augment/scrape -----------------------------------------------------------------------------

const scrapeResponse = z.object({ url: z.string(), content: z.string(), format: z.string() }).passthrough();

export interface WebScrapeResult {
  url: string;
  /** the page as markdown */
  content: string;
  format: string;
  raw: unknown;
  headers: ServiceResponseHeaders;
}

/** Scrapes one public http(s) page; loopback, private and non-http(s) URLs are refused (UnsafeUrlError) before any request. */
export async function webScrape(client: ToolClient, url: string, options: CallOptions = {}): Promise<WebScrapeResult> {
  const safe = assertPublicHttpUrl(url);
  const res = await client.request("/augment/scrape", { method: "POST", body: { url: safe.href }, signal: options.signal });
  const data = parseWith(scrapeResponse, res.data, "/augment/scrape", res.headers);
  return { url: data.url, content: data.content, format: data.format, raw: res.data, headers: res.headers };
}

// --- POST /image/generate and POST /images/generations ---------------------------------------------------

export interface GenerateImageParameters {
  model: string;
  prompt: string;
  negativePrompt?: string;
  width?: number;
  height?: number;
  /** `png` unless asked otherwise (the service's default is webp) */
  format?: "png" | "jpeg" | "webp";
  seed?: number;
  /** 1–4 images */
  variants?: number;
  safeMode?: boolean;
  stylePreset?: string;
  cfgScale?: number;
}

const imageArgs = z
  .object({
    model: z.string().min(1, "model is required"),
    prompt: z.string().trim().min(1, "prompt must not be empty").max(7500),
    negativePrompt: z.string().max(7500).optional(),
    width: z.number().int().min(1).max(1280).optional(),
    height: z.number().int().min(1).max(1280).optional(),
    format: z.enum(["png", "jpeg", "webp"]).optional(),
    seed: z.number().int().min(-999999999).max(999999999).optional(),
    variants: z.number().int().min(1).max(4).optional(),
    safeMode: z.boolean().optional(),
    stylePreset: z.string().optional(),
    cfgScale: z.number().gt(0).max(20).optional(),
  })
  .strict();

const generateResponse = z
  .object({
    id: z.string(),
    images: z.array(z.string()).min(1),
    timing: z.record(z.string(), z.unknown()).optional(),
    request: z.unknown().optional(),
  })
  .passthrough();

export { sniffImage, wavDurationSeconds, type GeneratedImage } from "../media/sniff.js";

export interface GenerateImageResult {
  id: string;
  images: GeneratedImage[];
  timing?: Record<string, unknown>;
  headers: ServiceResponseHeaders;
}

/**
 * A 200 whose `x-<brand>-is-content-violation` header is true is a refusal, not the picture asked for (the image
 * routes say so in that header rather than with a 422): a `ContentViolationError`.
 */
export function refuseViolation(headers: ServiceResponseHeaders, path: string): void {
  if (headers.contentPolicy?.isContentViolation !== true) return;
  throw new ContentViolationError(
    `${path} withheld the picture: the prompt violates the content policy (x-*-is-content-violation: true); change the prompt`,
    { status: 200, headers },
  );
}

function decodeImage(b64: string, headers: ServiceResponseHeaders): GeneratedImage {
  const text = b64.replace(/^data:[^,]*;base64,/, "");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) throw new ResponseFormatError("an image is not base64", { headers });
  return sniffImage(base64ToBytes(text)!); // checked as base64 just above
}

/** POST /image/generate: the service's own image endpoint (base64 images in JSON). */
export async function generateImage(
  client: ToolClient,
  parameters: GenerateImageParameters,
  options: CallOptions = {},
): Promise<GenerateImageResult> {
  const p = args(imageArgs, parameters, "image request");
  const body: Record<string, unknown> = { model: p.model, prompt: p.prompt, format: p.format ?? "png" };
  if (p.negativePrompt) body.negative_prompt = p.negativePrompt;
  if (p.width !== undefined) body.width = p.width;
  if (p.height !== undefined) body.height = p.height;
  if (p.seed !== undefined) body.seed = p.seed;
  if (p.variants !== undefined) body.variants = p.variants;
  if (p.safeMode !== undefined) body.safe_mode = p.safeMode;
  if (p.stylePreset !== undefined) body.style_preset = p.stylePreset;
  if (p.cfgScale !== undefined) body.cfg_scale = p.cfgScale;
  const res = await client.request("/image/generate", {
    method: "POST",
    body,
    signal: options.signal,
    service: { model: p.model, modelType: "image" },
  });
  refuseViolation(res.headers, "/image/generate");
  const data = parseWith(generateResponse, res.data, "/image/generate", res.headers);
  return { id: data.id, images: data.images.map((b) => decodeImage(b, res.headers)), timing: data.timing, headers: res.headers };
}

export interface SimpleGenerateImageParameters {
  prompt: string;
  /** default: the service's default image model (unknown names fall back to it) */
  model?: string;
  size?: "auto" | "256x256" | "512x512" | "1024x1024" | "1536x1024" | "1024x1536" | "1792x1024" | "1024x1792";
  outputFormat?: "png" | "jpeg" | "webp";
  moderation?: "low" | "auto";
}

const simpleArgs = z
  .object({
    prompt: z.string().trim().min(1, "prompt must not be empty").max(1500),
    model: z.string().min(1).optional(),
    size: z.enum(["auto", "256x256", "512x512", "1024x1024", "1536x1024", "1024x1536", "1792x1024", "1024x1792"]).optional(),
    outputFormat: z.enum(["png", "jpeg", "webp"]).optional(),
    moderation: z.enum(["low", "auto"]).optional(),
  })
  .strict();

const simpleResponse = z
  .object({
    created: z.number(),
    data: z.array(z.union([z.object({ b64_json: z.string() }).passthrough(), z.object({ url: z.string() }).passthrough()])).min(1),
  })
  .passthrough();

/** POST /images/generations: the OpenAI-compatible endpoint (one image, `b64_json`). */
export async function simpleGenerateImage(
  client: ToolClient,
  parameters: SimpleGenerateImageParameters,
  options: CallOptions = {},
): Promise<{ created: number; images: GeneratedImage[]; headers: ServiceResponseHeaders }> {
  const p = args(simpleArgs, parameters, "image request");
  const body: Record<string, unknown> = { prompt: p.prompt, response_format: "b64_json", n: 1 };
  if (p.model) body.model = p.model;
  if (p.size) body.size = p.size;
  if (p.outputFormat) body.output_format = p.outputFormat;
  if (p.moderation) body.moderation = p.moderation;
  const res = await client.request("/images/generations", {
    method: "POST",
    body,
    signal: options.signal,
    service: { model: p.model, modelType: "image" },
  });
  refuseViolation(res.headers, "/images/generations");
  const data = parseWith(simpleResponse, res.data, "/images/generations", res.headers);
  const images = data.data.map((item) =>
    decodeImage(String("b64_json" in item ? item.b64_json : (item as { url: string }).url), res.headers),
  );
  return { created: data.created, images, headers: res.headers };
}

// --- POST /audio/speech, voices -------------------------------------------------------------------------

export const SPEECH_FORMATS = ["mp3", "opus", "aac", "flac", "wav", "pcm"] as const;
export type SpeechFormat = (typeof SPEECH_FORMATS)[number];

export interface CreateSpeechParameters {
  input: string;
  /** default `tts-kokoro` (the service's default) */
  model?: string;
  voice?: string;
  /** default: the model's own default format */
  format?: SpeechFormat;
  /** 0.25–4 */
  speed?: number;
  language?: string;
}

const speechArgs = z
  .object({
    input: z.string().min(1, "the text to speak must not be empty").max(4096, "the text to speak is at most 4096 characters"),
    model: z.string().min(1).optional(),
    voice: z.string().min(1).max(512).optional(),
    format: z.enum(SPEECH_FORMATS).optional(),
    speed: z.number().min(0.25, "speed is 0.25 to 4").max(4, "speed is 0.25 to 4").optional(),
    language: z.string().min(2).max(32).optional(),
  })
  .strict();

export interface SpeechResult {
  audio: Uint8Array;
  /** the response's content type, e.g. `audio/wav` */
  contentType: string;
  format: SpeechFormat | "unknown";
  /** seconds, read from the WAV header (or the PCM length at 24 kHz 16-bit mono); undefined for compressed formats */
  durationSeconds?: number;
  headers: ServiceResponseHeaders;
}

const FORMAT_OF: Record<string, SpeechFormat> = {
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/wave": "wav",
  "audio/mpeg": "mp3",
  "audio/mp3": "mp3",
  "audio/opus": "opus",
  "audio/ogg": "opus",
  "audio/aac": "aac",
  "audio/flac": "flac",
  "audio/pcm": "pcm",
  "audio/l16": "pcm",
};

/** POST /audio/speech: the audio bytes, their format (from the content type, else the bytes) and duration. */
export async function createSpeech(
  client: ToolClient,
  parameters: CreateSpeechParameters,
  options: CallOptions = {},
): Promise<SpeechResult> {
  const p = args(speechArgs, parameters, "speech request");
  const body: Record<string, unknown> = { input: p.input };
  if (p.model) body.model = p.model;
  if (p.voice) body.voice = p.voice;
  if (p.format) body.response_format = p.format;
  if (p.speed !== undefined) body.speed = p.speed;
  if (p.language) body.language = p.language;
  // binary answer: straight through the stack (ServiceClient.request reads text)
  const response = await client.fetch(client.fetch.url("/audio/speech"), {
    method: "POST",
    headers: { "content-type": "application/json", accept: "audio/*, application/json" },
    body: JSON.stringify(body),
    signal: options.signal,
    service: { model: p.model ?? "tts-kokoro", modelType: "audio" },
  } as ServiceRequestInit);
  const headers = responseHeaders(response, client.brand);
  const audio = await readResponseBytes(response, { what: "/audio/speech", signal: options.signal, headers });
  const contentType = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (contentType.includes("json") || audio.length === 0) {
    throw new ResponseFormatError(`/audio/speech answered ${contentType || "nothing"} instead of audio`, {
      headers,
      body: utf8Text(audio).slice(0, 500),
    });
  }
  const wav = wavDurationSeconds(audio);
  const format: SpeechFormat | "unknown" = wav !== undefined ? "wav" : (FORMAT_OF[contentType] ?? p.format ?? "unknown");
  const durationSeconds = wav ?? (format === "pcm" ? audio.length / (24_000 * 2) : undefined);
  return { audio, contentType, format, durationSeconds, headers };
}

/** A TTS model's voices, from GET /models?type=tts (`model_spec.voices`); undefined when the model is not listed. */
export async function listVoices(client: ToolClient, model: string, options: CallOptions = {}): Promise<string[] | undefined> {
  check(typeof model === "string" && model.length > 0, "model must be a non-empty string");
  const models = await client.listModels({ type: "tts", signal: options.signal });
  const found = models.find((m) => m.id === model);
  if (!found) return undefined;
  const voices = (found.model_spec as { voices?: unknown } | undefined)?.voices;
  return Array.isArray(voices) ? voices.filter((v): v is string => typeof v === "string") : [];
}

/** POST /audio/voices: clones a voice from a sample (WAV, MP3, FLAC, M4A as the model accepts); returns the `vv_…` handle. */
export async function createClonedVoice(
  client: ToolClient,
  sample: Uint8Array,
  options: CallOptions & { model?: "tts-chatterbox-hd" | "tts-minimax-speech-02-hd"; filename?: string } = {},
): Promise<{ id: string; model: string; headers: ServiceResponseHeaders }> {
  check(sample instanceof Uint8Array && sample.length > 0, "sample must be non-empty audio bytes");
  check(sample.length <= 25 * 1024 * 1024, "sample is larger than 25 MB");
  const form = new FormData();
  form.set("file", new Blob([new Uint8Array(sample)]), options.filename ?? "sample.wav");
  form.set("model", options.model ?? "tts-chatterbox-hd");
  const res = await client.request("/audio/voices", { method: "POST", body: form, signal: options.signal });
  const data = parseWith(z.object({ id: z.string(), model: z.string() }), res.data, "/audio/voices", res.headers);
  return { ...data, headers: res.headers };
}
