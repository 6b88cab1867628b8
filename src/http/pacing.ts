/**
 * Rate-limit pacing: holds requests so that a burst never draws a 429. One limiter per (service, caller,
 * model), shared by every client object in the process. It learns the window from the `x-ratelimit-*`
 * headers (limit, remaining, reset), reserves a request (and the request's estimated tokens) before each
 * send, and when the window is used up waits until its reset instead of sending into a 429.
 *
 * Until the first answer tells the limits, one request goes alone to learn them (a burst starts with one
 * round trip of latency, then runs at the full allowed rate).
 *
 * Image, audio, embedding and video requests (spec part 8, "other model types") have a published requests per
 * minute. A service that sends `x-ratelimit-*` still wins (what it says is learned as above); one that sends
 * none still enforces the published limit, so those requests are paced by it, a rolling minute per (caller,
 * model), instead of going unpaced into 429s. Text stays as it was: no headers, no pacing (its tier is unknown).
 *
 * The crypto RPC proxy has a cap of its own (requests per minute per key), which it tells only on the 429
 * that trips it (`X-RateLimit-Limit`, `-Remaining`, `-Reset`); its requests (whichever face sends them: the
 * client, the tools, the ethers and Solana adapters) are paced in a limiter of their own, which learns the cap
 * from that 429 and from then on counts its sends against it.
 *
 * The wallet routes (`/x402/top-up`, `/x402/balance/{wallet}`, `/x402/transactions/{wallet}`) have published limits
 * of their own, told by no header: each is paced like a type limit under a key of its own (per wallet, or per
 * address for the top-up, whoever the caller), in the store too for a fleet (route-limits.ts).
 *
 * With a fleet store (`store: RedisStore`), the request and token windows of a (caller, model) live in the
 * store instead, so that every process of a fleet on one key counts against one window: each send takes its
 * place there atomically (one Lua script: roll the window, check, count), and each answer's headers update it.
 * The in-process limiter keeps learning from every answer and takes over when the store fails (see
 * shared-limits.ts). The crypto RPC proxy's cap stays per process: it is told only by the 429 that trips it.
 */
import type { FetchLayer, ModelType } from "./types.js";
import { abortErrorOf } from "./errors.js";
import { capWindowOf, parseServiceHeaders, rateLimitResetAtMs, rateWindowsOf } from "./headers.js";
import { sleep } from "./retry.js";
import { SharedRegistry } from "./bounded.js";
import { contextKey, defaultServiceContext, type ServiceContext } from "./context.js";
import { randomId, viaStore, type LimitStore, type PaceObservation } from "./shared-limits.js";
import { tooManyKind, type TooManyKind } from "./refusals.js";
import { limitedRouteOf, ROUTE_LIMITS, routeWindowOf, type LimitedRoute } from "./route-limits.js";

/** The kind of model a request uses: spec part 8 publishes a requests-per-minute limit for each but text. */
export { MODEL_TYPES, type ModelType } from "./types.js";

/**
 * Spec part 8, "other model types", default tier (requests per minute), paced when the service sends no
 * `x-ratelimit-*` headers. Video is the queue's 40 (its retrieve calls count against it too: the stricter of
 * the two); text has none (its limit depends on the model's tier, which the client does not know).
 */
export const TYPE_LIMITS: Readonly<Partial<Record<ModelType, number>>> = { image: 20, audio: 60, embedding: 500, video: 40 };

export interface PacingOptions {
  /** extra ms to wait past a reset instant, for clock granularity (default 50) */
  resetMarginMs: number;
  /** the longest a request is held before it is sent anyway (default 120000) */
  maxHoldMs: number;
  /**
   * requests per `typeWindowMs` by model type, applied when the service sends no rate-limit headers (default
   * `TYPE_LIMITS`: image 20, audio 60, embedding 500, video 40; text none). Headers, when sent, win.
   */
  typeLimits?: Partial<Record<ModelType, number>>;
  /** the window of `typeLimits` in ms (default 60000: the published limits are per minute) */
  typeWindowMs?: number;
  /**
   * requests per `routeWindowMs` of the wallet routes, which the service limits with header-less 429s (default
   * `ROUTE_LIMITS`: top-up 10 per IP, balance 30 and transactions 20 per wallet; see route-limits.ts); `false`: unpaced
   */
  routeLimits?: Partial<Record<LimitedRoute, number>> | false;
  /** the window of `routeLimits` in ms (default 60000: the published limits are per minute) */
  routeWindowMs?: number;
}

/** the longest a 429 pauses a limiter (the retry layer's default `maxRateLimitWaitMs`) */
const MAX_PAUSE_MS = 60_000;
/** the longest window an `X-RateLimit-*` cap has (the crypto RPC proxy's is a minute): learned windows stay within it */
const MAX_CAP_WINDOW_MS = 60_000;
/**
 * the longest a limiter no client holds is kept for what it learned: a minute's window and a 429's pause fit;
 * a longer (daily) window is learned again by the next client's first request
 */
const MAX_REMEMBER_MS = 120_000;

interface Window {
  limit: number;
  remaining: number;
  /** ms since epoch */
  resetAt: number;
}

interface CapWindow extends Window {
  /** the first send of this window (ms since epoch) */
  anchor: number;
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
  /** the `X-RateLimit-*` cap (the crypto RPC proxy's), once a 429 told it; counted by this limiter's sends */
  #cap?: CapWindow;
  /** the cap's window length, learned from where a window started to the reset its 429 named (0: not yet) */
  #capWindowMs = 0;
  /** before the cap is known: the first send of the last minute, where the window a 429 ends may have started */
  #firstSend?: number;
  /**
   * when the answers of a send came, while the type's limit paces (no `x-ratelimit-*` learned), oldest first. A
   * send counts from when it goes until a window after its answer: the service saw it somewhere in between.
   */
  #answered: number[] = [];

  /** `typeLimit`: requests per `options.typeWindowMs` to pace by when the service sends no rate-limit headers */
  constructor(
    readonly options: PacingOptions,
    readonly typeLimit?: number,
  ) {}

  /** true while the type's limit paces this limiter: it has one and no headers told the service's own */
  get typePaced(): boolean {
    return this.typeLimit !== undefined && !this.#requests;
  }

  #typeWindowMs(): number {
    return this.options.typeWindowMs ?? 60_000;
  }

  /** ms until one more send fits the type's limit; -1 while every place is held by a send in flight */
  #typeWait(now: number): number {
    const windowMs = this.#typeWindowMs();
    while (this.#answered.length > 0 && this.#answered[0]! + windowMs <= now) this.#answered.shift();
    if (this.#inFlight + this.#answered.length < this.typeLimit!) return 0;
    return this.#answered.length > 0 ? this.#answered[0]! + windowMs - now + this.options.resetMarginMs : -1;
  }

  /** ms until one more request (with `tokens`) fits, or 0 */
  #waitFor(tokens: number, now: number): number {
    if (now < this.#pausedUntil) return this.#pausedUntil - now;
    const wait = this.#windowsWait(tokens, now);
    const c = this.#cap;
    // no cap known, its window over (the next send opens a new one: #reserve), or room left in it
    if (!c || now >= c.resetAt || c.remaining - this.#inFlight > 0 || wait < 0) return wait;
    return Math.max(wait, c.resetAt - now + this.options.resetMarginMs);
  }

  /** the request and token windows of the `x-ratelimit-*-requests/-tokens` headers */
  #windowsWait(tokens: number, now: number): number {
    const r = this.#requests;
    if (!r) {
      if (this.#probing && !this.#unmetered) return -1; // wait for the probe's answer
      return this.#unmetered && this.typeLimit !== undefined ? this.#typeWait(now) : 0;
    }
    if (now >= r.resetAt) {
      r.remaining = r.limit;
      r.resetAt = Number.POSITIVE_INFINITY; // unknown until the next answer
    }
    let wait = 0;
    if (r.remaining - this.#inFlight <= 0) {
      wait = Number.isFinite(r.resetAt) ? r.resetAt - now + this.options.resetMarginMs : -1;
    }
    const t = this.#tokens;
    if (t) {
      if (now >= t.resetAt) {
        t.remaining = t.limit;
        t.resetAt = Number.POSITIVE_INFINITY;
      }
      // a send without an estimate still needs a token: none left (the service refuses every request until the
      // token window resets), it waits too; a request larger than a whole window can never fit: sent, not held forever
      const need = Math.max(tokens, 1);
      if (t.remaining - this.#inFlightTokens < need && need <= t.limit) {
        const w = Number.isFinite(t.resetAt) ? t.resetAt - now + this.options.resetMarginMs : -1;
        wait = w < 0 || wait < 0 ? -1 : Math.max(wait, w);
      }
    }
    return wait;
  }

  /** Takes a send's place at once when the window has room now (no promise, no wait); false: `acquire` must wait. */
  tryAcquire(tokens: number): boolean {
    if (this.#waitFor(tokens, Date.now()) !== 0) return false;
    this.#take(tokens);
    return true;
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
    this.#take(tokens);
  }

  #take(tokens: number) {
    if (!this.#requests && !this.#unmetered) this.#probing = true;
    this.#reserve(Date.now());
    this.#inFlight++;
    this.#inFlightTokens += tokens;
  }

  /** A send goes now: it opens the cap's next window when the last one is over, or marks where one may start. */
  #reserve(now: number) {
    const c = this.#cap;
    if (c) {
      if (now >= c.resetAt) {
        // The service's window starts with its first request after the reset: so does this estimate of it.
        c.remaining = c.limit;
        c.resetAt = now + (this.#capWindowMs || MAX_CAP_WINDOW_MS);
        c.anchor = now;
      }
    } else if (this.#firstSend === undefined || now - this.#firstSend >= MAX_CAP_WINDOW_MS) {
      this.#firstSend = now;
    }
  }

  /**
   * Learns the cap from `X-RateLimit-Limit`, `-Remaining`, `-Reset` (sent on the 429 that trips it, or on every
   * answer by a service that sends them always); an answer without them counts one send against it.
   */
  #learnCap(headers: Headers | undefined, now: number, status: number | undefined) {
    const cap = headers && capWindowOf(headers, now);
    const c = this.#cap;
    if (!cap) {
      if (c && headers && status !== 429) c.remaining = Math.max(0, c.remaining - 1);
      return;
    }
    const { limit, remaining } = cap;
    const anchor = c?.anchor ?? this.#firstSend ?? now;
    let resetAt = cap.resetAt;
    if (resetAt !== undefined && resetAt > anchor) {
      // The window ran from (at the latest) its first send to the reset: whole seconds, at most a minute, and
      // only ever longer (a sibling process may have opened it earlier; a window found too short shows as a 429).
      const span = Math.ceil((resetAt - anchor) / 1000) * 1000;
      this.#capWindowMs = Math.min(MAX_CAP_WINDOW_MS, Math.max(this.#capWindowMs, span));
    }
    resetAt ??= c?.resetAt ?? now + (this.#capWindowMs || MAX_CAP_WINDOW_MS);
    // the service's word on the window; within the same one (resets a second apart at most) keep the lowest remaining
    const kept = c && Math.abs(resetAt - c.resetAt) <= 1000 ? c.remaining : Number.POSITIVE_INFINITY;
    this.#cap = { limit, remaining: Math.min(kept, remaining), resetAt, anchor };
  }

  /**
   * Until when this limiter knows something the service still counts (a window not yet reset, a 429's pause),
   * at most `MAX_REMEMBER_MS` ahead; 0 when nothing. Past it, a new limiter on the same key learns as much.
   */
  rememberUntil(now = Date.now()): number {
    let until = this.#pausedUntil;
    for (const w of [this.#requests, this.#tokens, this.#cap]) {
      if (w && Number.isFinite(w.resetAt)) until = Math.max(until, w.resetAt);
    }
    const last = this.#answered.at(-1);
    if (last !== undefined) until = Math.max(until, last + this.#typeWindowMs());
    return until > now ? Math.min(until, now + MAX_REMEMBER_MS) : 0;
  }

  /** Reads the answer's headers (and status); frees the reservation. */
  release(tokens: number, headers: Headers | undefined, now = Date.now(), status?: number, kind?: TooManyKind) {
    this.#inFlight--;
    this.#inFlightTokens -= tokens;
    this.learn(headers, now, status, kind);
    // the type's window counts this send until a window after its answer (nothing to count once headers tell)
    if (this.typePaced) this.#answered.push(now);
    else this.#answered.length = 0;
  }

  /**
   * Reads an answer's headers (and status) without a reservation of this limiter: a send the shared store paced
   * (so that this limiter knows the windows when it has to take over from a failed store).
   */
  learn(headers: Headers | undefined, now = Date.now(), status?: number, kind?: TooManyKind) {
    this.#probing = false;
    const until = status === 429 && headers ? pauseAfter429(headers, now, kind) : undefined;
    if (until !== undefined) this.#pausedUntil = Math.max(this.#pausedUntil, until);
    if (status === 429 && kind === "in-flight") status = undefined; // never ran: tells nothing of the windows
    this.#learnCap(headers, now, status);
    if (headers) {
      const windows = rateWindowsOf(headers, now);
      if (!windows.metered && !this.#requests) this.#unmetered = true;
      if (windows.requests) {
        this.#unmetered = false;
        const { limit, remaining, resetAt } = windows.requests;
        const r = this.#requests;
        // Answers arrive out of order: within one window keep the lowest remaining seen.
        if (!r || resetAt > r.resetAt || !Number.isFinite(r.resetAt)) {
          this.#requests = { limit, remaining, resetAt };
        } else if (resetAt === r.resetAt) {
          r.remaining = Math.min(r.remaining, remaining);
        }
      }
      if (windows.tokens) {
        // `reset-tokens` is Unix ms (live: exact, and its window apart from the requests'), or whole seconds
        // (seed: from now, up to 1 s late; when the request window's exact reset falls within that second, it is the
        // same window: take the exact instant)
        const { limit: tLimit, remaining: tRemaining } = windows.tokens;
        let resetAt = windows.tokens.resetAt;
        const slack = windows.tokens.exact ? 0 : 1000;
        const requestsReset = this.#requests?.resetAt;
        if (
          slack &&
          requestsReset !== undefined &&
          Number.isFinite(requestsReset) &&
          resetAt - requestsReset >= 0 &&
          resetAt - requestsReset <= slack
        ) {
          resetAt = requestsReset;
        }
        const t = this.#tokens;
        if (!t || !Number.isFinite(t.resetAt) || resetAt > t.resetAt + slack)
          this.#tokens = { limit: tLimit, remaining: tRemaining, resetAt };
        // the same window: keep the lowest remaining seen (a late answer of a window already over tells nothing)
        else if (resetAt >= t.resetAt - slack) t.remaining = Math.min(t.remaining, tRemaining);
      }
    }
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}

/**
 * One limiter per (service, caller, bucket), shared by every live pacing layer of a context on it: held weakly
 * by the context and strongly by each layer that used it, so a dropped tenant's limiter goes with its clients (once its window
 * no longer matters: `rememberUntil`), while two live clients on one key always share one.
 */
const LIMITERS = contextKey("rate limiters", () => new SharedRegistry<RateLimiter>());

/** `POST /crypto/rpc/{network}` (not the public network list): the proxy's cap is apart from the key's other limits */
const CRYPTO_RPC_CALL = /\/crypto\/rpc\/(?!networks(?:[/?#]|$))[^/?#]+(?:[?#]|$)/;

/** the endpoint families of the other model types, at the end of the path: /embeddings, /image(s)/…, /audio/…, /video/… */
const TYPED_PATH = /\/(?:(embeddings)|(images?|audio|video)\/[^/]+)\/?$/;

/** A request's model type: the hint (`init.service.modelType`), else told by its path; chat and the rest are text. */
function modelTypeOf(url: string, hint: ModelType | undefined): ModelType {
  if (hint) return hint;
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    path = url.split(/[?#]/)[0]!;
  }
  const m = TYPED_PATH.exec(path);
  if (!m) return "text";
  if (m[1]) return "embedding";
  return m[2] === "images" ? "image" : (m[2] as ModelType);
}

/**
 * The rate-limit bucket of a request: the crypto RPC proxy's cap, else its model (`init.service.model`). A
 * typed request without a model is keyed by its type, so that it does not share a window with chat's.
 */
function bucketOf(url: string, model: string | undefined, type: ModelType): string {
  if (CRYPTO_RPC_CALL.test(url)) return "crypto-rpc";
  return model ?? (type === "text" ? "*" : `*${type}`);
}

/** A fleet store to pace through, and the label of its one warning when it fails. */
export interface SharedPacing {
  store: LimitStore;
  label: string;
}

/** while a probe is out (or a window reset and its new end is unknown), other processes ask the store again this often */
const STORE_POLL_MS = 50;
/** a probe's answer is waited for this long at most before another send may probe (its process may have died) */
const PROBE_LEASE_MS = 5_000;
/** a send in flight counts against a new window for this long at most (its process may have died) */
const FLIGHT_MS = 30_000;

/**
 * Until when a 429 holds every send of its limiter: a rate limit until the reset it names (else a second); an
 * overloaded model for its `Retry-After` only (its reset headers name the rate window, which is not what is full);
 * "too many in flight" not at all (the in-flight queue deals with it). Undefined: no pause (also for a far reset,
 * a daily limit: holding would only delay the same answer).
 */
function pauseAfter429(headers: Headers, now: number, kind: TooManyKind | undefined): number | undefined {
  if (kind === "in-flight") return undefined;
  const parsed = parseServiceHeaders(headers, undefined, now);
  const resetAt = kind === "overloaded" ? parsed.retryAfterAtMs : rateLimitResetAtMs(parsed, now);
  const until = resetAt !== undefined && resetAt > now ? resetAt : now + 1000;
  return until - now <= MAX_PAUSE_MS ? until : undefined;
}

/** What an answer tells the shared window: the requests and tokens windows, a 429's pause, or nothing to pace on. */
function observationOf(
  id: string,
  headers: Headers | undefined,
  status: number | undefined,
  now: number,
  marginMs: number,
  kind?: TooManyKind,
): PaceObservation {
  const o: PaceObservation = { now, marginMs, ttlMs: MAX_REMEMBER_MS, id, flightMs: FLIGHT_MS };
  if (!headers) return o; // no answer: the probe (if it was one) ends, nothing learned
  if (status === 429) o.pauseUntil = pauseAfter429(headers, now, kind);
  const windows = rateWindowsOf(headers, now);
  if (!windows.metered) o.unmetered = true;
  else if (windows.requests)
    o.requests = { limit: windows.requests.limit, remaining: windows.requests.remaining, resetAt: windows.requests.resetAt };
  if (windows.tokens) {
    const { limit, remaining, resetAt, exact } = windows.tokens;
    o.tokens = { limit, remaining, resetAt, ...(exact ? { exact: true } : {}) };
  }
  return o;
}

/**
 * Takes the send's place in the fleet's shared window, waiting as the store says. False when the store failed
 * (the caller paces on its in-process limiter instead); true when the place is taken, or after `maxHoldMs`
 * (sent anyway, as the in-process limiter does).
 */
async function acquireShared(
  shared: SharedPacing,
  key: string,
  id: string,
  tokens: number,
  o: PacingOptions,
  signal: AbortSignal | null | undefined,
): Promise<boolean> {
  const { store, label } = shared;
  const started = Date.now();
  for (;;) {
    const now = Date.now();
    const grant = await viaStore(store, label, () =>
      store.acquirePace(key, {
        now,
        tokens,
        marginMs: o.resetMarginMs,
        probeMs: PROBE_LEASE_MS,
        ttlMs: MAX_REMEMBER_MS,
        id,
        flightMs: FLIGHT_MS,
      }),
    );
    if (!grant) return false;
    if (grant.granted || now - started > o.maxHoldMs) return true;
    try {
      await sleep(grant.waitMs < 0 ? STORE_POLL_MS : Math.min(Math.max(1, grant.waitMs), o.maxHoldMs), signal);
    } catch (err) {
      throw signal?.aborted ? abortErrorOf(signal.reason) : err;
    }
  }
}

/**
 * The pacing layer for one caller of one service: one limiter per rate-limit bucket (a model, or the crypto RPC
 * cap), with its model type's published limit (`typeLimits`) for when the service sends no headers. With
 * `shared`, the model buckets are paced through the fleet store (and locally while it fails).
 */
export function pacingLayer(
  scope: string,
  options: Partial<PacingOptions> = {},
  shared?: SharedPacing,
  context: ServiceContext = defaultServiceContext(),
): FetchLayer {
  const limiters = context.part(LIMITERS);
  const o: PacingOptions = { resetMarginMs: 20, maxHoldMs: 120_000, ...options };
  const typeLimits = { ...TYPE_LIMITS, ...options.typeLimits };
  const routeLimits = options.routeLimits === false ? undefined : { ...ROUTE_LIMITS, ...options.routeLimits };
  // a wallet route's limiter paces its published limit as a type limit, over its own window
  const routeOptions: PacingOptions = { ...o, typeWindowMs: options.routeWindowMs ?? 60_000 };
  // this layer's own strong hold on the limiters it uses (a few: one per model it paces)
  const own = new Map<string, RateLimiter>();
  return (next) => async (input, init) => {
    if (init?.service?.auth === false) return next(input, init); // public endpoints are not metered per caller
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const type = modelTypeOf(url, init?.service?.modelType);
    const bucket = bucketOf(url, init?.service?.model, type);
    // a wallet route's window is per wallet or per address, whoever the caller is: keyed apart from the scope
    const route = routeLimits && limitedRouteOf(url);
    const key = route ? route.key : `${scope}|${bucket}`;
    let limiter = own.get(key);
    if (!limiter) {
      const typeLimit = route ? routeLimits[route.route] : bucket === "crypto-rpc" ? undefined : typeLimits[type];
      own.set(key, (limiter = limiters.get(key, () => new RateLimiter(route ? routeOptions : o, typeLimit))));
    }
    const tokens = init?.service?.estimatedTokens ?? 0;
    const id = shared ? randomId() : "";
    const fleet = shared && bucket !== "crypto-rpc" && (await acquireShared(shared, key, id, tokens, o, init?.signal)) ? shared : undefined;
    // The store knows no type limits: while one paces (no headers), each process keeps to it on its own.
    const local = !fleet || limiter.typePaced;
    if (local && !limiter.tryAcquire(tokens)) await limiter.acquire(tokens, init?.signal);
    let response: Response | undefined;
    try {
      response = await next(input, init);
      return response;
    } finally {
      const now = Date.now();
      const kind = tooManyKind(response);
      // a wallet route's window is its published one: `x-ratelimit-*` on its answers, if any, tell of other limits
      const heard = route && response ? new Headers() : response?.headers;
      if (local) limiter.release(tokens, heard, now, response?.status, kind);
      else limiter.learn(heard, now, response?.status, kind);
      if (fleet) {
        const observed = observationOf(id, heard, response?.status, now, o.resetMarginMs, kind);
        if (route && response) {
          // no headers to learn from: the answer tells the store the route's published window
          observed.requests = routeWindowOf(routeLimits![route.route], routeOptions.typeWindowMs!, now);
          observed.unmetered = undefined;
        }
        await viaStore(fleet.store, fleet.label, () => fleet.store.observePace(key, observed));
      }
      limiters.keep(limiter, limiter.rememberUntil(now));
    }
  };
}
