/**
 * The shape of the parsed response headers (./headers.ts parses them). Kept apart, with no imports, so that the
 * errors, which carry parsed headers, sit below the parsing code: config -> errors -> headers, one way.
 */
export interface RateLimitHeaders {
  limitRequests?: number;
  remainingRequests?: number;
  /** when the request window resets, as sent: Unix ms (live) or Unix seconds (seed) */
  resetRequests?: number;
  /** `resetRequests` as an instant (ms since epoch), whichever unit it came in */
  resetRequestsAtMs?: number;
  limitTokens?: number;
  remainingTokens?: number;
  /** when the token window resets, as sent: Unix ms (live), Unix seconds, or seconds from now (seed) */
  resetTokens?: number;
  /** `resetTokens` as an instant (ms since epoch), computed when the headers were read */
  resetTokensAtMs?: number;
  /**
   * The live error budget: `x-ratelimit-remaining` failures (non-429 4xx) left before the caller is blocked, until
   * `x-ratelimit-resets` (Unix ms). Present only when `x-ratelimit-resets` is (the crypto RPC cap reuses the name
   * `X-RateLimit-Remaining` for its own count).
   */
  errorBudget?: { remaining: number; resetsAtMs: number };
  type?: "user" | "api_key" | "global" | string;
  /** `X-RateLimit-Limit`: the crypto RPC proxy's per-minute cap (sent on its 429s) */
  limit?: number;
  /** `X-RateLimit-Remaining`: requests left in that cap's window */
  remaining?: number;
  /** `X-RateLimit-Reset`: Unix timestamp (seconds) at which that cap's window resets */
  reset?: number;
}

export interface X402PaymentRequired {
  x402Version?: number;
  accepts?: unknown[];
  [key: string]: unknown;
}

export interface ServiceResponseHeaders {
  contentType?: string;
  contentEncoding?: string;
  contentDisposition?: string;
  date?: string;
  /** the request id to quote to support: `X-Request-ID`, else `CF-RAY` */
  requestId?: string;
  /** `x-service-version`: `YYYYMMDD.HHMMSS` */
  version?: string;
  timestamp?: string;
  hostName?: string;
  model?: { id?: string; name?: string; router?: string };
  deprecation?: { warning?: string; date?: string };
  rateLimit?: RateLimitHeaders;
  pagination?: { limit?: number; page?: number; total?: number; totalPages?: number };
  balance?: {
    /** `x-service-balance-usd`: USD credit before the request */
    usd?: number;
    /** `x-service-balance-diem`: staking-token balance before the request */
    diem?: number;
    /** `X-Balance-Remaining`: x402 credit in USD after the request */
    remainingUsd?: number;
  };
  contentPolicy?: {
    isBlurred?: boolean;
    isContentViolation?: boolean;
    isAdultModelContentViolation?: boolean;
    containsMinor?: boolean;
  };
  client?: { middlefaceVersion?: string; mobileVersion?: string; requestTimestampMs?: number };
  controlInstance?: string;
  authRefreshed?: boolean;
  retryCount?: number;
  /** `retry-after` (delay-seconds or an HTTP date) as an instant, ms since epoch, computed when the headers were read */
  retryAfterAtMs?: number;
  /** crypto RPC proxy pricing and idempotency */
  rpc?: { credits?: number; costUsd?: number; requestId?: string; idempotentReplayed?: boolean };
  /** x402: decoded `PAYMENT-REQUIRED` (with a 402) and `PAYMENT-RESPONSE` (after a top-up) */
  paymentRequired?: X402PaymentRequired;
  paymentResponse?: Record<string, unknown>;
}
