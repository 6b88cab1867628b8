/**
 * The response headers of the spec's part 2.5, parsed into one typed object. Strings that hold numbers
 * become numbers, `true`/`false` become booleans. Reset times come in three units, depending on the deployment:
 * the live service sends `x-ratelimit-reset-requests` and `-tokens` as Unix milliseconds, the seed as Unix
 * seconds (requests) and seconds from now (tokens); the crypto RPC proxy's `X-RateLimit-Reset` is Unix seconds.
 * The raw numbers are kept as sent, and each reset is also given as an instant (`…AtMs`), read whichever unit.
 *
 * Three families share the `x-ratelimit-` prefix (read by exact name): the model limits (`-requests`, `-tokens`),
 * the live error budget (`x-ratelimit-remaining` with `x-ratelimit-resets`, Unix ms: failures left before the
 * block), and the crypto RPC cap (`X-RateLimit-Limit`, `-Remaining`, `-Reset`, on its 429 only).
 */
import { brandNames } from "./config.js";

export type { RateLimitHeaders, ServiceResponseHeaders, X402PaymentRequired } from "./header-types.js";
import type { ServiceResponseHeaders, X402PaymentRequired } from "./header-types.js";

// `\d+(?:\.\d*)?`, not `\d+\.?\d*`: the same numbers, without the choice of where to split a run of digits that made
// a 16 KB header of digits ending in a letter take half a second (quadratic backtracking)
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;

/**
 * `"12"` → 12, `"1.5e-6"` → 1.5e-6; a header a proxy sent twice (`"10, 10"`) → its first value; anything
 * else (hex `0x10`, `Infinity`, text) → undefined.
 */
export function toNumber(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined) return undefined;
  const comma = value.indexOf(",");
  const trimmed = (comma < 0 ? value : value.slice(0, comma)).trim();
  if (!DECIMAL.test(trimmed)) return undefined;
  const n = Number(trimmed);
  return Number.isFinite(n) ? n : undefined;
}

/**
 * A reset header (`x-ratelimit-reset-requests`, `-tokens`, `X-RateLimit-Reset`) as ms since epoch, whichever unit
 * it came in: Unix milliseconds (above 1e12, the live service), Unix seconds (above 1e9), or seconds from now (a
 * smaller value, i.e. before 2001 as a timestamp: the seed's `reset-tokens`).
 */
export function resetRequestsAtMs(reset: number, now = Date.now()): number {
  const at = reset > 1e12 ? reset : reset >= 1e9 ? reset * 1000 : now + reset * 1000;
  // a reset past what a Date holds (`1e306`, `-1e308`) is that far away, not Infinity or an Invalid Date
  return Math.min(MAX_INSTANT_MS, Math.max(-MAX_INSTANT_MS, at));
}

/** the latest instant a Date holds, either way from the epoch (ECMAScript's time range) */
const MAX_INSTANT_MS = 8.64e15;
/** the longest wait a `retry-after` names (100 years): longer ones are as good as never, and stay a valid Date from now */
const MAX_WAIT_MS = 100 * 365 * 86_400_000;

/** A request or token window an answer names; `resetAt` in ms since epoch. */
export interface RateWindow {
  limit: number;
  remaining: number;
  resetAt: number;
  /** the reset came as Unix ms (live: exact), not seconds (seed: from now, up to a second late) */
  exact: boolean;
}

/**
 * The request and token windows of an answer (`x-ratelimit-{limit,remaining,reset}-{requests,tokens}`), each only
 * when all three of its headers came; `metered`: `x-ratelimit-limit-requests` was sent. The pacing layer's one
 * reading of them.
 */
export function rateWindowsOf(
  headers: Pick<Headers, "get">,
  now = Date.now(),
): { metered: boolean; requests?: RateWindow; tokens?: RateWindow } {
  const window = (kind: "requests" | "tokens"): RateWindow | undefined => {
    const limit = toNumber(headers.get(`x-ratelimit-limit-${kind}`));
    const remaining = toNumber(headers.get(`x-ratelimit-remaining-${kind}`));
    const reset = toNumber(headers.get(`x-ratelimit-reset-${kind}`));
    if (limit === undefined || remaining === undefined || reset === undefined) return undefined;
    return { limit, remaining, resetAt: resetRequestsAtMs(reset, now), exact: reset > 1e12 };
  };
  return {
    metered: toNumber(headers.get("x-ratelimit-limit-requests")) !== undefined,
    requests: window("requests"),
    tokens: window("tokens"),
  };
}

/**
 * The crypto RPC proxy's cap of an answer (`X-RateLimit-Limit`, `-Remaining`, and `-Reset` as ms since epoch when
 * sent); undefined unless both the limit and the remaining came. The pacing layer's one reading of them.
 */
export function capWindowOf(
  headers: Pick<Headers, "get">,
  now = Date.now(),
): { limit: number; remaining: number; resetAt?: number } | undefined {
  const limit = toNumber(headers.get("x-ratelimit-limit"));
  const remaining = toNumber(headers.get("x-ratelimit-remaining"));
  if (limit === undefined || remaining === undefined) return undefined;
  const reset = toNumber(headers.get("x-ratelimit-reset"));
  return { limit, remaining, ...(reset === undefined ? {} : { resetAt: resetRequestsAtMs(reset, now) }) };
}

/** The live error budget of an answer (`x-ratelimit-remaining` beside `x-ratelimit-resets`); undefined without it. */
export function errorBudgetOf(headers: Pick<Headers, "get">, now = Date.now()): { remaining: number; resetsAtMs: number } | undefined {
  const resets = toNumber(headers.get("x-ratelimit-resets"));
  const remaining = resets === undefined ? undefined : toNumber(headers.get("x-ratelimit-remaining"));
  return resets === undefined || remaining === undefined ? undefined : { remaining, resetsAtMs: resetRequestsAtMs(resets, now) };
}

/** `retry-after` in ms: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const seconds = toNumber(value);
  if (seconds !== undefined) return Math.min(MAX_WAIT_MS, Math.max(0, seconds * 1000));
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.min(MAX_WAIT_MS, Math.max(0, at - now));
}

/**
 * When the limits a 429 names clear, as ms since epoch: the latest of the instants its headers give
 * (`x-ratelimit-reset-requests`, the crypto RPC proxy's `X-RateLimit-Reset`, `retry-after`), each in seconds
 * or milliseconds as `resetRequestsAtMs` reads them; undefined when it names none. A token limit
 * (`x-ratelimit-remaining-tokens` 0 while requests remain) clears at `x-ratelimit-reset-tokens` instead of the
 * request window's reset, which the live service may set a minute away while the token window resets in seconds.
 */
export function rateLimitResetAtMs(headers: ServiceResponseHeaders, now = Date.now()): number | undefined {
  const r = headers.rateLimit ?? {};
  const tokensOnly =
    r.remainingTokens !== undefined && r.remainingTokens <= 0 && r.remainingRequests !== undefined && r.remainingRequests > 0;
  const tokensReset = r.resetTokens === undefined ? undefined : resetRequestsAtMs(r.resetTokens, now);
  let at = headers.retryAfterAtMs;
  if (tokensOnly && tokensReset !== undefined) {
    // the request window has room: only the token window (and the crypto RPC cap or retry-after, if sent) holds
    if (r.reset !== undefined) at = Math.max(at ?? 0, resetRequestsAtMs(r.reset, now));
    return Math.max(at ?? 0, tokensReset);
  }
  for (const value of [r.resetRequests, r.reset]) {
    if (value !== undefined) at = Math.max(at ?? 0, resetRequestsAtMs(value, now));
  }
  // both windows spent: the later of the two resets
  if (tokensReset !== undefined && r.remainingTokens !== undefined && r.remainingTokens <= 0) at = Math.max(at ?? 0, tokensReset);
  return at;
}

export function toBoolean(value: string | null | undefined): boolean | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim().toLowerCase();
  if (v === "true" || v === "1") return true;
  if (v === "false" || v === "0") return false;
  return undefined;
}

/** Decodes a base64 JSON header (x402 `PAYMENT-*`); undefined when absent or malformed. */
export function decodeBase64Json<T = Record<string, unknown>>(value: string | null | undefined): T | undefined {
  if (!value) return undefined;
  try {
    return JSON.parse(decodeBase64(value)) as T;
  } catch {
    return undefined;
  }
}

export function decodeBase64(value: string): string {
  // Buffer where present (Node), atob elsewhere; both accept standard base64.
  const B = (globalThis as { Buffer?: { from(s: string, e: string): { toString(e: string): string } } }).Buffer;
  if (B) return B.from(value, "base64").toString("utf8");
  return new TextDecoder().decode(Uint8Array.from(atob(value), (c) => c.charCodeAt(0)));
}

export function encodeBase64(value: string): string {
  const B = (globalThis as { Buffer?: { from(s: string, e: string): { toString(e: string): string } } }).Buffer;
  if (B) return B.from(value, "utf8").toString("base64");
  return btoa(String.fromCharCode(...new TextEncoder().encode(value)));
}

function compact<T extends object>(obj: T): T | undefined {
  for (const key in obj) if (obj[key] !== undefined) return obj;
  return undefined;
}

/** Parses the part-2.5 headers of a response. `now` (ms) anchors relative reset times. */
export function parseServiceHeaders(headers: Headers, brand?: string, now: number = Date.now()): ServiceResponseHeaders {
  const p = brandNames(brand).headerPrefix;
  // one pass over the answer's headers (a dozen or so), then ~50 lookups in a Map: a Headers lookup normalizes
  // its name every time
  const present = new Map<string, string>();
  headers.forEach((value, name) => {
    present.set(name, value);
  });
  const lookup = { get: (name: string): string | null => present.get(name) ?? null };
  const get = (name: string) => present.get(name);
  const num = (name: string) => toNumber(present.get(name));
  const bool = (name: string) => toBoolean(present.get(name));

  const resetTokens = num("x-ratelimit-reset-tokens");
  const resetRequests = num("x-ratelimit-reset-requests");
  const retryAfter = retryAfterMs(lookup.get("retry-after"), now);
  const out: ServiceResponseHeaders = {
    contentType: get("content-type"),
    contentEncoding: get("content-encoding"),
    contentDisposition: get("content-disposition"),
    date: get("date"),
    requestId: get("x-request-id") ?? get("cf-ray"),
    version: get(`${p}version`),
    timestamp: get(`${p}timestamp`),
    hostName: get(`${p}host-name`),
    model: compact({ id: get(`${p}model-id`), name: get(`${p}model-name`), router: get(`${p}model-router`) }),
    deprecation: compact({
      warning: get(`${p}model-deprecation-warning`),
      date: get(`${p}model-deprecation-date`),
    }),
    rateLimit: compact({
      limitRequests: num("x-ratelimit-limit-requests"),
      remainingRequests: num("x-ratelimit-remaining-requests"),
      resetRequests,
      resetRequestsAtMs: resetRequests === undefined ? undefined : resetRequestsAtMs(resetRequests, now),
      limitTokens: num("x-ratelimit-limit-tokens"),
      remainingTokens: num("x-ratelimit-remaining-tokens"),
      resetTokens,
      resetTokensAtMs: resetTokens === undefined ? undefined : resetRequestsAtMs(resetTokens, now),
      errorBudget: errorBudgetOf(lookup, now),
      type: get("x-ratelimit-type"),
      limit: num("x-ratelimit-limit"),
      remaining: num("x-ratelimit-remaining"),
      reset: num("x-ratelimit-reset"),
    }),
    pagination: compact({
      limit: num("x-pagination-limit"),
      page: num("x-pagination-page"),
      total: num("x-pagination-total"),
      totalPages: num("x-pagination-total-pages"),
    }),
    balance: compact({
      usd: num(`${p}balance-usd`),
      diem: num(`${p}balance-diem`),
      remainingUsd: num("x-balance-remaining"),
    }),
    contentPolicy: compact({
      isBlurred: bool(`${p}is-blurred`),
      isContentViolation: bool(`${p}is-content-violation`),
      isAdultModelContentViolation: bool(`${p}is-adult-model-content-violation`),
      containsMinor: bool(`${p}contains-minor`),
    }),
    client: compact({
      middlefaceVersion: get(`${p}middleface-version`),
      mobileVersion: get(`${p}mobile-version`),
      requestTimestampMs: num(`${p}request-timestamp-ms`),
    }),
    controlInstance: get(`${p}control-instance`),
    authRefreshed: bool("x-auth-refreshed"),
    retryCount: num("x-retry-count"),
    retryAfterAtMs: retryAfter === undefined ? undefined : now + retryAfter,
    rpc: compact({
      credits: num(`${p}rpc-credits`),
      costUsd: num(`${p}rpc-cost-usd`),
      requestId: get("x-request-id"),
      idempotentReplayed: bool("idempotent-replayed"),
    }),
    paymentRequired: decodeBase64Json<X402PaymentRequired>(lookup.get("payment-required")),
    paymentResponse: decodeBase64Json(lookup.get("payment-response") ?? lookup.get("x-payment-response")),
  };
  for (const key of Object.keys(out) as (keyof ServiceResponseHeaders)[]) {
    if (out[key] === undefined) delete out[key];
  }
  return out;
}
