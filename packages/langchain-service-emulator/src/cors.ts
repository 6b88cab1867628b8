/**
 * CORS for the emulator (option `cors: true`, CLI `--cors`), so a page can call it as the client does from a
 * browser: preflights are answered before the pipeline (a preflight carries no credential and is never counted or
 * limited), and every answer says which origin may read it and which of its headers a page may see. Without the
 * expose list a browser hides every header but the safelisted few, and the client would lose its clock (`Date`, read
 * for sign-ins), its rate limits, balances and payment answers.
 */
import { PAYMENT_HEADERS, SIWX_HEADER, SIWX_LEGACY_HEADER, type BrandNames } from "langchain-service";

/** The request headers the client sends beyond the safelisted ones: credentials, payments, idempotency. */
export const CORS_ALLOWED_HEADERS = [
  "authorization",
  "content-type",
  "accept",
  SIWX_HEADER.toLowerCase(),
  SIWX_LEGACY_HEADER.toLowerCase(),
  ...PAYMENT_HEADERS,
  "idempotency-key",
] as const;

export const CORS_ALLOWED_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

/** How long a browser may keep a preflight's answer (seconds). */
export const CORS_MAX_AGE_SECONDS = 600;

/** The response headers the client reads (src/http/headers.ts and the x402 layer), under the brand's prefix. */
export function corsExposedHeaders(names: Pick<BrandNames, "headerPrefix">): string[] {
  const p = names.headerPrefix;
  return [
    "date",
    "content-encoding",
    "content-disposition",
    "content-length",
    "retry-after",
    "x-request-id",
    "cf-ray",
    ...["limit", "remaining", "reset"].flatMap((w) => [`x-ratelimit-${w}-requests`, `x-ratelimit-${w}-tokens`, `x-ratelimit-${w}`]),
    "x-ratelimit-resets",
    "x-ratelimit-type",
    "x-pagination-limit",
    "x-pagination-page",
    "x-pagination-total",
    "x-pagination-total-pages",
    "x-balance-remaining",
    "x-auth-refreshed",
    "x-retry-count",
    "idempotent-replayed",
    "payment-required",
    "payment-response",
    "x-payment-response",
    ...[
      "version",
      "timestamp",
      "host-name",
      "model-id",
      "model-name",
      "model-router",
      "model-deprecation-warning",
      "model-deprecation-date",
      "balance-usd",
      "balance-diem",
      "rpc-credits",
      "rpc-cost-usd",
      "is-blurred",
      "is-content-violation",
      "is-adult-model-content-violation",
      "contains-minor",
      "control-instance",
    ].map((h) => `${p}${h}`),
  ];
}

/** The headers every answer carries when CORS is on (the client sends no cookies: any origin may read). */
export function corsHeaders(names: Pick<BrandNames, "headerPrefix">): Record<string, string> {
  return {
    "access-control-allow-origin": "*",
    "access-control-expose-headers": corsExposedHeaders(names).join(", "),
  };
}

/** The answer to a preflight (`OPTIONS` with `Access-Control-Request-Method`): 204 and what may be sent. */
export function preflightHeaders(names: Pick<BrandNames, "headerPrefix">): Record<string, string> {
  return {
    ...corsHeaders(names),
    "access-control-allow-methods": CORS_ALLOWED_METHODS.join(", "),
    "access-control-allow-headers": CORS_ALLOWED_HEADERS.join(", "),
    "access-control-max-age": String(CORS_MAX_AGE_SECONDS),
    "content-length": "0",
  };
}
