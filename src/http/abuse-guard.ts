/**
 * Client-side guard against the service's abuse block: more than `maxFailures` (20) non-success answers
 * within `windowMs` (30 s) block the caller for 30 s. The guard counts failures in a sliding window and,
 * before each send, makes sure that one more failure (counting attempts already in flight) could not trip
 * the block: it waits while sends in flight may still fail, and for the window to free up when that wait is
 * short enough (`maxWaitMs`), else it refuses to send with an `AbuseBlockError` (source "client").
 */
import { AbuseBlockError, ConfigurationError, abortErrorOf } from "./errors.js";
import type { FetchLayer } from "./fetch-stack.js";
import { sleep } from "./retry.js";

export interface AbuseGuardOptions {
  /** the service blocks after MORE than this many failures in the window (default 20) */
  maxFailures: number;
  /** the sliding window in ms (default 30000) */
  windowMs: number;
  /** how long a send may wait for room before it is refused (default 0: refuse at once) */
  maxWaitMs: number;
}

export const DEFAULT_ABUSE_GUARD: AbuseGuardOptions = { maxFailures: 20, windowMs: 30_000, maxWaitMs: 0 };

export class AbuseGuard {
  readonly options: AbuseGuardOptions;
  /** timestamps (ms) of recent failures, oldest first */
  #failures: number[] = [];
  #inFlight = 0;

  constructor(options: Partial<AbuseGuardOptions> = {}) {
    this.options = { ...DEFAULT_ABUSE_GUARD, ...options };
    const { maxFailures, windowMs, maxWaitMs } = this.options;
    if (!(Number.isInteger(maxFailures) && maxFailures > 0)) throw new ConfigurationError("abuseGuard.maxFailures must be a positive integer");
    if (!(Number.isFinite(windowMs) && windowMs > 0)) throw new ConfigurationError("abuseGuard.windowMs must be a positive number of ms");
    if (!(Number.isFinite(maxWaitMs) && maxWaitMs >= 0)) throw new ConfigurationError("abuseGuard.maxWaitMs must be a non-negative number of ms");
  }

  /**
   * One guard is shared by every stack of one credential on one service, since the service counts failures per
   * caller. When stacks ask for different limits the strictest holds (fewest failures, longest window);
   * `maxWaitMs` stays each stack's own. Returns whether `options` differ from the limits now in force.
   */
  tighten(options: Partial<AbuseGuardOptions>): boolean {
    const maxFailures = options.maxFailures ?? DEFAULT_ABUSE_GUARD.maxFailures;
    const windowMs = options.windowMs ?? DEFAULT_ABUSE_GUARD.windowMs;
    const differs = maxFailures !== this.options.maxFailures || windowMs !== this.options.windowMs;
    this.options.maxFailures = Math.min(this.options.maxFailures, maxFailures);
    this.options.windowMs = Math.max(this.options.windowMs, windowMs);
    return differs;
  }

  #prune(now: number) {
    const cutoff = now - this.options.windowMs;
    let i = 0;
    while (i < this.#failures.length && this.#failures[i]! <= cutoff) i++;
    if (i) this.#failures.splice(0, i);
  }

  /** failures counted in the current window */
  failureCount(now = Date.now()): number {
    this.#prune(now);
    return this.#failures.length;
  }

  recordFailure(now = Date.now()) {
    this.#failures.push(now);
  }

  /** Until when the failures this guard counts still count at the service (the newest one's window end), or 0. */
  rememberUntil(now = Date.now()): number {
    const newest = this.#failures[this.#failures.length - 1];
    return newest !== undefined && newest + this.options.windowMs > now ? newest + this.options.windowMs : 0;
  }

  /**
   * ms to wait before one more send is safe, or 0. A send is safe while the failures in the window plus the
   * sends in flight (each may still fail: a sudden outage fails them all) stay below `maxFailures` + 1, so
   * even if every one of them fails the service does not block. Sends in flight free their place when their
   * answer's headers arrive, so this caps a caller at `maxFailures` requests awaiting an answer.
   */
  waitNeeded(now = Date.now()): number {
    this.#prune(now);
    const failures = this.#failures.length;
    if (failures + this.#inFlight < this.options.maxFailures) return 0;
    if (failures < this.options.maxFailures) return 25; // room frees when a send in flight ends
    // the failure that must age out for one more send to be safe
    const freeing = this.#failures[failures - this.options.maxFailures]!;
    return Math.max(1, freeing + this.options.windowMs - now + 1);
  }

  /** Waits until one more send is safe; `maxWaitMs` overrides the guard's own for this send. */
  async acquire(signal?: AbortSignal | null, maxWaitMs = this.options.maxWaitMs): Promise<void> {
    const started = Date.now();
    for (;;) {
      const now = Date.now();
      const wait = this.waitNeeded(now);
      if (wait === 0) {
        this.#inFlight++;
        return;
      }
      const blocked = this.failureCount(now) >= this.options.maxFailures;
      if (blocked && now - started + wait > maxWaitMs) {
        throw new AbuseBlockError(
          `refused to send: ${this.failureCount(now)} failed requests in the last ${this.options.windowMs / 1000}s; ` +
            `one more could trip the service's abuse block (more than ${this.options.maxFailures}). Retry in ${Math.ceil(wait / 1000)}s.`,
          { source: "client", retryAfterMs: wait },
        );
      }
      try {
        await sleep(Math.min(wait, 250), signal);
      } catch (err) {
        throw signal?.aborted ? abortErrorOf(signal.reason) : err;
      }
    }
  }

  release(failed: boolean) {
    this.#inFlight--;
    if (failed) this.recordFailure();
  }
}

/** `onSettled` runs after each send's outcome is counted (the stack uses it to keep a shared guard while it matters). */
export function abuseGuardLayer(guard: AbuseGuard, maxWaitMs?: number, onSettled?: (guard: AbuseGuard) => void): FetchLayer {
  return (next) => async (input, init) => {
    await guard.acquire(init?.signal, maxWaitMs);
    let failed = true;
    try {
      const response = await next(input, init);
      failed = !response.ok;
      return response;
    } finally {
      guard.release(failed);
      onSettled?.(guard);
    }
  };
}
