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
    ...augmentRoutes,
    ...x402.routes,
  ];
}
