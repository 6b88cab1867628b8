/**
 * Rate-limit pacing: holds requests so that a burst never draws a 429. One limiter per (service, caller,
 * model), shared by every client object in the process. It learns the window from the `x-ratelimit-*`
 * headers (limit, remaining, reset), reserves a request (and the request's estimated tokens) before each
 * send, and when the window is used up waits until its reset instead of sending into a 429.
 *
 * Until the first answer tells the limits, one request goes alone to learn them (a burst starts with one
 * round trip of latency, then runs at the full allowed rate).
 */
import type { FetchLayer } from "./fetch-stack.js";
import { abortErrorOf } from "./errors.js";
import { resetRequestsAtMs, toNumber } from "./headers.js";
import { retryAfterMs, sleep } from "./retry.js";

export interface PacingOptions {
  /** extra ms to wait past a reset instant, for clock granularity (default 50) */
  resetMarginMs: number;
  /** the longest a request is held before it is sent anyway (default 120000) */
  maxHoldMs: number;
}

/** the longest a 429 pauses a limiter (the retry layer's default `maxRateLimitWaitMs`) */
const MAX_PAUSE_MS = 60_000;

interface Window {
  limit: number;
  remaining: number;
  /** ms since epoch */
  resetAt: number;
}

export class RateLimiter {
  #requests?: Window;
  #tokens?: Window;
  #inFlight = 0;
  #inFlightTokens = 0;
  #probing = false;
  /** the service sent no rate-limit headers: nothing to pace on */
  #unmetered = false;
  #waiters: (() => void)[] = [];
  /** a 429 came back anyway: hold every send until this instant (ms since epoch) */
  #pausedUntil = 0;
  constructor(readonly options: PacingOptions) {}

  /** ms until one more request (with `tokens`) fits, or 0 */
  #waitFor(tokens: number, now: number): number {
    if (now < this.#pausedUntil) return this.#pausedUntil - now;
    const r = this.#requests;
    if (!r) return this.#probing && !this.#unmetered ? -1 : 0; // -1: wait for the probe's answer
    if (now >= r.resetAt) {
      r.remaining = r.limit;
      r.resetAt = Number.POSITIVE_INFINITY; // unknown until the next answer
    }
    let wait = 0;
    if (r.remaining - this.#inFlight <= 0) {
      wait = Number.isFinite(r.resetAt) ? r.resetAt - now + this.options.resetMarginMs : -1;
    }
    const t = this.#tokens;
    if (t && tokens > 0) {
      if (now >= t.resetAt) {
        t.remaining = t.limit;
        t.resetAt = Number.POSITIVE_INFINITY;
      }
      // a request larger than a whole window can never fit: send it rather than hold it forever
      if (t.remaining - this.#inFlightTokens < tokens && tokens <= t.limit) {
        const w = Number.isFinite(t.resetAt) ? t.resetAt - now + this.options.resetMarginMs : -1;
        wait = w < 0 || wait < 0 ? -1 : Math.max(wait, w);
      }
    }
    return wait;
  }

  async acquire(tokens: number, signal?: AbortSignal | null): Promise<void> {
    const started = Date.now();
    for (;;) {
      const now = Date.now();
      const wait = this.#waitFor(tokens, now);
      if (wait === 0 || now - started > this.options.maxHoldMs) break;
      try {
        if (wait < 0) {
          // wait for an answer in flight to tell more (or 250 ms, or the caller's abort)
          await sleep(250, signal, this.#waiters);
        } else {
          await sleep(Math.min(wait, this.options.maxHoldMs), signal);
        }
      } catch (err) {
        throw signal?.aborted ? abortErrorOf(signal.reason) : err;
      }
    }
    if (!this.#requests && !this.#unmetered) this.#probing = true;
    this.#inFlight++;
    this.#inFlightTokens += tokens;
  }

  /** Reads the answer's headers (and status); frees the reservation. */
  release(tokens: number, headers: Headers | undefined, now = Date.now(), status?: number) {
    this.#inFlight--;
    this.#inFlightTokens -= tokens;
    this.#probing = false;
    if (status === 429 && headers) {
      // The window was used up after all (another process on the same key, a limit the headers did not
      // tell): hold every send until the reset the answer names, else for a second.
      const reset = toNumber(headers.get("x-ratelimit-reset-requests"));
      const resetAt = reset === undefined ? undefined : resetRequestsAtMs(reset, now);
      const after = retryAfterMs(headers.get("retry-after"), now);
      const until =
        after !== undefined ? now + after : resetAt !== undefined && resetAt > now ? resetAt : now + 1000;
      // a far reset (a daily limit): holding would only delay the same answer; let sends fail fast instead
      if (until - now <= MAX_PAUSE_MS) this.#pausedUntil = Math.max(this.#pausedUntil, until);
    }
    if (headers) {
      const limit = toNumber(headers.get("x-ratelimit-limit-requests"));
      const remaining = toNumber(headers.get("x-ratelimit-remaining-requests"));
      const reset = toNumber(headers.get("x-ratelimit-reset-requests"));
      if (limit === undefined && !this.#requests) this.#unmetered = true;
      if (limit !== undefined && remaining !== undefined && reset !== undefined) {
        this.#unmetered = false;
        const resetAt = resetRequestsAtMs(reset, now);
        const r = this.#requests;
        // Answers arrive out of order: within one window keep the lowest remaining seen.
        if (!r || resetAt > r.resetAt || !Number.isFinite(r.resetAt)) {
          this.#requests = { limit, remaining, resetAt };
        } else if (resetAt === r.resetAt) {
          r.remaining = Math.min(r.remaining, remaining);
        }
      }
      const tLimit = toNumber(headers.get("x-ratelimit-limit-tokens"));
      const tRemaining = toNumber(headers.get("x-ratelimit-remaining-tokens"));
      const tReset = toNumber(headers.get("x-ratelimit-reset-tokens"));
      if (tLimit !== undefined && tRemaining !== undefined && tReset !== undefined) {
        // `reset-tokens` is whole seconds from now (up to 1 s late); when the request window's exact Unix
        // reset falls within that second, it is the same window: take the exact instant.
        let resetAt = now + tReset * 1000;
        const requestsReset = this.#requests?.resetAt;
        if (requestsReset !== undefined && Number.isFinite(requestsReset) && resetAt - requestsReset >= 0 && resetAt - requestsReset <= 1000) {
          resetAt = requestsReset;
        }
        const t = this.#tokens;
        if (!t || !Number.isFinite(t.resetAt) || resetAt > t.resetAt + 1000) this.#tokens = { limit: tLimit, remaining: tRemaining, resetAt };
        else t.remaining = Math.min(t.remaining, tRemaining);
      }
    }
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}

const limiters = new Map<string, RateLimiter>();

/** The pacing layer for one caller of one service. Requests carry the model in `init.service.model`. */
export function pacingLayer(scope: string, options: Partial<PacingOptions> = {}): FetchLayer {
  const o: PacingOptions = { resetMarginMs: 20, maxHoldMs: 120_000, ...options };
  return (next) => async (input, init) => {
    if (init?.service?.auth === false) return next(input, init); // public endpoints are not metered per caller
    const key = `${scope}|${init?.service?.model ?? "*"}`;
    let limiter = limiters.get(key);
    if (!limiter) limiters.set(key, (limiter = new RateLimiter(o)));
    const tokens = init?.service?.estimatedTokens ?? 0;
    await limiter.acquire(tokens, init?.signal);
    let response: Response | undefined;
    try {
      response = await next(input, init);
      return response;
    } finally {
      limiter.release(tokens, response?.headers, Date.now(), response?.status);
    }
  };
}
