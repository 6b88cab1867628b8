/**
 * Client-side guard against the service's abuse block: more than `maxFailures` (20) non-success answers
 * within `windowMs` (30 s) block the caller for 30 s. The guard counts failures in a sliding window and,
 * before each send, makes sure that one more failure (counting attempts already in flight) could not trip
 * the block: it waits while sends in flight may still fail, and for the window to free up when that wait is
 * short enough (`maxWaitMs`), else it refuses to send with an `AbuseBlockError` (source "client").
 *
 * The live service tells its own count on every credentialed answer: an error budget (`x-ratelimit-remaining`
 * failures left until `x-ratelimit-resets`, for 50 non-429 4xx per 30 s). It only ever tightens the guard: while
 * it is in force, no more sends are in flight than failures it has left (other clients of the same key or IP may
 * be spending it too), on top of the guard's own threshold, which it never loosens. A "too many in flight" 429 (a
 * wallet's 6th request, crypto RPC's second at once) never ran, and is not counted as a failure. A service that
 * tells that budget counts only non-429 4xx toward it (5xx never count), so once one has, the guard counts those
 * alone: an outage's 5xx (or a connection lost) no longer stop a caller the service would keep serving.
 *
 * The service counts per caller, so with a fleet store (`store: RedisStore`) the failures and the sends in flight
 * are counted in the store, for every process on the credential: one process's failures hold back the others
 * before the service's block (each send takes an in-flight place atomically, a failure is recorded for all). The
 * in-process guard still records every failure, and takes over while the store fails (see shared-limits.ts).
 */
import { AbuseBlockError, ConfigurationError, abortErrorOf } from "./errors.js";
import type { FetchLayer } from "./types.js";
import { sleep } from "./retry.js";
import { randomId, viaStore, type LimitStore } from "./shared-limits.js";
import { countsAsFailure } from "./refusals.js";
import { errorBudgetOf } from "./headers.js";

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
  /** the service's error budget as last told: failures left, until when (ms since epoch) */
  #budget?: { remaining: number; resetsAtMs: number };
  /** the service told an error budget: it counts non-429 4xx only (the live rule), not every non-success answer */
  #clientErrorsOnly = false;

  constructor(options: Partial<AbuseGuardOptions> = {}) {
    this.options = { ...DEFAULT_ABUSE_GUARD, ...options };
    const { maxFailures, windowMs, maxWaitMs } = this.options;
    if (!(Number.isInteger(maxFailures) && maxFailures > 0))
      throw new ConfigurationError("abuseGuard.maxFailures must be a positive integer");
    if (!(Number.isFinite(windowMs) && windowMs > 0)) throw new ConfigurationError("abuseGuard.windowMs must be a positive number of ms");
    if (!(Number.isFinite(maxWaitMs) && maxWaitMs >= 0))
      throw new ConfigurationError("abuseGuard.maxWaitMs must be a non-negative number of ms");
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
    if (this.#budget) this.#budget.remaining = Math.max(0, this.#budget.remaining - 1);
  }

  /**
   * Takes the error budget an answer told (`x-ratelimit-remaining` / `-resets`). When that answer is itself a
   * failure, its `recordFailure` counts it once more: the told figure may not include it yet (the safe side).
   */
  observeBudget(budget: { remaining: number; resetsAtMs: number } | undefined, now = Date.now()): void {
    if (!budget) return;
    this.#clientErrorsOnly = true;
    if (!(budget.resetsAtMs > now)) return;
    this.#budget = { remaining: Math.max(0, budget.remaining), resetsAtMs: budget.resetsAtMs };
  }

  /**
   * Whether an outcome counts toward the block (`response` undefined: the send threw, no answer). Every non-success
   * answer but "too many in flight" does, and a send that got none, until the service has told an error budget;
   * from then on only a 4xx other than 429 and 413, as the service counts.
   */
  counts(response: Response | undefined): boolean {
    if (!this.#clientErrorsOnly) return response === undefined || countsAsFailure(response);
    // (a 413 is refused before the service counts anything: its errors guide leaves it out of the budget)
    const status = response?.status ?? 0;
    return status >= 400 && status < 500 && status !== 429 && status !== 413;
  }

  /** ms until the service's budget allows one more send (sends in flight may each fail), or 0 */
  #budgetWait(now: number): number {
    const b = this.#budget;
    if (!b) return 0;
    if (now >= b.resetsAtMs) {
      this.#budget = undefined;
      return 0;
    }
    return this.#inFlight < b.remaining ? 0 : this.#inFlight > 0 ? 25 : b.resetsAtMs - now + 1;
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
    const budgetWait = this.#budgetWait(now);
    if (budgetWait > 0) return budgetWait;
    if (failures + this.#inFlight < this.options.maxFailures) return 0;
    if (failures < this.options.maxFailures) return 25; // room frees when a send in flight ends
    // the failure that must age out for one more send to be safe
    const freeing = this.#failures[failures - this.options.maxFailures]!;
    return Math.max(1, freeing + this.options.windowMs - now + 1);
  }

  /** Takes a place at once when one more send is safe now (no promise, no wait); false: `acquire` must wait. */
  tryAcquire(): boolean {
    if (this.waitNeeded(Date.now()) !== 0) return false;
    this.#inFlight++;
    return true;
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
      const failures = this.failureCount(now);
      const spent = this.#budget !== undefined && this.#budget.remaining === 0 && this.#inFlight === 0;
      if ((failures >= this.options.maxFailures || spent) && now - started + wait > maxWaitMs) throw this.refusal(failures, wait);
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

  /** The client-side refusal: `failures` in the window (or the service's error budget spent), one more send safe in `waitMs`. */
  refusal(failures: number, waitMs: number): AbuseBlockError {
    const why =
      failures >= this.options.maxFailures
        ? `${failures} failed requests in the last ${this.options.windowMs / 1000}s; one more could trip the service's abuse block (more than ${this.options.maxFailures})`
        : "the service's error budget (x-ratelimit-remaining) is spent; one more failure would block this caller";
    return new AbuseBlockError(`refused to send: ${why}. Retry in ${Math.ceil(waitMs / 1000)}s.`, {
      source: "client",
      retryAfterMs: waitMs,
    });
  }

  /**
   * Takes an in-flight place in the fleet's window in `store` (under `key`), waiting as the local `acquire` does.
   * False when the store failed: the caller then uses `acquire` (this process's own count).
   */
  async acquireShared(
    store: LimitStore,
    label: string,
    key: string,
    id: string,
    signal?: AbortSignal | null,
    maxWaitMs = this.options.maxWaitMs,
  ): Promise<boolean> {
    const started = Date.now();
    for (;;) {
      const now = Date.now();
      const { maxFailures, windowMs } = this.options;
      // an in-flight place outlives its send by at most a window (a process that died holding it frees it then)
      const grant = await viaStore(store, label, () => store.acquireGuard(key, { now, id, maxFailures, windowMs, leaseMs: windowMs }));
      if (!grant) return false;
      if (grant.granted) return true;
      if (grant.failures >= maxFailures && now - started + grant.waitMs > maxWaitMs) throw this.refusal(grant.failures, grant.waitMs);
      try {
        await sleep(Math.min(grant.waitMs, 250), signal);
      } catch (err) {
        throw signal?.aborted ? abortErrorOf(signal.reason) : err;
      }
    }
  }
}

/** A fleet store to count failures in, the guard's key there (origin and caller), and the label of its warning. */
export interface SharedGuard {
  store: LimitStore;
  label: string;
  key: string;
}

/**
 * `onSettled` runs after each send's outcome is counted (the stack uses it to keep a shared guard while it
 * matters). With `shared`, sends are counted in the fleet store (and by `guard` alone while the store fails).
 */
export function abuseGuardLayer(
  guard: AbuseGuard,
  maxWaitMs?: number,
  onSettled?: (guard: AbuseGuard) => void,
  shared?: SharedGuard,
): FetchLayer {
  return (next) => async (input, init) => {
    const id = shared ? randomId() : "";
    const fleet =
      shared && (await guard.acquireShared(shared.store, shared.label, shared.key, id, init?.signal, maxWaitMs)) ? shared : undefined;
    if (!fleet && !guard.tryAcquire()) await guard.acquire(init?.signal, maxWaitMs);
    let failed = true;
    try {
      const response = await next(input, init);
      const budget = errorBudgetOf(response.headers);
      if (budget) guard.observeBudget(budget);
      failed = guard.counts(response);
      return response;
    } catch (err) {
      failed = guard.counts(undefined);
      throw err;
    } finally {
      if (fleet) {
        if (failed) guard.recordFailure(); // known here too, for when the store fails
        const now = Date.now();
        await viaStore(fleet.store, fleet.label, () =>
          fleet.store.releaseGuard(fleet.key, { now, id, failed, windowMs: guard.options.windowMs }),
        );
      } else {
        guard.release(failed);
      }
      onSettled?.(guard);
    }
  };
}
