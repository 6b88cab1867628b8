/**
 * The checks the layers use on their own options (ConfigurationError; each layer checks the options it reads, in
 * src/http/layers/) and the per-request hints (ValidationError), before any request. Each message names the option. Durations are capped at what Node's timers hold: above 2^31-1 ms
 * (or Infinity) `setTimeout` warns and fires after 1 ms, so `timeout: Infinity` used to time out at once.
 */
import { ConfigurationError, ValidationError } from "./errors.js";
import { MODEL_TYPES } from "./types.js";

/** the longest delay `setTimeout` holds (about 24.8 days) */
export const MAX_TIMER_MS = 2 ** 31 - 1;

type ErrorClass = typeof ConfigurationError | typeof ValidationError;

export function describe(value: unknown): string {
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

export function checkCount(value: unknown, name: string, Err: ErrorClass = ConfigurationError): void {
  if (!(typeof value === "number" && Number.isInteger(value) && value >= 0)) {
    throw new Err(`${name} must be a non-negative integer (got ${describe(value)})`);
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `false`, absent, or an object whose listed members are checked. */
export function checkGroup(
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

export const delay = (v: unknown, path: string) => checkMs(v, path, false);
export const positiveInt = (v: unknown, path: string) => {
  if (!(typeof v === "number" && Number.isInteger(v) && v > 0))
    throw new ConfigurationError(`${path} must be a positive integer (got ${describe(v)})`);
};
export const fn = (v: unknown, path: string) => {
  if (typeof v !== "function") throw new ConfigurationError(`${path} must be a function (got ${describe(v)})`);
};

/** `pacing.typeLimits`: requests per window by model type, each a positive integer; a misspelt type is refused. */
export function checkTypeLimits(value: unknown, path: string): void {
  if (!isPlainObject(value))
    throw new ConfigurationError(`${path} must be an object of model types to requests per window (got ${describe(value)})`);
  for (const [type, limit] of Object.entries(value)) {
    if (!(MODEL_TYPES as readonly string[]).includes(type)) {
      throw new ConfigurationError(`${path} has an unknown model type ${describe(type)} (one of ${MODEL_TYPES.join(", ")})`);
    }
    if (limit !== undefined && !(typeof limit === "number" && Number.isInteger(limit) && limit > 0)) {
      throw new ConfigurationError(`${path}.${type} must be a positive integer (got ${describe(limit)})`);
    }
  }
}

/** A positive whole number of bytes (absent: nothing to check), as the body limits are given. */
export function checkBytes(value: unknown, name: string, Err: ErrorClass = ConfigurationError): void {
  if (value === undefined) return;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    const shown =
      typeof value === "string"
        ? JSON.stringify(value.slice(0, 40))
        : typeof value === "object" && value
          ? `a ${typeof value}`
          : String(value);
    throw new Err(`${name} must be a positive whole number of bytes (got ${shown})`);
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
