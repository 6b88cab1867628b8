/**
 * Rate-limit pacing from the `x-ratelimit-*` headers (read by headers.ts), one limiter per caller and model, so
 * bursts wait for the window instead of drawing 429s (pacing.ts); or a caller's own pacing layer.
 */
import { checkGroup, checkMs, checkTypeLimits, delay } from "../options.js";
import { checkRouteLimits } from "../route-limits.js";
import { pacingLayer, type PacingOptions } from "../pacing.js";
import type { FetchLayer } from "../types.js";
import type { LayerContext } from "./context.js";

export interface PacingLayerOptions {
  /** `false` turns pacing off */
  pacing?: Partial<PacingOptions> | false;
  /** a custom pacing layer (replaces the default) */
  pacingLayer?: FetchLayer;
}

/** undefined: pacing is off */
export function pacing(options: PacingLayerOptions, ctx: LayerContext): FetchLayer | undefined {
  checkGroup(
    options.pacing,
    "pacing",
    {
      resetMarginMs: delay,
      maxHoldMs: delay,
      typeLimits: checkTypeLimits,
      typeWindowMs: (v, p) => checkMs(v, p, true),
      routeLimits: checkRouteLimits,
      routeWindowMs: (v, p) => checkMs(v, p, true),
    },
    true,
  );
  if (options.pacingLayer) return options.pacingLayer;
  if (options.pacing === false) return undefined;
  const shared = ctx.limitStore && { store: ctx.limitStore, label: ctx.brand };
  return pacingLayer(`${ctx.baseUrl}|${ctx.identity}`, options.pacing || {}, shared, ctx.service);
}
