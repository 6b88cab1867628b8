/**
 * Pacing and the abuse guard across a fleet. The service counts requests and failures per caller (API key or
 * wallet), not per process: four processes on one key that each pace to the whole limit draw 429s together,
 * and each one's 20-failure allowance adds up to 80 failures that walk the caller into the service's block.
 * So when the stack's `store` can hold them (a `RedisStore`), the rate-limit windows and the guard's failure
 * window live in the store, and every send reserves its place there in one atomic step.
 *
 * This file is the small interface the layers need, so `src/http/` depends on no store module: `RedisStore`
 * implements it (one Lua script per operation), `MemoryStore` too (same semantics, checked by the same contract
 * tests) but says `processLocal`, and then the layers keep their in-process limiters (the default stays exactly
 * as it was: no extra hop, waiters woken by answers instead of polling).
 *
 * When the store fails (unreachable, an error, no answer within `STORE_CALL_MS`), pacing and the guard fall back
 * to this process's own limiters (which keep learning from every answer, so they are ready) with one
 * `console.warn` per store, and try the store again `STORE_RETRY_MS` later: a Redis restart costs a few seconds of
 * per-process limits, not a broken client. Payments are not paced by this: they need the store and fail closed.
 */
import { StoreUnavailableError } from "./errors.js";

/** One window an answer told of: its limit, what remains in it, and when it resets (ms since epoch). */
export interface PaceWindow {
  limit: number;
  remaining: number;
  resetAt: number;
}

/** A send asks for its place in the shared window. */
export interface PaceRequest {
  /** ms since epoch (the caller's clock: reset instants come from the service's headers, on the same clock) */
  now: number;
  /** tokens the request may use (0: no estimate; it still waits while the token window has none left) */
  tokens: number;
  /** a window is taken as reset only this long after its reset instant (clock granularity) */
  marginMs: number;
  /** while no limit is known one send goes alone to learn it; others wait this long at most for its answer */
  probeMs: number;
  /** how long the key is kept without use (its limit is learned again after) */
  ttlMs: number;
  /** the send's id: a granted send is in flight until its answer is observed (under this id) */
  id: string;
  /** a send in flight is forgotten after this (its process may have died) */
  flightMs: number;
}

/** `granted`: the place is taken (counted). Else `waitMs` before asking again; -1: until an answer tells more. */
export interface PaceGrant {
  granted: boolean;
  waitMs: number;
}

/** What one answer told (or, with nothing but `now`, that a send ended without telling anything). */
export interface PaceObservation {
  now: number;
  marginMs: number;
  ttlMs: number;
  /** the send this answers (its id at `acquirePace`) */
  id?: string;
  flightMs: number;
  /** `x-ratelimit-{limit,remaining,reset}-requests` */
  requests?: PaceWindow;
  /**
   * `x-ratelimit-{limit,remaining,reset}-tokens` (reset as an instant). `exact`: sent in Unix ms (live), its own
   * window's; else whole seconds, snapped to the requests' reset within 1 s
   */
  tokens?: PaceWindow & { exact?: boolean };
  /** a 429: every send of the key holds until then */
  pauseUntil?: number;
  /** the answer carried no request limit: nothing to pace on (until one does) */
  unmetered?: boolean;
}

export interface GuardRequest {
  now: number;
  /** unique per send: its in-flight place, then (if it fails) its failure */
  id: string;
  maxFailures: number;
  windowMs: number;
  /** an in-flight place lapses after this (its process may have died) */
  leaseMs: number;
}

/** `granted`: the send holds an in-flight place. Else wait `waitMs`; `failures` in the window now. */
export interface GuardGrant {
  granted: boolean;
  waitMs: number;
  failures: number;
}

export interface GuardRelease {
  now: number;
  id: string;
  failed: boolean;
  windowMs: number;
}

/** A request asks for one of `limit` places (requests in flight: a wallet's 5, crypto RPC's one at a time). */
export interface SlotRequest {
  now: number;
  /** unique per request: its place, until released */
  id: string;
  limit: number;
  /** a place lapses after this without renewal (its process may have died) */
  leaseMs: number;
}

/** `granted`: the place is taken; `held`: places held now (this one included when granted). */
export interface SlotGrant {
  granted: boolean;
  held: number;
}

/**
 * The store side of shared pacing and guard windows. Each method is one atomic step of the store (no
 * read-then-write race between processes); keys are the layers' own (`<service>|<caller>|<model>` for pacing,
 * `<origin>|<caller>` for the guard), never a secret. Every clock is the caller's `now` (the service's reset
 * instants are on it); a key unused for its `ttlMs` (pacing) or window (guard, slots) may be forgotten. These
 * calls are not money: a store that fails here is skipped for `STORE_RETRY_MS` (see `viaStore`), and a lost
 * answer costs at most one place until its `flightMs`/`leaseMs` lapses. Writing one: docs/store.md.
 */
export interface LimitStore {
  /** true for a store that lives in one process: the layers then keep their in-process limiters */
  readonly processLocal?: boolean;
  /**
   * Atomically: roll the windows that reset, then take one request (and `tokens`) if the requests and token
   * windows have room, else say how long to wait. With no limit known yet, the first caller gets a probe lease.
   * A window that rolls starts with the sends still in flight counted: they may land in it at the service (the
   * in-process limiter counts its sends in flight the same way); an answer that shows one landed in the old
   * window gives its place back.
   */
  acquirePace(key: string, request: PaceRequest): Promise<PaceGrant>;
  /**
   * Atomically merges what an answer told: limits, the lowest remaining within a window, a 429's pause; ends
   * a probe and the send `id`'s flight.
   */
  observePace(key: string, observation: PaceObservation): Promise<void>;
  /**
   * Atomically: drop failures older than the window and lapsed in-flight places; grant a place when failures +
   * sends in flight stay below `maxFailures` (so even if all of them fail the service does not block).
   */
  acquireGuard(key: string, request: GuardRequest): Promise<GuardGrant>;
  /**
   * Frees the send's in-flight place and, when it failed, records the failure at `now` for the whole fleet (a
   * retry after a lost answer records it twice: the guard errs on the safe side).
   */
  releaseGuard(key: string, release: GuardRelease): Promise<void>;
  /** Atomically: drop lapsed places, then take one when fewer than `limit` are held. */
  acquireSlot?(key: string, request: SlotRequest): Promise<SlotGrant>;
  /** Extends a held place's lease; false when it had lapsed (it is not taken back). */
  renewSlot?(key: string, renewal: { now: number; id: string; leaseMs: number }): Promise<boolean>;
  /** Frees a place (a place already gone is no error). */
  releaseSlot?(key: string, id: string): Promise<void>;
}

/** A store the layers should share limits through (a fleet store, not a per-process one). */
export function sharedLimitStore(store: unknown): LimitStore | undefined {
  const s = store as Partial<LimitStore> | null | undefined;
  if (!s || typeof s !== "object" || s.processLocal === true) return undefined;
  const ok =
    typeof s.acquirePace === "function" &&
    typeof s.observePace === "function" &&
    typeof s.acquireGuard === "function" &&
    typeof s.releaseGuard === "function";
  return ok ? (s as LimitStore) : undefined;
}

/** after a failure, the store is tried again this much later (meanwhile: local limits, no wait for it) */
export const STORE_RETRY_MS = 1000;
/** a limits call with no answer within this is a failure (a payment waits for the store; a send does not) */
export const STORE_CALL_MS = 2000;

interface Health {
  downUntil: number;
  warned: boolean;
}
const health = new WeakMap<object, Health>();

/** Whether the store is worth asking now (false: within `STORE_RETRY_MS` of its last failure). */
export function storeUp(store: LimitStore, now = Date.now()): boolean {
  return (health.get(store)?.downUntil ?? 0) <= now;
}

/**
 * Runs one limits call on the store; `undefined` when the store failed (the caller uses its local limiter).
 * The first failure of a store warns, once for the life of the store object; later ones are silent, and the
 * store is asked again after `STORE_RETRY_MS`.
 */
export async function viaStore<T>(store: LimitStore, label: string, call: () => Promise<T>): Promise<T | undefined> {
  if (!storeUp(store)) return undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${STORE_CALL_MS} ms`)), STORE_CALL_MS);
    });
    return await Promise.race([call(), late]);
  } catch (err) {
    let h = health.get(store);
    if (!h) health.set(store, (h = { downUntil: 0, warned: false }));
    h.downUntil = Date.now() + STORE_RETRY_MS;
    if (!h.warned) {
      h.warned = true;
      console.warn(
        `[${label}] the shared store failed (${reason(err)}): pacing and the abuse guard fall back to this process's own limits ` +
          `(a fleet may then exceed the service's rate limit) and use the store again when it answers; payments still need it`,
      );
    }
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/** Why, without secrets: a StoreUnavailableError's message is redacted by the store; anything else by name only. */
function reason(err: unknown): string {
  if (err instanceof StoreUnavailableError) return err.message;
  const e = err as { name?: unknown; code?: unknown; message?: unknown } | undefined;
  if (e instanceof Error && /^no answer within/.test(e.message)) return e.message;
  const code = typeof e?.code === "string" ? ` ${e.code}` : "";
  return `${typeof e?.name === "string" ? e.name : "Error"}${code}`;
}

/** A send's id in the store (unique across the fleet; not a secret). `crypto.randomUUID` is in Node and browsers. */
export function randomId(): string {
  return globalThis.crypto.randomUUID();
}
