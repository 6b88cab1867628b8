/**
 * In-band stream errors and refusals as typed errors, and the retry of a stream the model refused as overloaded
 * before it said anything.
 *
 * - `{"error": {code: "model_overloaded", retry_after}}`: a `ModelOverloadedError` with `retryAfterMs`. Before any
 *   text, reasoning or tool-call delta reached the caller, the stream is requested again after `retry_after`
 *   (`withOverloadRetries`), so the caller sees one clean answer; after that it is the caller's error.
 * - `{"error": {type: "content_filter_error", code: "content_blocked_by_provider"}}`: a `ContentFilterError`
 *   carrying the partial content.
 * - `finish_reason: "content_filter"` (a 200 whose answer was refused or cut): a `ContentFilterError` too, thrown
 *   by `invoke()` and by the stream at its end, never a message with a flag. A refused answer must not pass for an
 *   answer: an agent would act on the cut text, and structured output would fail with a parse error that hides
 *   the refusal. The error keeps the partial content and the body (`usage`, `cost`).
 * - anything else (`upstream_error`, ...) stays the parser's `StreamError`.
 */
import { abortErrorOf, ContentFilterError, ModelOverloadedError, StreamError, type ServiceError } from "../http/errors.js";
import type { ServiceResponseHeaders } from "../http/headers.js";
import { retryAfterMs } from "../http/headers.js";
import { DEFAULT_RETRY, backoffDelay, sleep } from "../http/retry.js";

/** the stack's own default `retry.maxRetries`, for models that did not set one */
export const DEFAULT_STREAM_RETRIES = DEFAULT_RETRY.maxRetries;
/** the longest `retry_after` waited for in-band; a longer one surfaces at once (as the stack's `maxRateLimitWaitMs`) */
export const MAX_OVERLOAD_WAIT_MS = DEFAULT_RETRY.maxRateLimitWaitMs;

type InBandBody = { error?: { code?: unknown; type?: unknown; message?: unknown; retry_after?: unknown } };

function inBandOf(err: StreamError): InBandBody["error"] | undefined {
  const body = err.body as InBandBody | undefined;
  return body && typeof body === "object" && body.error && typeof body.error === "object" ? body.error : undefined;
}

/**
 * The typed error for an error raised while a stream was read: an in-band `model_overloaded` or content filter
 * becomes its own class (with `partial`, the content that had arrived); anything else is returned as it is.
 */
export function typedStreamError(err: unknown, partial: string): unknown {
  if (!(err instanceof StreamError)) return err;
  const inBand = inBandOf(err);
  if (!inBand) return err;
  const init = { status: err.status, code: err.code, body: err.body, headers: err.headers, cause: err };
  const detail = typeof inBand.message === "string" ? `: ${inBand.message}` : "";
  if (inBand.code === "model_overloaded") {
    const wait = retryAfterMs(inBand.retry_after === undefined || inBand.retry_after === null ? null : String(inBand.retry_after));
    return new ModelOverloadedError(`the model is overloaded (in-band stream error)${detail}`, {
      ...init,
      ...(wait !== undefined ? { retryAfterMs: wait, resetAt: new Date(Date.now() + wait) } : {}),
    });
  }
  if (inBand.type === "content_filter_error" || inBand.code === "content_blocked_by_provider") {
    return new ContentFilterError(`the provider blocked the answer mid-stream (content filter)${detail}`, { ...init, partial });
  }
  return err;
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
 * Runs `attempt` and, when it fails with an in-band `model_overloaded` before it `started`, runs it again after
 * the `retry_after` the service asked for (a backoff step when it named none), at most `retries` times, within
 * the caller's `signal` (an abort or deadline ends the wait as a typed AbortError/TimeoutError). A wait longer
 * than MAX_OVERLOAD_WAIT_MS is not waited: the error surfaces.
 */
export async function* withOverloadRetries<T>(
  attempt: (progress: StreamProgress) => AsyncGenerator<T>,
  options: { retries: number; signal?: AbortSignal },
): AsyncGenerator<T> {
  for (let n = 0; ; n++) {
    const progress: StreamProgress = { started: false };
    try {
      yield* attempt(progress);
      return;
    } catch (err) {
      // only the in-band kind: an overloaded 429 was retried by the stack already
      const inBand = err instanceof ModelOverloadedError && err.cause instanceof StreamError;
      if (!inBand || progress.started || n >= options.retries) throw err;
      const wait = (err as ModelOverloadedError).retryAfterMs ?? backoffDelay(n, DEFAULT_RETRY);
      if (wait > MAX_OVERLOAD_WAIT_MS) throw err;
      try {
        await sleep(wait, options.signal);
      } catch (reason) {
        throw abortErrorOf(options.signal?.aborted ? options.signal.reason : reason) as ServiceError;
      }
    }
  }
}
