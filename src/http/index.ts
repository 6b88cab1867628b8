/** The transport: the fetch stack, its layers, typed errors and parsed headers (no import from any floor above). */
export * from "./errors.js";
export * from "./status-errors.js";
export {
  ModelAccessDeniedError,
  ModelOfflineError,
  UnsupportedParameterError,
  ContentViolationError,
  type ModelAccessReason,
} from "./model-errors.js";
export * from "./headers.js";
export * from "./fetch-stack.js";
export { DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_RESPONSE_BYTES, type BodyLimits } from "./body-guard.js";
export { DEFAULT_MAX_REQUEST_BYTES } from "./request-size.js";
export { AbuseGuard, abuseGuardLayer, type AbuseGuardOptions } from "./abuse-guard.js";
export { retryLayer, backoffDelay, rateLimitWaitMs, sleep, RETRYABLE_STATUSES, type RetryOptions } from "./retry.js";
// ServiceClient and the stack assembly live above the faces: src/client.ts, src/stack.ts
export { RateLimiter, pacingLayer, TYPE_LIMITS, type ModelType, type PacingOptions } from "./pacing.js";
export { sendFollowingSafely, carriesCredentials, CREDENTIAL_HEADERS, PAYMENT_HEADERS, MAX_REDIRECTS } from "./redirects.js";
export { ServiceClock, CLOCK_RETRY_MS, MAX_CLOCK_OFFSET_MS } from "./clock.js";
export {
  ServiceContext,
  createServiceContext,
  defaultServiceContext,
  contextKey,
  type ContextKey,
  type ServiceContextOptions,
} from "./context.js";
