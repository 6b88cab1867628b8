/**
 * Retries. A 429 waits once for the instant its headers name (the latest of `x-ratelimit-reset-requests`, the
 * crypto RPC proxy's `X-RateLimit-Reset` and `retry-after`; one backoff step when it names none, or a past one)
 * and is re-sent once: a second 429 is the answer, never a backoff series, since every 429 counts towards the
 * service's abuse block. 500/502/503 back off exponentially with jitter, a bounded number of times; so does a
 * 504 of a streaming request, while a 504 of any other request is final: the service timed it out, the same
 * request would time out again, and the error says to stream. 400/401/402 and other statuses are never retried
 * here (blind retries of client errors count towards the abuse block). Only the response headers decide; a
 * response handed back to the caller is never retried, so a stream already partly read is never re-sent.
 */
import { AbuseBlockError, abortErrorOf } from "./errors.js";
import { parseServiceHeaders, rateLimitResetAtMs } from "./headers.js";
import type { FetchLayer } from "./types.js";

export interface RetryOptions {
  /** retries after the first attempt (default 4) */
  maxRetries: number;
  /** first backoff step in ms (default 250) */
  baseDelayMs: number;
  /** ceiling of one backoff step in ms (default 8000) */
  maxDelayMs: number;
  /** longest wait for a 429 reset (waited once); a later reset surfaces the RateLimitError (default 60000) */
  maxRateLimitWaitMs: number;
  /** injectable for tests */
  random: () => number;
  sleep: (ms: number, signal?: AbortSignal | null) => Promise<void>;
}

/**
 * Waits `ms`; rejects with the signal's reason as soon as it aborts. `wakers`: a list to push a wake-up
 * callback on (ends the wait early).
 */
export function sleep(ms: number, signal?: AbortSignal | null, wakers?: (() => void)[]): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    wakers?.push(done);
  });
}

/** statuses re-sent with backoff (504 only for a streaming request: see `asksForStream`) */
export const RETRYABLE_STATUSES = new Set([500, 502, 503]);

/** Exponential backoff with "equal jitter": half fixed, half random, so steps never collapse to zero. */
export function backoffDelay(attempt: number, o: Pick<RetryOptions, "baseDelayMs" | "maxDelayMs" | "random">): number {
  const step = Math.min(o.maxDelayMs, o.baseDelayMs * 2 ** attempt);
  return step / 2 + o.random() * (step / 2);
}

/** Milliseconds to wait after a 429: until the latest instant its headers name; undefined when none. */
export function rateLimitWaitMs(headers: Headers, now = Date.now()): number | undefined {
  const at = rateLimitResetAtMs(parseServiceHeaders(headers, undefined, now), now);
  return at === undefined ? undefined : Math.max(0, at - now);
}

/**
 * Whether a request body asks for a stream (`"stream": true` in a JSON body, as a string or bytes). A 504 on
 * such a request may be re-sent; on any other it is final ("the request took too long; use stream=true").
 */
export function asksForStream(body: unknown): boolean {
  let text: string | undefined;
  if (typeof body === "string") text = body;
  else if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) text = new TextDecoder().decode(body);
  if (!text?.includes('"stream"')) return false;
  try {
    const json: unknown = JSON.parse(text);
    return typeof json === "object" && json !== null && (json as { stream?: unknown }).stream === true;
  } catch {
    return false;
  }
}

/** A body that can be sent only once (a stream, an async iterable): never re-sent blindly. */
export function isOneShotBody(body: unknown): boolean {
  return (
    body !== null &&
    typeof body === "object" &&
    (typeof (body as ReadableStream).getReader === "function" || Symbol.asyncIterator in body)
  );
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
    if (o.maxRetries <= 0 || init?.service?.retry === false || isOneShotBody(init?.body)) return next(input, init);
    /** the last answer, read, for when a retry cannot be sent */
    let last: { status: number; statusText: string; headers: Headers; text: string } | undefined;
    /** a 429 was waited for already: the next one is the answer */
    let waitedForReset = false;
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await next(input, init);
      } catch (err) {
        // A client-side refusal (abuse guard) of a retry: the request's outcome is the failure it already
        // got (with its status and request id), not the refusal of an optional re-send.
        if (last && err instanceof AbuseBlockError && err.source === "client") {
          return new Response(last.text, { status: last.status, statusText: last.statusText, headers: last.headers });
        }
        // An abort is final; transport errors are not retried either, since the request may have reached
        // the service (at-most-once for paid calls).
        throw err;
      }
      const status = response.status;
      if (attempt >= o.maxRetries) return response;
      let waitMs: number | undefined;
      if (status === 429) {
        if (waitedForReset) return response;
        waitedForReset = true;
        waitMs = rateLimitWaitMs(response.headers);
        if (waitMs !== undefined && waitMs > o.maxRateLimitWaitMs) return response;
        // no reset, or one already past (clock skew, a stale header): one backoff step rather than at once
        if (!waitMs) waitMs = backoffDelay(attempt, o);
        // A small jitter spreads callers that all wait for the same reset instant.
        waitMs += o.random() * Math.min(250, o.baseDelayMs);
      } else if (RETRYABLE_STATUSES.has(status) || (status === 504 && asksForStream(init?.body))) {
        waitMs = backoffDelay(attempt, o);
      } else {
        return response;
      }
      // Read the (small) error body, which frees the connection before waiting and keeps the answer.
      const text = await response.text().catch(() => "");
      last = { status, statusText: response.statusText, headers: response.headers, text };
      // the service's abuse block lasts 30 s: a re-send within it is refused again
      if (status === 429 && text.includes(ABUSE_BLOCK_MARK)) return new Response(text, last);
      try {
        await o.sleep(waitMs, init?.signal);
      } catch (err) {
        throw init?.signal?.aborted ? abortErrorOf(init.signal.reason) : err;
      }
    }
  };
}

const ABUSE_BLOCK_MARK = "Too many failed attempts";

export { AbuseBlockError };
