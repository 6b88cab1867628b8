/**
 * The service's long-running jobs, one shape for video (`/video/quote|queue|retrieve|complete`) and asynchronous
 * audio (music, sound effects, long narration: `/audio/quote|queue|retrieve|complete`): price, enqueue (charged
 * when the provider accepts the job), poll (a status, or the media bytes), clean up (a video by its retrieve's
 * `delete_media_on_completion`: the service refuses `/video/complete` for queue ids). Arguments are checked with
 * zod before any request; answers are validated. `runJob` (./job-runner.ts) strings them together.
 *
 * A queue request is sent once: never retried by the stack, since an answer that did not arrive may still have
 * queued (and charged) a job. What to do then is the runner's (poll the ledger for the job, never queue again).
 */
import { z } from "zod";
import { InsufficientBalanceError, ResponseFormatError, ValidationError } from "../http/errors.js";
import type { ServiceResponseHeaders } from "../http/headers.js";
import type { ModelType } from "../http/types.js";
import { LruMap } from "../http/bounded.js";
import { contextKey, stackContext } from "../http/context.js";
import type { TransportFetch } from "../http/fetch-stack.js";
import { checkArgs, parseWith, requestMedia, type ServiceApi } from "../api/request.js";
import { CreditBelowQuoteError, type JobKind } from "./errors.js";

export type { JobKind } from "./errors.js";

export interface CallOptions {
  signal?: AbortSignal;
}

export interface QueueOptions extends CallOptions {
  /** the job's quote: what a spend budget holds for it and settles it to (the service charges it at the queue) */
  quoteUsd?: number;
}

// --- parameters ----------------------------------------------------------------------------------------

/** Durations the published `QueueVideoRequest` allows (a model takes a subset; `1 gen` for models priced per generation). */
export const VIDEO_DURATIONS = [...Array.from({ length: 16 }, (_, i) => `${i + 1}s`), "18s", "20s", "25s", "30s", "1 gen", "Auto"] as const;
export type VideoDuration = (typeof VIDEO_DURATIONS)[number];
export const VIDEO_ASPECT_RATIOS = ["1:1", "2:3", "3:2", "3:4", "4:3", "9:16", "16:9", "21:9"] as const;
export type VideoAspectRatio = (typeof VIDEO_ASPECT_RATIOS)[number];

export interface VideoJobParameters {
  model: string;
  /** required by every model but those that take a camera path (1–20000 characters; most models cap near 2500) */
  prompt?: string;
  negativePrompt?: string;
  duration: VideoDuration;
  aspectRatio?: VideoAspectRatio;
  /** `480p`, `720p`, `1080p`, `4k`, … (model-specific); upscale models take `upscaleFactor` instead */
  resolution?: string;
  /** generate sound (audio-capable models; the service's default is true) */
  audio?: boolean;
  /** image-to-video: the first frame, an https URL or a data URL */
  imageUrl?: string;
  endImageUrl?: string;
  /** background music (WAV/MP3, ≤ 30 s), an https URL or a data URL */
  audioUrl?: string;
  /** video-to-video and upscale input */
  videoUrl?: string;
  /** up to 9 images for character or style consistency */
  referenceImageUrls?: string[];
  /** upscale models: 1 (quality enhancement), 2 or 4 */
  upscaleFactor?: 1 | 2 | 4;
  /** other published members as the wire names them (`camera_trajectory`, `elements`, `scene_image_urls`, …) */
  extra?: Record<string, unknown>;
}

export interface AudioJobParameters {
  model: string;
  /** the description of the music or sound, or the text to speak (voice models) */
  prompt: string;
  lyricsPrompt?: string;
  /** only for models with duration metadata (rejected by the others) */
  durationSeconds?: number;
  forceInstrumental?: boolean;
  lyricsOptimizer?: boolean;
  loop?: boolean;
  voice?: string;
  languageCode?: string;
  speed?: number;
}

const mediaUrl = z
  .string()
  .refine((u) => /^https:\/\/\S+$/i.test(u) || /^data:[a-z]+\/[\w.+-]+;base64,/i.test(u), "must be an https URL or a base64 data URL");

const videoArgs = z
  .object({
    model: z.string().min(1, "model is required"),
    prompt: z.string().trim().min(1, "prompt must not be empty").max(20_000).optional(),
    negativePrompt: z.string().max(3500).optional(),
    duration: z.enum(VIDEO_DURATIONS, { message: `duration is one of ${VIDEO_DURATIONS.join(", ")}` }),
    aspectRatio: z.enum(VIDEO_ASPECT_RATIOS).optional(),
    resolution: z
      .string()
      .regex(/^(\d{3,4}p|[24]k|2x|4x|true_1080p)$/, "resolution is like 480p, 720p, 1080p, 4k")
      .optional(),
    audio: z.boolean().optional(),
    imageUrl: mediaUrl.optional(),
    endImageUrl: mediaUrl.optional(),
    audioUrl: mediaUrl.optional(),
    videoUrl: mediaUrl.optional(),
    referenceImageUrls: z.array(mediaUrl).max(9, "at most 9 reference images").optional(),
    upscaleFactor: z.union([z.literal(1), z.literal(2), z.literal(4)]).optional(),
    extra: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

const audioArgs = z
  .object({
    model: z.string().min(1, "model is required"),
    prompt: z.string().trim().min(1, "prompt must not be empty"),
    lyricsPrompt: z.string().max(4096).optional(),
    durationSeconds: z.number().int("durationSeconds must be a whole number").positive().optional(),
    forceInstrumental: z.boolean().optional(),
    lyricsOptimizer: z.boolean().optional(),
    loop: z.boolean().optional(),
    voice: z.string().min(1).optional(),
    languageCode: z
      .string()
      .regex(/^[a-z]{2}$/, "languageCode is ISO 639-1, e.g. en")
      .optional(),
    speed: z.number().positive().optional(),
  })
  .strict()
  .refine((p) => !(p.lyricsOptimizer && p.lyricsPrompt), {
    message: "lyricsOptimizer writes the lyrics: leave lyricsPrompt empty",
    path: ["lyricsPrompt"],
  });

/** The wire body of a video queue request. */
function videoBody(p: VideoJobParameters): Record<string, unknown> {
  const body: Record<string, unknown> = { ...p.extra, model: p.model, duration: p.duration };
  const set = (k: string, v: unknown) => v !== undefined && (body[k] = v);
  set("prompt", p.prompt);
  set("negative_prompt", p.negativePrompt);
  set("aspect_ratio", p.aspectRatio);
  set("resolution", p.resolution);
  set("audio", p.audio);
  set("image_url", p.imageUrl);
  set("end_image_url", p.endImageUrl);
  set("audio_url", p.audioUrl);
  set("video_url", p.videoUrl);
  set("reference_image_urls", p.referenceImageUrls);
  set("upscale_factor", p.upscaleFactor);
  return body;
}

/** The wire body of an audio queue request. */
function audioBody(p: AudioJobParameters): Record<string, unknown> {
  const body: Record<string, unknown> = { model: p.model, prompt: p.prompt };
  const set = (k: string, v: unknown) => v !== undefined && (body[k] = v);
  set("lyrics_prompt", p.lyricsPrompt);
  set("duration_seconds", p.durationSeconds);
  set("force_instrumental", p.forceInstrumental);
  set("lyrics_optimizer", p.lyricsOptimizer);
  set("loop", p.loop);
  set("voice", p.voice);
  set("language_code", p.languageCode);
  set("speed", p.speed);
  return body;
}

/** The published quote request of each kind: only the members that price the job. */
function quoteBody(kind: JobKind, queue: Record<string, unknown>): Record<string, unknown> {
  const pick = (keys: string[]) => Object.fromEntries(keys.filter((k) => queue[k] !== undefined).map((k) => [k, queue[k]]));
  if (kind === "video") {
    return pick([
      "model",
      "duration",
      "aspect_ratio",
      "resolution",
      "audio",
      "upscale_factor",
      "video_url",
      "reference_video_total_duration",
    ]);
  }
  // priced by characters for some models (sent for all: it is ignored by the others)
  return { ...pick(["model", "duration_seconds"]), character_count: String(queue.prompt ?? "").length };
}

// --- answers -------------------------------------------------------------------------------------------

const quoteResponse = z.object({ quote: z.number().nonnegative() }).passthrough();
const queueResponse = z
  .object({ model: z.string(), queue_id: z.string().min(1), download_url: z.string().optional(), status: z.string().optional() })
  .passthrough();
const statusResponse = z
  .object({ status: z.string(), average_execution_time: z.number().optional(), execution_duration: z.number().optional() })
  .passthrough();
const completeResponse = z.object({ success: z.boolean() }).passthrough();

export interface JobQuote {
  quoteUsd: number;
  headers: ServiceResponseHeaders;
}

export interface QueuedJob {
  kind: JobKind;
  model: string;
  queueId: string;
  /** some (privately hosted) video models: where the finished file is fetched (valid 24 h), not from retrieve */
  downloadUrl?: string;
  headers: ServiceResponseHeaders;
}

/** What a job is, as a poll tells it. */
export type JobStatus =
  | {
      status: "PROCESSING";
      /** the service's estimate of the whole run (P80), ms */
      averageExecutionTimeMs?: number;
      /** time since it was queued, ms */
      executionDurationMs?: number;
      headers: ServiceResponseHeaders;
    }
  | {
      status: "COMPLETED";
      /** the media (absent when the job is fetched from its `downloadUrl`) */
      bytes?: Uint8Array;
      /** e.g. `video/mp4`, `audio/wav` */
      contentType?: string;
      headers: ServiceResponseHeaders;
    };

export interface JobRef {
  model: string;
  queueId: string;
}

/** The path family of a kind (`/video/…`, `/audio/…`) and its model type for pacing. */
const PATHS: Record<JobKind, { prefix: string; modelType: ModelType; accept: string }> = {
  video: { prefix: "/video", modelType: "video", accept: "video/*, application/json" },
  audio: { prefix: "/audio", modelType: "audio", accept: "audio/*, application/json" },
};

/**
 * Queue ids the stacks of a context have seen, per caller: a lost queue answer is found again in the ledger as a
 * charge whose id is none of these (see ./job-recovery.ts).
 */
const SEEN_QUEUE_IDS = contextKey("seen queue ids", () => new LruMap<string, true>(10_000));
type Caller = Pick<TransportFetch, "identity" | "context">;
export function rememberQueueId(stack: Caller, queueId: string): void {
  stackContext(stack).part(SEEN_QUEUE_IDS).set(`${stack.identity}|${queueId}`, true);
}
export function seenQueueId(stack: Caller, queueId: string): boolean {
  return stackContext(stack).part(SEEN_QUEUE_IDS).get(`${stack.identity}|${queueId}`) !== undefined;
}

/** The checked queue body of a kind's parameters (a ValidationError before any request). */
export function jobBody(kind: JobKind, parameters: VideoJobParameters | AudioJobParameters): Record<string, unknown> {
  return kind === "video"
    ? videoBody(checkArgs(videoArgs, parameters, "video job") as VideoJobParameters)
    : audioBody(checkArgs(audioArgs, parameters, "audio job") as AudioJobParameters);
}

/** POST /{kind}/quote: the job's price in USD (nothing charged, nothing queued). */
export async function quoteJob(
  client: ServiceApi,
  kind: JobKind,
  parameters: VideoJobParameters | AudioJobParameters,
  options: CallOptions = {},
): Promise<JobQuote> {
  const body = quoteBody(kind, jobBody(kind, parameters));
  const { prefix, modelType } = PATHS[kind];
  const res = await client.request(`${prefix}/quote`, {
    method: "POST",
    body,
    signal: options.signal,
    service: { model: String(body.model), modelType },
  });
  return { quoteUsd: parseWith(quoteResponse, res.data, `${prefix}/quote`, res.headers).quote, headers: res.headers };
}

/**
 * POST /{kind}/queue: enqueues the job (charged once the provider accepts it). Sent once, never retried: an answer
 * that did not arrive may still have queued it (see `runJob` for finding it again).
 */
export async function queueJob(
  client: ServiceApi,
  kind: JobKind,
  parameters: VideoJobParameters | AudioJobParameters,
  options: QueueOptions = {},
): Promise<QueuedJob> {
  const body = jobBody(kind, parameters);
  const { prefix, modelType } = PATHS[kind];
  const res = await client
    .request(`${prefix}/queue`, {
      method: "POST",
      body,
      signal: options.signal,
      // its quote is what a spend budget holds for it, and what it is charged once the provider accepts it
      service: {
        model: String(body.model),
        modelType,
        retry: false,
        ...(options.quoteUsd !== undefined ? { spend: { estimateUsd: options.quoteUsd } } : {}),
      },
    })
    .catch((err: unknown) => {
      throw walletShortOfQuote(client, kind, String(body.model), options.quoteUsd, err);
    });
  const data = parseWith(queueResponse, res.data, `${prefix}/queue`, res.headers);
  rememberQueueId(client.fetch, data.queue_id);
  return {
    kind,
    model: data.model,
    queueId: data.queue_id,
    ...(data.download_url ? { downloadUrl: data.download_url } : {}),
    headers: res.headers,
  };
}

/**
 * A wallet's plain 402 on a queue (no code): its credit is above the service's floor but under the quote, not an
 * API-key account out of funds (what the plain 402 means for a key).
 */
function walletShortOfQuote(client: ServiceApi, kind: JobKind, model: string, quoteUsd: number | undefined, err: unknown): unknown {
  if (!client.wallet || !(err instanceof InsufficientBalanceError) || err.code !== undefined) return err;
  const price = quoteUsd !== undefined ? ` ($${quoteUsd})` : "";
  return new CreditBelowQuoteError(
    `402 the wallet's credit is under this ${kind} job's quote${price} (above the service's $0.10 floor, so no top-up was asked for): ` +
      "nothing was queued; top up within your policy (topUp) and queue again, or run it with generate(), which tops up first",
    { status: err.status, body: err.body, headers: err.headers, requestId: err.requestId, kind, model, quoteUsd, cause: err },
  );
}

/** a job reference: `{model, queueId}`, or anything carrying them (a QueuedJob, a JobResult) */
const refArgs = z.object({ model: z.string().min(1, "model is required"), queueId: z.string().min(1, "queueId is required") });

/**
 * POST /{kind}/retrieve: the job's status while it runs, else its media. With `deleteMediaOnCompletion` the
 * service deletes the media once this answer delivered it (no `complete` needed). A failed job answers its error
 * here (thrown, typed: a content policy 422, a provider 400/500, a 404 for media gone).
 */
export async function retrieveJob(
  client: ServiceApi,
  kind: JobKind,
  ref: JobRef & { deleteMediaOnCompletion?: boolean },
  options: CallOptions & { retry?: boolean } = {},
): Promise<JobStatus> {
  const { deleteMediaOnCompletion, ...rest } = ref;
  const r = checkArgs(refArgs, rest, `${kind} job reference`);
  const { prefix, modelType, accept } = PATHS[kind];
  const body = {
    model: r.model,
    queue_id: r.queueId,
    ...(deleteMediaOnCompletion !== undefined ? { delete_media_on_completion: deleteMediaOnCompletion } : {}),
  };
  const res = await requestMedia(client, `${prefix}/retrieve`, {
    method: "POST",
    body,
    accept,
    signal: options.signal,
    service: { model: r.model, modelType, ...(options.retry === false ? { retry: false } : {}) },
  });
  if (res.json === undefined) {
    if (!res.bytes || res.bytes.length === 0)
      throw new ResponseFormatError(`${prefix}/retrieve answered an empty body`, { headers: res.headers });
    return { status: "COMPLETED", bytes: res.bytes, contentType: res.contentType, headers: res.headers };
  }
  const s = parseWith(statusResponse, res.json, `${prefix}/retrieve`, res.headers);
  if (s.status === "COMPLETED") return { status: "COMPLETED", headers: res.headers };
  if (s.status !== "PROCESSING" && s.status !== "QUEUED") {
    throw new ResponseFormatError(`${prefix}/retrieve answered an unknown status ${JSON.stringify(s.status)}`, {
      body: res.json,
      headers: res.headers,
    });
  }
  return {
    status: "PROCESSING",
    averageExecutionTimeMs: s.average_execution_time,
    executionDurationMs: s.execution_duration,
    headers: res.headers,
  };
}

/**
 * POST /{kind}/complete: deletes the job's stored media (after it was saved); `false` when the delete did not go
 * through. Audio only: the live service refuses `/video/complete` for every queue id `/video/queue` gives, so a video
 * is deleted by retrieving it with `deleteMediaOnCompletion` (what `generate` does), and this is a `ValidationError`.
 */
export async function completeJob(client: ServiceApi, kind: JobKind, ref: JobRef, options: CallOptions = {}): Promise<boolean> {
  const r = checkArgs(refArgs, ref, `${kind} job reference`);
  if (kind === "video") {
    throw new ValidationError(
      "video.complete: the service refuses /video/complete for every queue id from /video/queue; retrieve the video with deleteMediaOnCompletion: true instead (nothing was sent)",
    );
  }
  const { prefix, modelType } = PATHS[kind];
  const res = await client.request(`${prefix}/complete`, {
    method: "POST",
    body: { model: r.model, queue_id: r.queueId },
    signal: options.signal,
    service: { model: r.model, modelType },
  });
  return parseWith(completeResponse, res.data, `${prefix}/complete`, res.headers).success;
}
