/**
 * Retries. What a 429 means decides what follows (refusals.ts):
 * - a rate limit waits once for the instant its headers name (the window that ran out: `x-ratelimit-reset-tokens`
 *   when only tokens did, else `x-ratelimit-reset-requests`; the crypto RPC proxy's `X-RateLimit-Reset`; `retry-after`;
 *   see `rateLimitResetAtMs` in headers.ts; one backoff step when it names none, or a past one)
 *   and is re-sent once: a second 429 is the answer, never a backoff series, since at the seed every 429 counts
 *   towards the service's abuse block;
 * - an overloaded model waits its `Retry-After` and is retried, each time one of `maxRetries`;
 * - "too many in flight" (a wallet's 6th request, crypto RPC's second at once) never ran: it waits a short,
 *   growing pause and is re-sent, outside `maxRetries`, for as long as the caller's deadline (its signal) allows,
 *   or `maxRateLimitWaitMs` in all when the call has none;
 * - an abuse block is the answer (a re-send within it is refused again).
 * 500/502/503 back off exponentially with jitter, a bounded number of times; so does a
 * 504 of a streaming request, while a 504 of any other request is final: the service timed it out, the same
 * request would time out again, and the error says to stream. 400/401/402 and other statuses are never retried
 * here (blind retries of client errors count towards the abuse block). Only the response headers decide; a
 * response handed back to the caller is never retried, so a stream already partly read is never re-sent.
 * A request broken on a kept-alive socket the server dropped before answering is re-sent once
 * (`droppedKeptAliveSocket`). Each of these rules is a named predicate of retry-rules.ts.
 *
 * Written here rather than on `p-retry` (7.x, a transitive dependency, not ours): it retries thrown errors, so
 * every answer would have to be thrown and rebuilt; its one exponential schedule (factor, `randomize` x1-2) has no
 * per-answer wait (a reset instant, a `Retry-After`, equal jitter), so each wait would be slept in
 * `onFailedAttempt` beside its own; a rate limit is waited once whatever `retries` says, and it ships as ESM only,
 * which our CJS build would `require`.
 */
import { AbuseBlockError, abortErrorOf } from "./errors.js";
import { classify429, tooManyKind } from "./refusals.js";
import {
  abuse429,
  droppedKeptAliveSocket,
  inFlight429,
  isOneShotBody,
  modelOffline503,
  overloaded429,
  serverError5xx,
} from "./retry-rules.js";
import { parseServiceHeaders, rateLimitResetAtMs, retryAfterMs } from "./headers.js";
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

export { RETRYABLE_STATUSES, asksForStream, isOneShotBody } from "./retry-rules.js";

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

/** The stack's retry defaults (also what a face that retries on its own, such as a stream's in-band errors, uses). */
export const DEFAULT_RETRY: Readonly<RetryOptions> = {
  maxRetries: 4,
  baseDelayMs: 250,
  maxDelayMs: 8_000,
  maxRateLimitWaitMs: 60_000,
  random: Math.random,
  sleep,
};

export function retryLayer(options: Partial<RetryOptions>, _brand: string): FetchLayer {
  const o: RetryOptions = { ...DEFAULT_RETRY, ...options };
  return (next) => async (input, init) => {
    if (o.maxRetries <= 0 || init?.service?.retry === false || isOneShotBody(init?.body)) return next(input, init);
    /** the last answer, read, for when a retry cannot be sent */
    let last: { status: number; statusText: string; headers: Headers; text: string } | undefined;
    /** a 429 was waited for already: the next one is the answer */
    let waitedForReset = false;
    /** "too many in flight" answers so far, and the time spent waiting after them */
    let inFlightRefusals = 0;
    let inFlightWaitedMs = 0;
    /** a request broken on a dropped kept-alive socket was re-sent already */
    let resentOnFreshSocket = false;
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
        // one that never reached the service (a kept-alive socket dropped under it): once more, not an attempt
        if (!resentOnFreshSocket && !init?.signal?.aborted && droppedKeptAliveSocket(err)) {
          resentOnFreshSocket = true;
          attempt--;
          continue;
        }
        // An abort is final; other transport errors are not retried either, since the request may have reached
        // the service (at-most-once for paid calls).
        throw err;
      }
      const status = response.status;
      if (status === 429) {
        // the (small) body says what the 429 means; read once, it also frees the connection before any wait
        const marked = tooManyKind(response);
        const text = await response.text().catch(() => "");
        last = { status, statusText: response.statusText, headers: response.headers, text };
        const answer = () => new Response(text, last);
        const kind = marked ?? classify429(text);
        let waitMs: number;
        if (abuse429(kind)) return answer();
        if (inFlight429(kind)) {
          // never ran: not an attempt. A short pause that grows (a place frees when another request ends)
          waitMs = backoffDelay(Math.min(inFlightRefusals++, 5), { ...o, baseDelayMs: Math.min(o.baseDelayMs, 100) });
          if (!init?.signal && inFlightWaitedMs + waitMs > o.maxRateLimitWaitMs) return answer();
          inFlightWaitedMs += waitMs;
          attempt--;
        } else if (attempt >= o.maxRetries) {
          return answer();
        } else if (overloaded429(kind)) {
          // the service says how long (Retry-After, its default 30 s); each wait is one of the retries
          const after = retryAfterMs(response.headers.get("retry-after"));
          waitMs = after ?? backoffDelay(attempt, o);
          if (waitMs > o.maxRateLimitWaitMs) return answer();
        } else {
          // rateLimited429: waited for once
          if (waitedForReset) return answer();
          waitedForReset = true;
          const reset = rateLimitWaitMs(response.headers);
          if (reset !== undefined && reset > o.maxRateLimitWaitMs) return answer();
          // no reset, or one already past (clock skew, a stale header): one backoff step rather than at once
          waitMs = reset || backoffDelay(attempt, o);
        }
        // A small jitter spreads callers that all wait for the same instant.
        waitMs += o.random() * Math.min(250, o.baseDelayMs);
        try {
          await o.sleep(waitMs, init?.signal);
        } catch (err) {
          throw init?.signal?.aborted ? abortErrorOf(init.signal.reason) : err;
        }
        continue;
      }
      if (attempt >= o.maxRetries) return response;
      if (!serverError5xx(status, init?.body)) return response;
      const waitMs = backoffDelay(attempt, o);
      // Read the (small) error body, which frees the connection before waiting and keeps the answer.
      const text = await response.text().catch(() => "");
      last = { status, statusText: response.statusText, headers: response.headers, text };
      // an offline model stays offline for longer than a backoff series: its 503 is the answer
      if (modelOffline503(status, text)) return new Response(text, last);
      try {
        await o.sleep(waitMs, init?.signal);
      } catch (err) {
        throw init?.signal?.aborted ? abortErrorOf(init.signal.reason) : err;
      }
    }
  };
}

export { AbuseBlockError };
