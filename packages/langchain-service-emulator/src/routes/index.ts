/** Every route the emulator serves, one module per area of the API; x402's come from its hooks. */
import type { Route, X402Hooks } from "../types.js";
import { audioRoutes } from "./audio.js";
import { augmentRoutes } from "./augment.js";
import { chatRoutes } from "./chat.js";
import { cryptoRpcRoutes } from "./crypto-rpc.js";
import { embeddingRoutes } from "./embeddings.js";
import { imageRoutes } from "./images.js";
import { modelRoutes } from "./models.js";
import { networkRoutes } from "./networks.js";
import { rateLimitRoutes } from "./rate-limits.js";
import { transcriptionRoutes } from "./transcription.js";
import { videoRoutes } from "./video.js";
import { audioJobRoutes } from "./audio-jobs.js";
import { imageEditRoutes } from "./image-edit.js";
import { characterRoutes } from "./characters.js";
import { billingRoutes } from "./billing.js";

export function collectRoutes(x402: X402Hooks): Route[] {
  return [
    ...modelRoutes,
    ...rateLimitRoutes,
    ...networkRoutes,
    ...chatRoutes,
    ...cryptoRpcRoutes,
    ...embeddingRoutes,
    ...imageRoutes,
    ...audioRoutes,
    ...transcriptionRoutes,
    ...audioJobRoutes,
    ...videoRoutes,
    ...imageEditRoutes,
    ...augmentRoutes,
    ...characterRoutes,
    ...billingRoutes,
    ...x402.routes,
  ];
}
