/**
 * Every built-in route, in the order of the API and the order the router tries them (a fixed path before a
 * parameter in the same place): its method and path here, its answer in the area's module. x402's routes come
 * from its hooks, mounted after these (../app.ts), then the `routes` option's.
 */
import type { RouteSpec } from "../types.js";
import { audioJobRoutes } from "./audio-jobs.js";
import { audioRoutes } from "./audio.js";
import { augmentRoutes } from "./augment.js";
import { billingRoutes } from "./billing.js";
import { characterRoutes } from "./characters.js";
import { chatRoutes } from "./chat.js";
import { cryptoRpcRoutes } from "./crypto-rpc.js";
import { embeddingRoutes } from "./embeddings.js";
import { imageEditRoutes } from "./image-edit.js";
import { imageRoutes } from "./images.js";
import { modelRoutes } from "./models.js";
import { networkRoutes } from "./networks.js";
import { rateLimitRoutes } from "./rate-limits.js";
import { transcriptionRoutes } from "./transcription.js";
import { videoRoutes } from "./video.js";

/** Mounts a route under /api/v1 by method. */
export interface RouteMount {
  get(path: string, spec: RouteSpec): void;
  post(path: string, spec: RouteSpec): void;
}

export function mountApiRoutes({ get, post }: RouteMount): void {
  get("/models/traits", modelRoutes.traits);
  get("/models/compatibility_mapping", modelRoutes.compatibilityMapping);
  get("/models", modelRoutes.list);
  get("/models/:id", modelRoutes.one);
  get("/api_keys/rate_limits", rateLimitRoutes.rateLimits);
  get("/api_keys/rate_limit_logs", rateLimitRoutes.rateLimitLogs);
  get("/api_keys/rate_limits/log", rateLimitRoutes.rateLimitLog);
  get("/crypto/rpc/networks", networkRoutes.networks);
  post("/chat/completions", chatRoutes.completions);
  post("/crypto/rpc/:network", cryptoRpcRoutes.proxy);
  post("/embeddings", embeddingRoutes.embeddings);
  post("/image/generate", imageRoutes.generate);
  post("/images/generations", imageRoutes.generations);
  post("/audio/speech", audioRoutes.speech);
  post("/audio/voices", audioRoutes.voices);
  post("/audio/transcriptions", transcriptionRoutes.transcriptions);
  post("/audio/quote", audioJobRoutes.quote);
  post("/audio/queue", audioJobRoutes.queue);
  post("/audio/retrieve", audioJobRoutes.retrieve);
  post("/audio/complete", audioJobRoutes.complete);
  post("/video/quote", videoRoutes.quote);
  post("/video/queue", videoRoutes.queue);
  post("/video/retrieve", videoRoutes.retrieve);
  post("/video/complete", videoRoutes.complete);
  get("/video/download/:token", videoRoutes.download);
  post("/image/edit", imageEditRoutes.edit);
  post("/image/multi-edit", imageEditRoutes.multiEdit);
  post("/image/upscale", imageEditRoutes.upscale);
  post("/image/background-remove", imageEditRoutes.backgroundRemove);
  post("/augment/search", augmentRoutes.search);
  post("/augment/scrape", augmentRoutes.scrape);
  get("/characters", characterRoutes.list);
  get("/characters/:slug", characterRoutes.one);
  get("/billing/usage-history", billingRoutes.usageHistory);
  get("/billing/usage", billingRoutes.usage);
}
