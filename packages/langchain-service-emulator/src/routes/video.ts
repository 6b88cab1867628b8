/**
 * Video jobs: POST /video/quote (the price, nothing charged), /video/queue (checked against the model's durations,
 * resolutions and aspect ratios; charged its quote; `{model, queue_id}`, plus `download_url` for a privately hosted
 * model), /video/retrieve (`{status: "PROCESSING", average_execution_time, execution_duration}`, then the MP4 of
 * ../media/mp4.ts, or the job's error once it failed and was refunded), /video/complete (live: refuses every queue id
 * from /video/queue, as the service does; seed: deletes the media), and the
 * download URL of privately hosted models. The job machinery is ../media/jobs.ts; queues are paced in the `video`
 * bucket (spec part 8: 40 a minute).
 */
import { VIDEO_ASPECT_RATIOS, VIDEO_DURATIONS } from "langchain-service";
import { z } from "zod";
import { findMediaModel, type MediaModel } from "../models/catalog.js";
import { videoFor } from "../media/mp4.js";
import { fundsOf, jobStore, shortOfQuote } from "../media/jobs.js";
import { EmulatorHttpError, isLiveMode, type EmulatorContext, type RouteSpec } from "../types.js";
import { badRequest, parseBody } from "./strict-body.js";

const url = z
  .string()
  .refine((u) => /^https:\/\/\S+$/i.test(u) || /^data:[a-z]+\/[\w.+-]+;base64,/i.test(u), "must be an https URL or a data URL");

const quoteSchema = z
  .object({
    model: z.string().min(1),
    duration: z.enum(VIDEO_DURATIONS),
    aspect_ratio: z.enum(VIDEO_ASPECT_RATIOS).optional(),
    resolution: z.string().optional(),
    audio: z.boolean().optional(),
    upscale_factor: z.union([z.literal(1), z.literal(2), z.literal(4)]).optional(),
    video_url: url.optional(),
    reference_video_total_duration: z.number().positive().max(45).optional(),
  })
  .strict();

/** QueueVideoRequest (the published members; closed). */
const queueSchema = z
  .object({
    model: z.string().min(1),
    prompt: z.string().min(1).max(20_000).optional(),
    negative_prompt: z.string().max(3500).optional(),
    duration: z.enum(VIDEO_DURATIONS),
    aspect_ratio: z.enum(VIDEO_ASPECT_RATIOS).optional(),
    resolution: z.string().optional(),
    upscale_factor: z.union([z.literal(1), z.literal(2), z.literal(4)]).optional(),
    audio: z.boolean().optional(),
    image_url: url.optional(),
    end_image_url: url.optional(),
    audio_url: url.optional(),
    video_url: url.optional(),
    reference_image_urls: z.array(url).max(9).optional(),
    reference_video_urls: z.array(url).max(3).optional(),
    reference_audio_urls: z.array(url).max(3).optional(),
    consents: z.record(z.string(), z.unknown()).optional(),
    elements: z.array(z.record(z.string(), z.unknown())).max(4).optional(),
    scene_image_urls: z.array(url).max(4).optional(),
    camera_trajectory: z.array(z.record(z.string(), z.unknown())).min(2).max(12).optional(),
  })
  .strict();

const refSchema = z
  .object({ model: z.string().min(1), queue_id: z.string().min(1), delete_media_on_completion: z.boolean().optional() })
  .strict();
const completeSchema = z.object({ model: z.string().min(1), queue_id: z.string().min(1) }).strict();

function videoModel(id: string): MediaModel {
  const model = findMediaModel(id, "video");
  if (!model) throw new EmulatorHttpError(404, { error: `Specified model not found: ${id}. See GET /models?type=video.` });
  return model;
}

/** The model's price for `duration` at `resolution` (its first when none), or the 400 saying what it supports. */
function priced(model: MediaModel, duration: string, resolution: string | undefined): { usd: number; seconds: number; resolution: string } {
  const v = model.video!;
  if (!v.durations.includes(duration)) {
    throw badRequest(`Duration ${duration} is not supported by ${model.id}`, {
      _errors: [],
      duration: { _errors: [`Supported durations: ${v.durations.join(", ")}`] },
    });
  }
  const res = resolution ?? v.resolutions[0]!;
  if (!v.resolutions.includes(res)) {
    throw badRequest(`Resolution ${res} is not supported by ${model.id}`, {
      _errors: [],
      resolution: { _errors: [`Supported resolutions: ${v.resolutions.join(", ")}`] },
    });
  }
  const seconds = Number(duration.replace(/s$/, ""));
  return { usd: Math.round(v.perSecondUsd[res]! * seconds * 1e6) / 1e6, seconds, resolution: res };
}

function mp4Of(ctx: EmulatorContext, prompt: string, seconds: number, aspect: string | undefined) {
  return () => ({
    bytes: videoFor(prompt, seconds, aspect),
    contentType: "video/mp4",
    headers: { [`${ctx.names.headerPrefix}video-duration`]: String(seconds) },
  });
}

export const videoRoutes = {
  quote: {
    auth: "required",
    handler(req) {
      const body = parseBody(req, quoteSchema);
      const model = videoModel(body.model);
      return { status: 200, body: { quote: priced(model, body.duration, body.resolution).usd } };
    },
  },
  queue: {
    auth: "required",
    inference: true,
    resolveModel: (req) => ({ model: videoModel(parseBody(req, queueSchema).model), bucket: "video" }),
    handler(req, ctx, caller) {
      const body = parseBody(req, queueSchema);
      const model = videoModel(body.model);
      const v = model.video!;
      if (!body.prompt?.trim() && !body.camera_trajectory)
        throw badRequest("prompt is required", { _errors: [], prompt: { _errors: ["Required for this model"] } });
      if (body.camera_trajectory && !body.image_url)
        throw badRequest("camera_trajectory requires image_url", {
          _errors: [],
          image_url: { _errors: ["Required with camera_trajectory"] },
        });
      if (v.modelType === "image-to-video" && !body.image_url)
        throw badRequest(`${model.id} is an image-to-video model: image_url is required`, {
          _errors: [],
          image_url: { _errors: ["Required"] },
        });
      if (body.aspect_ratio && v.aspectRatios.length && !v.aspectRatios.includes(body.aspect_ratio)) {
        throw badRequest(`Aspect ratio ${body.aspect_ratio} is not supported by ${model.id}`, {
          _errors: [],
          aspect_ratio: { _errors: [`Supported: ${v.aspectRatios.join(", ")}`] },
        });
      }
      const price = priced(model, body.duration, body.resolution);
      if (caller.kind === "anonymous") throw new EmulatorHttpError(401, { error: "Authentication failed" });
      if (fundsOf(ctx, caller.account) < price.usd) throw shortOfQuote(ctx, req, caller.account, price.usd);
      const job = jobStore(ctx).queue({
        kind: "video",
        model,
        account: caller.account,
        quoteUsd: price.usd,
        prompt: body.prompt ?? "",
        render: mp4Of(
          ctx,
          body.prompt ?? "a camera moving around its subject",
          price.seconds,
          body.aspect_ratio ?? (v.aspectRatios[0] || "16:9"),
        ),
      });
      const download = job.downloadToken ? { download_url: `${ctx.publicOrigin}/api/v1/video/download/${job.downloadToken}` } : {};
      return { status: 200, body: { model: model.id, queue_id: job.id, ...download }, meta: { modelId: model.id } };
    },
  },
  retrieve: {
    auth: "required",
    handler(req, ctx, caller) {
      const body = parseBody(req, refSchema);
      const store = jobStore(ctx);
      const job = store.find(body.queue_id, "video", body.model, caller);
      const state = store.advance(job);
      if (state === "processing") return { status: 200, body: store.processing(job) };
      if (state === "failed") return { status: job.failure!.status, body: job.failure!.body };
      if (job.downloadToken) return { status: 200, body: { status: "COMPLETED" } };
      const media = store.media(job);
      if (body.delete_media_on_completion) store.delete(job);
      return { status: 200, headers: { "content-type": media.contentType, ...media.headers }, body: media.bytes };
    },
  },
  complete: {
    auth: "required",
    handler(req, ctx, caller) {
      const body = parseBody(req, completeSchema);
      const store = jobStore(ctx);
      const job = store.find(body.queue_id, "video", body.model, caller);
      // live: no queue id from /video/queue is accepted here (the media is deleted by retrieve's delete_media_on_completion)
      if ((ctx.options.jobs?.videoComplete ?? (isLiveMode(ctx.options) ? "refuse" : "delete")) === "refuse") {
        throw badRequest("This queue_id cannot be completed: pass delete_media_on_completion to /video/retrieve instead", {
          _errors: [],
          queue_id: { _errors: ["Not a completable video id"] },
        });
      }
      store.delete(job);
      return { status: 200, body: { success: true } };
    },
  },
  download: {
    // the download URL of a privately hosted model's finished video (the token is the credential)
    auth: "public",
    handler(req, ctx) {
      const store = jobStore(ctx);
      const job = store.byToken(req.params.token ?? "");
      if (!job || store.advance(job) !== "done") throw new EmulatorHttpError(404, { error: "Not found" });
      const media = store.media(job);
      return { status: 200, headers: { "content-type": media.contentType }, body: media.bytes };
    },
  },
} satisfies Record<string, RouteSpec>;
