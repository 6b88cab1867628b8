/**
 * In-band stream errors and refusals as typed errors, and the retry of a stream that failed transiently before it
 * said anything.
 *
 * The live service ends a failed stream with `{"error": {type, code, param, message}}` then `[DONE]`; `type` is
 * `server_error` or `api_error` (or `content_filter_error`). Each becomes a typed error carrying them:
 * - `code: "model_overloaded"` (with `retry_after`): a `ModelOverloadedError` with `retryAfterMs`.
 * - `type: "content_filter_error"` / `code: "content_blocked_by_provider"`: a `ContentFilterError` carrying the
 *   partial content.
 * - anything else: an `InBandStreamError` with `type`, `code`, `param` and `transient`: an outage
 *   (`upstream_error`, or `type: "server_error"`) is transient; `e2ee_attestation_stale` (the caller must attest
 *   and encrypt again) and `api_error` are not, as the same request would fail the same way.
 * Before any text, reasoning or tool-call delta reached the caller, a transient one is requested again (after
 * `retry_after` for an overloaded model, else a backoff step; `withTransientRetries`), so the caller sees one clean
 * answer; after that it is the caller's error: content was delivered, and a second answer would not be the same.
 * - `finish_reason: "content_filter"` (a 200 whose answer was refused or cut): a `ContentFilterError` too, thrown
 *   by `invoke()` and by the stream at its end, never a message with a flag. A refused answer must not pass for an
 *   answer: an agent would act on the cut text, and structured output would fail with a parse error that hides
 *   the refusal. The error keeps the partial content and the body (`usage`, `cost`).
 */
import { abortErrorOf, ContentFilterError, InBandStreamError, ModelOverloadedError, ServiceError, StreamError } from "../http/errors.js";
import type { ServiceResponseHeaders } from "../http/headers.js";
import { retryAfterMs } from "../http/headers.js";
import { DEFAULT_RETRY, backoffDelay, sleep } from "../http/retry.js";
import { inBandOverload, transientInBand } from "../http/retry-rules.js";

/** the stack's own default `retry.maxRetries`, for models that did not set one */
export const DEFAULT_STREAM_RETRIES = DEFAULT_RETRY.maxRetries;
/** the longest `retry_after` waited for in-band; a longer one surfaces at once (as the stack's `maxRateLimitWaitMs`) */
export const MAX_OVERLOAD_WAIT_MS = DEFAULT_RETRY.maxRateLimitWaitMs;

/** The members of an in-band error object, as sent. */
export interface InBandErrorFields {
  type?: string;
  code?: string;
  param?: string;
  message?: string;
}

/** codes that name a failure a fresh identical request meets again, whatever their type */
const NOT_TRANSIENT_CODES: ReadonlySet<string> = new Set(["e2ee_attestation_stale"]);

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** The `{type, code, param, message}` of an in-band stream error (the parser's, or a typed one), else undefined. */
export function inBandErrorOf(err: unknown): InBandErrorFields | undefined {
  const source = err instanceof StreamError ? err : err instanceof ServiceError && err.cause instanceof StreamError ? err.cause : undefined;
  const body = source?.body as { error?: unknown } | undefined;
  const e =
    body && typeof body === "object" && body.error && typeof body.error === "object" ? (body.error as Record<string, unknown>) : undefined;
  if (!e) return undefined;
  return { type: str(e.type), code: str(e.code), param: str(e.param), message: str(e.message) };
}

/**
 * The typed error for an error raised while a stream was read: an in-band error becomes its class (with `partial`,
 * the content that had arrived); anything else (a cut, a bad event) is returned as it is.
 */
export function typedStreamError(err: unknown, partial: string): unknown {
  if (!(err instanceof StreamError)) return err;
  const inBand = inBandErrorOf(err);
  if (!inBand) return err;
  const retryAfter = (err.body as { error?: { retry_after?: unknown } }).error?.retry_after;
  const init = { status: err.status, code: inBand.code ?? err.code, body: err.body, headers: err.headers, cause: err };
  const detail = inBand.message ? `: ${inBand.message}` : "";
  if (inBand.code === "model_overloaded") {
    const wait = retryAfterMs(retryAfter === undefined || retryAfter === null ? null : String(retryAfter));
    return new ModelOverloadedError(`the model is overloaded (in-band stream error)${detail}`, {
      ...init,
      ...(wait !== undefined ? { retryAfterMs: wait, resetAt: new Date(Date.now() + wait) } : {}),
    });
  }
  if (inBand.type === "content_filter_error" || inBand.code === "content_blocked_by_provider") {
    return new ContentFilterError(`the provider blocked the answer mid-stream (content filter)${detail}`, { ...init, partial });
  }
  const transient = !NOT_TRANSIENT_CODES.has(inBand.code ?? "") && (inBand.code === "upstream_error" || inBand.type === "server_error");
  const what = [inBand.type, inBand.code].filter(Boolean).join(" ") || "error";
  return new InBandStreamError(`in-band error in stream (${what}${inBand.param ? `, param ${inBand.param}` : ""})${detail}`, {
    ...init,
    type: inBand.type,
    param: inBand.param,
    transient,
    partial,
  });
}

/** A stream's parsed batches, its in-band errors typed (`typedStreamError`, with the content so far). */
export async function* withTypedStreamErrors<T>(batches: AsyncGenerator<T>, partial: () => string): AsyncGenerator<T> {
  try {
    yield* batches;
  } catch (err) {
    throw typedStreamError(err, partial());
  }
}

/** A refusal (`finish_reason: "content_filter"`) of a 200 answer, JSON or streamed. */
export function refusalError(partial: string, body: unknown, headers?: ServiceResponseHeaders): ContentFilterError {
  return new ContentFilterError(
    'the model refused or cut the answer (finish_reason "content_filter"); the partial content is on the error',
    { status: 200, code: "content_filter", body, headers, partial },
  );
}

/** Whether one attempt's stream has handed the caller text, reasoning or a tool call (then it is never re-sent). */
export interface StreamProgress {
  started: boolean;
}

/**
 * Runs `attempt` and, when it fails in-band transiently (`model_overloaded`, or an `InBandStreamError` marked
 * `transient`) before it `started`, runs it again after the `retry_after` the service asked for (a backoff step
 * when it named none), at most `retries` times, within the caller's `signal` (an abort or deadline ends the wait as
 * a typed AbortError/TimeoutError). A wait longer than MAX_OVERLOAD_WAIT_MS is not waited: the error surfaces.
 */
export async function* withTransientRetries<T>(
  attempt: (progress: StreamProgress) => AsyncGenerator<T>,
  options: { retries: number; signal?: AbortSignal },
): AsyncGenerator<T> {
  for (let n = 0; ; n++) {
    const progress: StreamProgress = { started: false };
    try {
      yield* attempt(progress);
      return;
    } catch (err) {
      // only the in-band kinds (retry-rules.ts): an overloaded 429 or a 5xx was retried by the stack already. A
      // loop of its own: the error comes after a 200 whose body the stack has handed on, past its retry loop
      if (!transientInBand(err) || progress.started || n >= options.retries) throw err;
      const wait = (inBandOverload(err) ? err.retryAfterMs : undefined) ?? backoffDelay(n, DEFAULT_RETRY);
      if (wait > MAX_OVERLOAD_WAIT_MS) throw err;
      try {
        await sleep(wait, options.signal);
      } catch (reason) {
        throw abortErrorOf(options.signal?.aborted ? options.signal.reason : reason) as ServiceError;
      }
    }
  }
}
