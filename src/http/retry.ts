/**
 * Retries: a 429 waits until `x-ratelimit-reset-requests` (bounded), 500/502/503/504 back off exponentially
 * with jitter, a bounded number of times. 400/401/402 and other statuses are never retried here (blind
 * retries of client errors count towards the service's abuse block). Only the response headers decide; a
 * response handed back to the caller is never retried, so a stream already partly read is never re-sent.
 */
import { AbuseBlockError } from "./errors.js";
import { toNumber } from "./headers.js";
import type { FetchLayer } from "./fetch-stack.js";

export interface RetryOptions {
  /** retries after the first attempt (default 4) */
  maxRetries: number;
  /** first backoff step in ms (default 250) */
  baseDelayMs: number;
  /** ceiling of one backoff step in ms (default 8000) */
  maxDelayMs: number;
  /** longest wait for a 429 reset; a later reset surfaces the RateLimitError (default 60000) */
  maxRateLimitWaitMs: number;
  /** injectable for tests */
  random: () => number;
  sleep: (ms: number, signal?: AbortSignal | null) => Promise<void>;
}

export function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

export const RETRYABLE_STATUSES = new Set([500, 502, 503, 504]);

/** Exponential backoff with "equal jitter": half fixed, half random, so steps never collapse to zero. */
export function backoffDelay(attempt: number, o: Pick<RetryOptions, "baseDelayMs" | "maxDelayMs" | "random">): number {
  const step = Math.min(o.maxDelayMs, o.baseDelayMs * 2 ** attempt);
  return step / 2 + o.random() * (step / 2);
}

/** Milliseconds to wait after a 429, from the reset header; undefined when absent. */
export function rateLimitWaitMs(headers: Headers, now = Date.now()): number | undefined {
  const reset = toNumber(headers.get("x-ratelimit-reset-requests"));
  if (reset === undefined) {
    const retryAfter = toNumber(headers.get("retry-after"));
    return retryAfter === undefined ? undefined : retryAfter * 1000;
  }
  // The header is a Unix timestamp in seconds; tolerate a server that sends milliseconds.
  const resetMs = reset > 1e12 ? reset : reset * 1000;
  return Math.max(0, resetMs - now);
}

export function retryLayer(options: Partial<RetryOptions>, _brand: string): FetchLayer {
  const o: RetryOptions = {
    maxRetries: 4,
    baseDelayMs: 250,
    maxDelayMs: 8_000,
    maxRateLimitWaitMs: 60_000,
    random: Math.random,
    sleep,
    ...options,
  };
  return (next) => async (input, init) => {
    if (o.maxRetries <= 0 || init?.service?.retry === false) return next(input, init);
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await next(input, init);
      } catch (err) {
        // A client-side refusal (abuse guard) or an abort is final; transport errors are not retried
        // either, since the request may have reached the service (at-most-once for paid calls).
        throw err;
      }
      const status = response.status;
      if (attempt >= o.maxRetries) return response;
      let waitMs: number | undefined;
      if (status === 429) {
        waitMs = rateLimitWaitMs(response.headers) ?? backoffDelay(attempt, o);
        if (waitMs > o.maxRateLimitWaitMs) return response;
        // A small jitter spreads callers that all wait for the same reset instant.
        waitMs += o.random() * Math.min(250, o.baseDelayMs);
      } else if (RETRYABLE_STATUSES.has(status)) {
        waitMs = backoffDelay(attempt, o);
      } else {
        return response;
      }
      // Free the connection before waiting.
      await response.body?.cancel().catch(() => {});
      await o.sleep(waitMs, init?.signal);
    }
  };
}

export { AbuseBlockError };
