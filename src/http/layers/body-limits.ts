/**
 * One attempt's limits: `timeout` until the response headers come, then the body read bounded by idle time
 * (`idleTimeout`), the call's deadline (from the deadline layer) and, for JSON, its size (`maxResponseBytes`); a
 * 429's small body read once and marked with what it means (refusals.ts) for the layers outside; a transport
 * failure mapped to a typed error (NetworkError, TimeoutError, AbortError). `maxEventBytes` is checked here and
 * read by the stream parser. The body wrapping itself is body-guard.ts's `guardBody`. Inside redirects, so each hop
 * of a followed redirect is one attempt with its own `timeout` (the transport's one closure timed the hops together).
 */
import { ConfigurationError, NetworkError, ServiceError, TimeoutError, abortErrorOf } from "../errors.js";
import { checkBytes, checkMs } from "../options.js";
import {
  BODY_GUARD,
  DEFAULT_MAX_EVENT_BYTES,
  DEFAULT_MAX_RESPONSE_BYTES,
  deadlineOf,
  guardBody,
  type BodyGuardOptions,
} from "../body-guard.js";
import { mark429 } from "../refusals.js";
import { urlOf } from "../responses.js";
import type { FetchLayer } from "../types.js";

export interface BodyLimitsLayerOptions {
  /** per-attempt timeout in ms until the response headers arrive (default 120000) */
  timeout?: number;
  /** longest silence in ms while a response body is read (default: `timeout`) */
  idleTimeout?: number;
  /** largest non-stream response body in bytes (default 64 MiB) */
  maxResponseBytes?: number;
  /** largest single stream event, in characters of its text (default 32 MiB) */
  maxEventBytes?: number;
}

export const DEFAULT_TIMEOUT_MS = 120_000;

/** The limits in force, checked once (a ConfigurationError naming the option). `idleTimeout` 0: each request's `timeout`. */
export function bodyLimitsOf(options: BodyLimitsLayerOptions): {
  timeout: number;
  idleTimeout: number;
  maxResponseBytes: number;
  maxEventBytes: number;
} {
  if (options.timeout !== undefined) checkMs(options.timeout, "timeout", true);
  if (options.idleTimeout !== undefined) checkMs(options.idleTimeout, "idleTimeout", true, ConfigurationError);
  checkBytes(options.maxResponseBytes, "maxResponseBytes", ConfigurationError);
  checkBytes(options.maxEventBytes, "maxEventBytes", ConfigurationError);
  return {
    timeout: options.timeout ?? DEFAULT_TIMEOUT_MS,
    idleTimeout: options.idleTimeout ?? 0,
    maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    maxEventBytes: options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES,
  };
}

function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "invalid URL";
  }
}

/** The layer, carrying the limits in force (`limits`, which the stack shows its faces). */
export function bodyLimits(options: BodyLimitsLayerOptions): FetchLayer & { limits: ReturnType<typeof bodyLimitsOf> } {
  const limits = bodyLimitsOf(options);
  const layer: FetchLayer =
    (next) =>
    async (input, init = {}) => {
      const hints = init.service;
      const timeout = hints?.timeout ?? limits.timeout;
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(new TimeoutError(`no response within ${timeout} ms`)), timeout);
      const userSignal = init.signal;
      try {
        // the hints end here: the base is a plain fetch
        const { service: _hints, ...rest } = init;
        const signal = userSignal ? AbortSignal.any([userSignal, controller.signal]) : controller.signal;
        // the body is read after the answer comes: bounded by idle time, the call's deadline and (JSON) size
        const guard: BodyGuardOptions = {
          idleMs: hints?.idleTimeout ?? (limits.idleTimeout || timeout),
          deadline: deadlineOf(hints),
          maxBytes: hints?.maxResponseBytes ?? limits.maxResponseBytes,
          signal: userSignal,
          abort: (reason) => controller.abort(reason),
        };
        // offered to the base, which may build its answer's body through it (then guardBody leaves it as it is);
        // not enumerable: a custom `fetch` sees the init it always saw
        const sent = { ...rest, signal };
        Object.defineProperty(sent, BODY_GUARD, { value: guard });
        const response = await next(input, sent);
        const guarded = guardBody(response, guard);
        // a 429 is read here once and marked with what it means (refusals.ts) for the layers outside
        return response.status === 429 ? await mark429(guarded) : guarded;
      } catch (err) {
        // a caller's deadline (LangChain turns `timeout` into AbortSignal.timeout) is a timeout, not an abort
        if (userSignal?.aborted) throw abortErrorOf(userSignal.reason);
        if (controller.signal.aborted) throw controller.signal.reason as TimeoutError;
        if (err instanceof ServiceError) throw err;
        const cause = err as { message?: string; cause?: { code?: string; message?: string } };
        const detail = cause?.cause?.code ?? cause?.cause?.message ?? cause?.message ?? String(err);
        throw new NetworkError(`network error: ${detail} (${safeOrigin(urlOf(input))})`, { cause: err });
      } finally {
        clearTimeout(timer);
      }
    };
  return Object.assign(layer, { limits });
}
