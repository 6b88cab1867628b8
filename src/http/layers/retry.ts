/**
 * The one retry loop of the stack (retry.ts), with its options checked here. What is re-sent is decided by the
 * named rules of retry-rules.ts.
 */
import { checkCount, checkGroup, delay, fn } from "../options.js";
import { retryLayer, type RetryOptions } from "../retry.js";
import type { FetchLayer } from "../types.js";
import type { LayerContext } from "./context.js";

export interface RetryLayerOptions {
  /** retry policy; `false` or `{ maxRetries: 0 }` turns retries off */
  retry?: Partial<RetryOptions> | false;
}

/** Checks `retry` (a ConfigurationError naming the member). */
export function checkRetryOptions(retry: unknown): void {
  checkGroup(
    retry,
    "retry",
    { maxRetries: (v, p) => checkCount(v, p), baseDelayMs: delay, maxDelayMs: delay, maxRateLimitWaitMs: delay, random: fn, sleep: fn },
    true,
  );
}

/** undefined: retries are off */
export function retry(options: RetryLayerOptions, ctx: Pick<LayerContext, "brand">): FetchLayer | undefined {
  checkRetryOptions(options.retry);
  return options.retry === false ? undefined : retryLayer(options.retry ?? {}, ctx.brand);
}
