/**
 * Checks of the fetch stack's options (ConfigurationError) and per-request hints (ValidationError), before any
 * request. Each message names the option. Durations are capped at what Node's timers hold: above 2^31-1 ms
 * (or Infinity) `setTimeout` warns and fires after 1 ms, so `timeout: Infinity` used to time out at once.
 */
import { ConfigurationError, ValidationError } from "./errors.js";
import { MODEL_TYPES } from "./types.js";
import { checkRouteLimits } from "./route-limits.js";

/** the longest delay `setTimeout` holds (about 24.8 days) */
export const MAX_TIMER_MS = 2 ** 31 - 1;

type ErrorClass = typeof ConfigurationError | typeof ValidationError;

function describe(value: unknown): string {
  if (typeof value === "number" || typeof value === "boolean" || value === null || value === undefined) return String(value);
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  return Array.isArray(value) ? "an array" : `a ${typeof value}`;
}

/** A duration in ms a timer can hold: `positive` (a timeout) or non-negative (a delay). */
export function checkMs(value: unknown, name: string, positive: boolean, Err: ErrorClass = ConfigurationError): void {
  if (typeof value !== "number" || !(positive ? value > 0 : value >= 0) || !(value <= MAX_TIMER_MS)) {
    throw new Err(
      `${name} must be a ${positive ? "positive" : "non-negative"} number of ms, at most ${MAX_TIMER_MS} (got ${describe(value)})`,
    );
  }
}

function checkCount(value: unknown, name: string, Err: ErrorClass = ConfigurationError): void {
  if (!(typeof value === "number" && Number.isInteger(value) && value >= 0)) {
    throw new Err(`${name} must be a non-negative integer (got ${describe(value)})`);
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `false`, absent, or an object whose listed members are checked. */
function checkGroup(
  value: unknown,
  name: string,
  members: Record<string, (v: unknown, path: string) => void>,
  allowFalse: boolean,
): void {
  if (value === undefined || (allowFalse && value === false)) return;
  if (!isPlainObject(value)) {
    throw new ConfigurationError(`${name} must be ${allowFalse ? "false or " : ""}an object of options (got ${describe(value)})`);
  }
  for (const [key, check] of Object.entries(members)) {
    if (value[key] !== undefined) check(value[key], `${name}.${key}`);
  }
}

const delay = (v: unknown, path: string) => checkMs(v, path, false);
const positiveInt = (v: unknown, path: string) => {
  if (!(typeof v === "number" && Number.isInteger(v) && v > 0)) throw new ConfigurationError(`${path} must be a positive integer (got ${describe(v)})`);
};
const fn = (v: unknown, path: string) => {
  if (typeof v !== "function") throw new ConfigurationError(`${path} must be a function (got ${describe(v)})`);
};

/** `pacing.typeLimits`: requests per window by model type, each a positive integer; a misspelt type is refused. */
function checkTypeLimits(value: unknown, path: string): void {
  if (!isPlainObject(value)) throw new ConfigurationError(`${path} must be an object of model types to requests per window (got ${describe(value)})`);
  for (const [type, limit] of Object.entries(value)) {
    if (!(MODEL_TYPES as readonly string[]).includes(type)) {
      throw new ConfigurationError(`${path} has an unknown model type ${describe(type)} (one of ${MODEL_TYPES.join(", ")})`);
    }
    if (limit !== undefined && !(typeof limit === "number" && Number.isInteger(limit) && limit > 0)) {
      throw new ConfigurationError(`${path}.${type} must be a positive integer (got ${describe(limit)})`);
    }
  }
}

/** The options `createServiceFetch` reads itself (`abuseGuard` is checked by AbuseGuard, `baseUrl` by the config). */
export function validateStackOptions(options: {
  timeout?: unknown;
  fetch?: unknown;
  retry?: unknown;
  pacing?: unknown;
  concurrency?: unknown;
  topUp?: unknown;
  defaultHeaders?: unknown;
}): void {
  if (options.timeout !== undefined) checkMs(options.timeout, "timeout", true);
  if (options.fetch !== undefined) fn(options.fetch, "fetch");
  checkGroup(
    options.retry,
    "retry",
    {
      maxRetries: (v, p) => checkCount(v, p),
      baseDelayMs: delay,
      maxDelayMs: delay,
      maxRateLimitWaitMs: delay,
      random: fn,
      sleep: fn,
    },
    true,
  );
  checkGroup(
    options.pacing,
    "pacing",
    { resetMarginMs: delay, maxHoldMs: delay, typeLimits: checkTypeLimits, typeWindowMs: (v, p) => checkMs(v, p, true), routeLimits: checkRouteLimits, routeWindowMs: (v, p) => checkMs(v, p, true) },
    true,
  );
  checkGroup(
    options.concurrency,
    "concurrency",
    { perWallet: positiveInt, cryptoRpc: positiveInt, cryptoRpcBatchStallMs: delay, cryptoRpcBatchMaxCount: positiveInt, cryptoRpcItemCredits: fn },
    true,
  );
  checkGroup(
    options.topUp,
    "topUp",
    { topUpTimeoutMs: (v, p) => checkMs(v, p, true), maxResends: (v, p) => checkCount(v, p), resendDelayMs: delay, topUpLeaseMs: (v, p) => checkMs(v, p, true) },
    false,
  );
  const headers = options.defaultHeaders;
  if (headers !== undefined) {
    if (!isPlainObject(headers)) throw new ConfigurationError(`defaultHeaders must be an object of header names to values (got ${describe(headers)})`);
    for (const [key, value] of Object.entries(headers)) {
      try {
        if (typeof value !== "string") throw new TypeError("not a string");
        new Headers([[key, value]]);
      } catch {
        // the name only: a header value may be a secret
        throw new ConfigurationError(`defaultHeaders[${JSON.stringify(key)}] is not a valid header (a token name and a string value without CR/LF)`);
      }
    }
  }
}

/** Per-request hints, checked before the request enters the stack. */
export function validateHints(hints: { timeout?: unknown; estimatedTokens?: unknown; modelType?: unknown } | undefined): void {
  if (!hints) return;
  if (hints.timeout !== undefined) checkMs(hints.timeout, "timeout", true, ValidationError);
  if (hints.modelType !== undefined && !(MODEL_TYPES as readonly unknown[]).includes(hints.modelType)) {
    throw new ValidationError(`modelType must be one of ${MODEL_TYPES.join(", ")} (got ${describe(hints.modelType)})`);
  }
  const tokens = hints.estimatedTokens;
  if (tokens !== undefined && !(typeof tokens === "number" && Number.isFinite(tokens) && tokens >= 0)) {
    throw new ValidationError(`estimatedTokens must be a non-negative number (got ${describe(tokens)})`);
  }
}
