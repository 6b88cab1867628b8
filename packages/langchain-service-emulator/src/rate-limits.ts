/**
 * The emulator's limits (spec part 8 and the abuse rule of part 7): request and token counters per
 * (caller, tier) in fixed windows, the `x-ratelimit-*` headers they produce, the abuse block after too many
 * failures, the log of exceeded limits that `/api_keys/rate_limits/log` returns, and the crypto RPC proxy's
 * own per-key cap (its 429 speaks the published `X-RateLimit-Limit`, `-Remaining`, `-Reset`, nothing else).
 *
 * Live mode (the default) follows the service's current guides where they differ from the seed: reset headers in
 * Unix milliseconds (the seed: Unix seconds for requests, seconds from now for tokens); an error budget of 50
 * non-429 4xx per 30 s (5xx and 429s never count; the seed: more than 20 non-success answers), told on every
 * credentialed answer by `x-ratelimit-remaining` / `x-ratelimit-resets` (Unix ms). Requests for a capability a
 * model lacks (the capability gates' 400s) count in a budget of their own, 200 per 30 s (`UNSUPPORTED_FEATURE_REQUESTS`),
 * whose block says `> 200`.
 *
 * Written by hand: the counters are a few maps, and the service's semantics (a window from the caller's first
 * request, on whole seconds; reset times in Unix seconds) are what the tests check, not a library's.
 */

import { countTokens } from "./models/tokenizer.js";

export type Tier = "XS" | "S" | "M" | "L";
/** the other model types of spec part 8, paced by requests per minute only */
export type TypeBucket = "image" | "audio" | "embedding" | "video";
/** non-inference authenticated routes share one bucket with the XS numbers */
export type Bucket = Tier | TypeBucket | "default";

export interface TierLimit {
  requests: number;
  tokens: number;
}

/** Spec part 8: requests and tokens per minute. */
export const TIER_LIMITS: Record<Tier, TierLimit> = {
  XS: { requests: 500, tokens: 1_000_000 },
  S: { requests: 75, tokens: 750_000 },
  M: { requests: 50, tokens: 750_000 },
  L: { requests: 20, tokens: 500_000 },
};

export const PARTNER_TIER_LIMITS: Record<Tier, TierLimit> = {
  XS: { requests: 500, tokens: 2_000_000 },
  S: { requests: 150, tokens: 1_500_000 },
  M: { requests: 100, tokens: 1_500_000 },
  L: { requests: 60, tokens: 1_000_000 },
};

/** Spec part 8, "other model types": requests per minute (no token limit is published for them). */
export const TYPE_LIMITS: Record<TypeBucket, number> = { image: 20, audio: 60, embedding: 500, video: 40 };
/** partners: the published table lists no video figure (the default's 40 applies) */
export const PARTNER_TYPE_LIMITS: Record<TypeBucket, number> = { image: 60, audio: 120, embedding: 500, video: 40 };

function isTypeBucket(bucket: Bucket): bucket is TypeBucket {
  return bucket === "image" || bucket === "audio" || bucket === "embedding" || bucket === "video";
}

export const DEFAULT_WINDOW_MS = 60_000;
/** the crypto RPC proxy's requests per minute on the paid tier (the published description) */
export const CRYPTO_RPC_REQUESTS_PER_MINUTE = 100;
export const DEFAULT_ABUSE_MAX_FAILURES = 20;
/** the live service's error budget: failures (non-429 4xx) per window before every request is refused */
export const LIVE_ABUSE_MAX_FAILURES = 50;
/** the live service's separate budget for requests asking a model for a capability it lacks */
export const UNSUPPORTED_FEATURE_MAX_FAILURES = 200;
export const DEFAULT_ABUSE_WINDOW_MS = 30_000;
export const DEFAULT_ABUSE_BLOCK_MS = 30_000;
/** the published description: "Returns the last 50 rate limits that the account exceeded" */
export const RATE_LIMIT_LOG_SIZE = 50;

/** The spec's abuse-block message (part 7), answered with 429. */
export const ABUSE_BLOCK_MESSAGE = "Too many failed attempts (> 20) resulting in a non-success status code. Please wait 30s and try again.";

/** The live service's wording of the same block (its threshold named in it). */
export function liveAbuseBlockMessage(maxFailures: number): string {
  return `Too many failed attempts (> ${maxFailures}) resulting in a non-success status code. Please wait 30 seconds and try again.`;
}

/** One entry of `/api_keys/rate_limits/log`, in the published shape (no other members). */
export interface RateLimitLogEntry {
  apiKeyId: string;
  modelId: string;
  /** the caller's API tier (`paid`, `partner`), as the published description has it */
  rateLimitTier: string;
  rateLimitType: "RPM" | "TPM" | "RPD" | "FAILED_REQUESTS" | "UNSUPPORTED_FEATURE_REQUESTS";
  timestamp: string;
}

export interface AdmitResult {
  allowed: boolean;
  /** which limit refused the request */
  exceeded?: "RPM" | "TPM";
  /** the x-ratelimit-* headers as of this decision */
  headers: Record<string, string>;
}

interface Window {
  /** ms since epoch at which the window ends */
  resetAt: number;
  requests: number;
  tokens: number;
}

export interface CapResult {
  allowed: boolean;
  /** on a refusal, the published headers: `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` */
  headers: Record<string, string>;
}

export class RateLimiter {
  readonly windowMs: number;
  /** the token window's length (default `windowMs`): its own window, opened by its own first request, its own reset */
  readonly tokenWindowMs: number;
  /** `x-ratelimit-reset-*` in Unix ms (live) or the seed's units */
  readonly resetUnit: "ms" | "s";
  /** which answers count toward the block: non-429 4xx (live) or every non-success (seed) */
  readonly abuseCounts: "4xx" | "all";
  /** `x-ratelimit-remaining` / `x-ratelimit-resets` (the error budget) on credentialed answers */
  readonly errorBudgetHeaders: boolean;
  readonly abuseMaxFailures: number;
  /** capability-gate 400s per `abuseWindowMs` before the block (the unsupported-feature budget) */
  readonly unsupportedFeatureMaxFailures: number;
  readonly abuseWindowMs: number;
  readonly abuseBlockMs: number;
  readonly enabled: boolean;
  /** the crypto RPC cap: requests per window, per key */
  readonly cryptoRpcRequests: number;
  readonly cryptoRpcWindowMs: number;
  private readonly windows = new Map<string, Window>();
  private readonly tokenWindows = new Map<string, Window>();
  private readonly cryptoRpcWindows = new Map<string, Window>();
  private readonly failures = new Map<string, number[]>();
  private readonly unsupportedFeatures = new Map<string, number[]>();
  private readonly blockedUntil = new Map<string, number>();
  /** which budget a block came from: its 429 names that budget's threshold */
  private readonly blockedBy = new Map<string, "failures" | "unsupported">();
  private readonly logs = new Map<string, RateLimitLogEntry[]>();

  /** `live`: behave as the live service where it differs from the seed (each option below still wins) */
  constructor(
    private readonly options: RateLimitOptions = {},
    readonly now: () => number = Date.now,
    readonly live = false,
  ) {
    this.windowMs = positive(options.windowMs, DEFAULT_WINDOW_MS);
    this.tokenWindowMs = positive(options.tokenWindowMs, this.windowMs);
    this.resetUnit = options.resetUnit ?? (live ? "ms" : "s");
    this.abuseCounts = options.abuseCounts ?? (live ? "4xx" : "all");
    this.errorBudgetHeaders = options.errorBudgetHeaders ?? live;
    this.abuseMaxFailures = positive(options.abuseMaxFailures, live ? LIVE_ABUSE_MAX_FAILURES : DEFAULT_ABUSE_MAX_FAILURES);
    this.unsupportedFeatureMaxFailures = positive(options.unsupportedFeatureMaxFailures, UNSUPPORTED_FEATURE_MAX_FAILURES);
    this.abuseWindowMs = positive(options.abuseWindowMs, DEFAULT_ABUSE_WINDOW_MS);
    this.abuseBlockMs = positive(options.abuseBlockMs, DEFAULT_ABUSE_BLOCK_MS);
    this.enabled = options.enabled !== false;
    this.cryptoRpcRequests = positive(options.cryptoRpc?.requests, CRYPTO_RPC_REQUESTS_PER_MINUTE);
    this.cryptoRpcWindowMs = positive(options.cryptoRpc?.windowMs, this.windowMs);
  }

  /** The effective limits of a tier for a caller (partner numbers, then per-tier overrides). */
  limitsFor(bucket: Bucket, partner = false): TierLimit {
    if (isTypeBucket(bucket)) {
      const requests = this.options.types?.[bucket]?.requests ?? (partner ? PARTNER_TYPE_LIMITS : TYPE_LIMITS)[bucket];
      return { requests, tokens: Number.POSITIVE_INFINITY };
    }
    const tier: Tier = bucket === "default" ? "XS" : bucket;
    const base = (partner ? PARTNER_TIER_LIMITS : TIER_LIMITS)[tier];
    const override = this.options.tiers?.[tier];
    return { requests: override?.requests ?? base.requests, tokens: override?.tokens ?? base.tokens };
  }

  /**
   * Counts one request for `identity` in `bucket`, unless the request budget of its window or the token budget of
   * its token window is spent (then nothing is counted and `allowed` is false). `promptTokens`: the tokens of the
   * prompt, seen on arrival and counted at once (the completion's are counted when served: `addTokens`).
   */
  admit(identity: string, bucket: Bucket, partner = false, promptTokens = 0): AdmitResult {
    if (!this.enabled) return { allowed: true, headers: {} };
    const limits = this.limitsFor(bucket, partner);
    const window = this.window(identity, bucket);
    const tokenWindow = this.tokenWindow(identity, bucket);
    if (window.requests >= limits.requests) return { allowed: false, exceeded: "RPM", headers: this.headers(identity, bucket, partner) };
    if (tokenWindow.tokens >= limits.tokens) return { allowed: false, exceeded: "TPM", headers: this.headers(identity, bucket, partner) };
    window.requests++;
    if (Number.isFinite(limits.tokens) && promptTokens > 0) tokenWindow.tokens += Math.ceil(promptTokens);
    return { allowed: true, headers: this.headers(identity, bucket, partner) };
  }

  /** Adds the tokens a served request used (prompt + completion, less what `admit` counted) to its token window. */
  addTokens(identity: string, bucket: Bucket, tokens: number): void {
    if (!this.enabled || !(tokens > 0)) return;
    this.tokenWindow(identity, bucket).tokens += Math.ceil(tokens);
  }

  /**
   * The `x-ratelimit-*` headers, each reset its own window's end. Live: both in Unix ms. Seed: `reset-requests` is
   * a Unix timestamp in whole seconds (rounded up, so a client that waits until then finds a fresh window) and
   * `reset-tokens` is seconds from now.
   */
  headers(identity: string, bucket: Bucket, partner = false): Record<string, string> {
    if (!this.enabled) return {};
    const limits = this.limitsFor(bucket, partner);
    const window = this.window(identity, bucket);
    const resetAt = window.resetAt;
    const requests = {
      "x-ratelimit-limit-requests": String(limits.requests),
      "x-ratelimit-remaining-requests": String(Math.max(0, limits.requests - window.requests)),
      "x-ratelimit-reset-requests": String(this.resetUnit === "ms" ? resetAt : Math.ceil(resetAt / 1000)),
    };
    // image, audio and embedding models have no published token limit: no token headers for them
    if (!Number.isFinite(limits.tokens)) return { ...requests, "x-ratelimit-type": "api_key" };
    const tokenWindow = this.tokenWindow(identity, bucket);
    const tokensResetAt = tokenWindow.resetAt;
    return {
      ...requests,
      "x-ratelimit-limit-tokens": String(limits.tokens),
      "x-ratelimit-remaining-tokens": String(Math.max(0, limits.tokens - tokenWindow.tokens)),
      "x-ratelimit-reset-tokens": String(
        this.resetUnit === "ms" ? tokensResetAt : Math.max(0, Math.ceil((tokensResetAt - this.now()) / 1000)),
      ),
      "x-ratelimit-type": "api_key",
    };
  }

  private window(identity: string, bucket: Bucket): Window {
    return openWindow(this.windows, `${identity}|${bucket}`, this.now(), this.windowMs);
  }

  private tokenWindow(identity: string, bucket: Bucket): Window {
    return openWindow(this.tokenWindows, `${identity}|${bucket}`, this.now(), this.tokenWindowMs);
  }

  /**
   * The crypto RPC proxy's cap: counts one request of `identity` (a key or a wallet) unless its window's
   * requests are spent. Only a refusal carries headers, the three the published description names ("set only
   * when the rate limit is tripped"); `X-RateLimit-Reset` is the window's end in Unix seconds.
   */
  admitCryptoRpc(identity: string): CapResult {
    if (!this.enabled) return { allowed: true, headers: {} };
    const window = openWindow(this.cryptoRpcWindows, identity, this.now(), this.cryptoRpcWindowMs);
    if (window.requests < this.cryptoRpcRequests) {
      window.requests++;
      return { allowed: true, headers: {} };
    }
    return {
      allowed: false,
      headers: {
        "X-RateLimit-Limit": String(this.cryptoRpcRequests),
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": String(Math.ceil(window.resetAt / 1000)),
      },
    };
  }

  // --- abuse block -------------------------------------------------------------------------------------

  /** ms left of `identity`'s abuse block; 0 when it is not blocked. */
  blockedFor(identity: string): number {
    const until = this.blockedUntil.get(identity);
    if (until === undefined) return 0;
    const left = until - this.now();
    if (left <= 0) {
      this.blockedUntil.delete(identity);
      this.blockedBy.delete(identity);
      return 0;
    }
    return left;
  }

  /** Whether an answer of `status` counts toward the block: live, only non-429 4xx; seed, every non-success. */
  countsAsFailure(status: number): boolean {
    if (this.abuseCounts === "4xx") return status >= 400 && status < 500 && status !== 429;
    return status < 200 || status >= 300;
  }

  /**
   * The block's 429 message: the seed's exact words, or the live wording with its threshold (the unsupported-feature
   * budget's when that one blocked `identity`).
   */
  abuseMessage(identity?: string): string {
    if (identity !== undefined && this.blockedBy.get(identity) === "unsupported")
      return liveAbuseBlockMessage(this.unsupportedFeatureMaxFailures);
    return this.abuseCounts === "4xx" ? liveAbuseBlockMessage(this.abuseMaxFailures) : ABUSE_BLOCK_MESSAGE;
  }

  /**
   * The error budget as the live service tells it on credentialed answers: `x-ratelimit-remaining` (failures left
   * before the block) and `x-ratelimit-resets` (Unix ms when the oldest failure counted stops counting; a window
   * from now when none does). Empty when the headers are off.
   */
  budgetHeaders(identity: string): Record<string, string> {
    if (!this.errorBudgetHeaders) return {};
    const now = this.now();
    const recent = (this.failures.get(identity) ?? []).filter((t) => now - t < this.abuseWindowMs);
    const resets = (recent[0] ?? now) + this.abuseWindowMs;
    return { "x-ratelimit-remaining": String(Math.max(0, this.abuseMaxFailures - recent.length)), "x-ratelimit-resets": String(resets) };
  }

  /**
   * Counts a non-success answer. More than `abuseMaxFailures` within `abuseWindowMs` blocks the identity for
   * `abuseBlockMs`; returns true when this failure started a block.
   */
  recordFailure(identity: string): boolean {
    return this.#count(this.failures, identity, this.abuseMaxFailures, "failures");
  }

  /**
   * Counts a capability gate's 400 in the unsupported-feature budget (not a failure): more than
   * `unsupportedFeatureMaxFailures` within `abuseWindowMs` blocks as the failures do; true when this one did.
   */
  recordUnsupportedFeature(identity: string): boolean {
    return this.#count(this.unsupportedFeatures, identity, this.unsupportedFeatureMaxFailures, "unsupported");
  }

  #count(windows: Map<string, number[]>, identity: string, max: number, budget: "failures" | "unsupported"): boolean {
    const now = this.now();
    const recent = (windows.get(identity) ?? []).filter((t) => now - t < this.abuseWindowMs);
    recent.push(now);
    if (recent.length > max) {
      windows.delete(identity);
      this.blockedUntil.set(identity, now + this.abuseBlockMs);
      this.blockedBy.set(identity, budget);
      return true;
    }
    windows.set(identity, recent);
    return false;
  }

  /** Capability-gate 400s counted for `identity` in the current window. */
  recentUnsupportedFeatures(identity: string): number {
    const now = this.now();
    return (this.unsupportedFeatures.get(identity) ?? []).filter((t) => now - t < this.abuseWindowMs).length;
  }

  /** Failures counted for `identity` in the current abuse window. */
  recentFailures(identity: string): number {
    const now = this.now();
    return (this.failures.get(identity) ?? []).filter((t) => now - t < this.abuseWindowMs).length;
  }

  // --- log of exceeded limits ----------------------------------------------------------------------------

  record(identity: string, entry: RateLimitLogEntry): void {
    const list = this.logs.get(identity) ?? [];
    list.push(entry);
    if (list.length > RATE_LIMIT_LOG_SIZE) list.splice(0, list.length - RATE_LIMIT_LOG_SIZE);
    this.logs.set(identity, list);
  }

  /** The last 50 exceeded limits of `identity`, newest first. */
  logFor(identity: string): RateLimitLogEntry[] {
    return [...(this.logs.get(identity) ?? [])].reverse();
  }
}

/**
 * The tokens of a chat request's messages as the service sees them on arrival, before the model runs (4 a message
 * and its text): what `admit` counts at once. The rest of the prompt (the service's system prompt, tools, media) and
 * the completion are counted when served.
 */
export function arrivalPromptTokens(body: Record<string, unknown>): number {
  if (!Array.isArray(body.messages)) return 0;
  let n = 0;
  for (const m of body.messages as unknown[]) {
    const content = m && typeof m === "object" ? (m as { content?: unknown }).content : undefined;
    n += 4;
    if (typeof content === "string") n += countTokens(content);
    else if (Array.isArray(content)) {
      for (const part of content)
        if (typeof (part as { text?: unknown })?.text === "string") n += countTokens((part as { text: string }).text);
    }
  }
  return n;
}

/**
 * The current window of `key`, opened afresh when there is none or it has ended. A window starts at the
 * caller's first request, taken down to its whole second, and lasts `windowMs`: reset headers are in whole
 * Unix seconds, so this way they are exact, and a client that sends again at that instant opens the next
 * window right there and loses no time.
 */
function openWindow(windows: Map<string, Window>, key: string, now: number, windowMs: number): Window {
  let window = windows.get(key);
  if (!window || now >= window.resetAt) {
    window = { resetAt: Math.floor(now / 1000) * 1000 + windowMs, requests: 0, tokens: 0 };
    windows.set(key, window);
  }
  return window;
}

function positive(value: number | undefined, fallback: number): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : fallback;
}

export interface RateLimitOptions {
  /** window length in ms (default 60000: the tier table is per minute) */
  windowMs?: number;
  /**
   * the token window's length in ms (default `windowMs`): a window of its own, with its own `x-ratelimit-reset-tokens`,
   * as live, where a token-limit 429 has requests left and a near token reset while the request reset is a minute away
   */
  tokenWindowMs?: number;
  /** abuse block: more than `abuseMaxFailures` failures in `abuseWindowMs` block for `abuseBlockMs` */
  abuseMaxFailures?: number;
  /** the unsupported-feature budget: capability-gate 400s per `abuseWindowMs` before the block (default 200) */
  unsupportedFeatureMaxFailures?: number;
  abuseWindowMs?: number;
  abuseBlockMs?: number;
  /** override a tier's limits, e.g. { XS: { requests: 10, tokens: 1000 } } */
  tiers?: Partial<Record<"XS" | "S" | "M" | "L", { requests?: number; tokens?: number }>>;
  /** override the requests per window of the other model types (spec part 8), e.g. { image: { requests: 2 } } */
  types?: Partial<Record<"image" | "audio" | "embedding" | "video", { requests?: number }>>;
  /**
   * The crypto RPC proxy's own cap per key: `requests` per `windowMs` (default 100, the paid tier's published
   * per-minute cap, over `windowMs` above, else 60 s). Its 429 carries `X-RateLimit-Limit`, `-Remaining`, `-Reset`.
   */
  cryptoRpc?: {
    requests?: number;
    windowMs?: number;
    /**
     * One request at a time per caller: a second waits up to this many ms for the first to finish, then gets
     * `429 "Another request for this user is in flight"` (live default 500; seed default and `false`: no such rule)
     */
    inFlightWaitMs?: number | false;
  };
  /** false: no rate limiting at all */
  enabled?: boolean;
  /** units of `x-ratelimit-reset-requests` / `-tokens`: Unix ms (`"ms"`, live default) or the seed's (`"s"`) */
  resetUnit?: "ms" | "s";
  /** what counts toward the abuse block: non-429 4xx (`"4xx"`, live default) or every non-success (`"all"`, seed) */
  abuseCounts?: "4xx" | "all";
  /** send the error budget (`x-ratelimit-remaining`, `x-ratelimit-resets`) on credentialed answers (live default) */
  errorBudgetHeaders?: boolean;
}
