/**
 * Server-sent events for chat completion streams: `data: {chunk}` events, then `data: [DONE]`.
 *
 * Hand-written rather than `eventsource-parser` or the `openai` SDK's `Stream` for two reasons: speed (one
 * pass over the decoded text, one `JSON.parse` per event, no per-event objects besides the chunk itself; the
 * SDK's parser is most of its stream overhead), and the service's rules: an error after the headers were
 * sent arrives in-band as `data: {"error": ...}` and must be raised, not read as a chunk, and a stream that
 * ends before `[DONE]` was cut and must not pass for a complete answer.
 */
import { AbortError, ResponseTooLargeError, ServiceError, StreamError } from "../http/errors.js";
import type { ServiceResponseHeaders } from "../http/headers.js";
import { DEFAULT_MAX_EVENT_BYTES } from "../http/body-guard.js";

export interface SseOptions {
  signal?: AbortSignal;
  /** parsed response headers, kept on errors raised from the stream */
  headers?: ServiceResponseHeaders;
  /**
   * largest single event (its data, and a line still being read), in characters of the decoded text; past it
   * a ResponseTooLargeError (default 32 MiB)
   */
  maxEventBytes?: number;
}

function inBandError(payload: Record<string, unknown>, headers?: ServiceResponseHeaders): StreamError {
  const err = payload.error;
  let message = "stream error";
  let code: string | undefined;
  if (typeof err === "string") message = err;
  else if (err && typeof err === "object") {
    const e = err as { message?: unknown; code?: unknown; type?: unknown };
    if (typeof e.message === "string") message = e.message;
    if (typeof e.code === "string") code = e.code;
    else if (typeof e.type === "string") code = e.type;
  }
  if (!code && typeof payload.code === "string") code = payload.code;
  return new StreamError(`in-band error in stream: ${message}`, { body: payload, code, headers });
}

/** Yields each JSON event of an SSE body until `[DONE]`. Throws `StreamError` on in-band errors and cuts. */
export async function* parseSseJson<T = Record<string, unknown>>(
  body: ReadableStream<Uint8Array> | null,
  options: SseOptions = {},
): AsyncGenerator<T> {
  for await (const batch of parseSseBatches<T>(body, options)) yield* batch;
}

/**
 * Same, but yields the events of each network read as one array: one async step per read instead of per
 * event, which is most of the per-chunk cost of a generator pipeline.
 *
 * Linear in the body: each read is scanned once for line ends (LF, CRLF, or a lone CR), and a line that spans
 * reads is kept as the pieces' concatenation, never re-scanned, so one 16 MB event costs one pass.
 */
export async function* parseSseBatches<T = Record<string, unknown>>(
  body: ReadableStream<Uint8Array> | null,
  options: SseOptions = {},
): AsyncGenerator<T[]> {
  if (!body) throw new StreamError("stream response has no body", { headers: options.headers });
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const { signal, headers } = options;
  const maxEvent = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  const tooLarge = () =>
    new ResponseTooLargeError(
      `stream event larger than maxEventBytes (${maxEvent} characters); raise maxEventBytes if events this large are expected`,
      { option: "maxEventBytes", limit: maxEvent, headers },
    );
  /** the line being read, from the reads before this one (never scanned again) */
  let carry = "";
  /** the last read ended with CR: a LF first in the next read belongs to it (CRLF split between reads) */
  let skipLF = false;
  let data: string | undefined;
  let done = false;
  try {
    while (!done) {
      let read: ReadableStreamReadResult<Uint8Array>;
      try {
        read = await reader.read();
      } catch (err) {
        // the stack's typed ends (idleTimeout, totalTimeout, the caller's abort) pass as they are
        if (err instanceof ServiceError) throw err;
        if (signal?.aborted) throw new AbortError("stream aborted", { cause: signal.reason });
        throw new StreamError(`stream broken before [DONE]: ${(err as Error)?.message ?? String(err)}`, {
          cause: err,
          headers,
        });
      }
      // A last event without its blank line still counts.
      const text = read.done ? `${decoder.decode()}\n\n` : decoder.decode(read.value, { stream: true });
      let start = 0;
      if (skipLF) {
        skipLF = false;
        if (text.charCodeAt(0) === 10) start = 1;
      }
      // next LF and CR at or after `start`; each search resumes past the last, so each character is scanned once
      let lf = text.indexOf("\n", start);
      let cr = text.indexOf("\r", start);
      const batch: T[] = [];
      for (;;) {
        if (lf !== -1 && lf < start) lf = text.indexOf("\n", start);
        if (cr !== -1 && cr < start) cr = text.indexOf("\r", start);
        const end = cr === -1 || (lf !== -1 && lf < cr) ? lf : cr;
        if (end === -1) break;
        let line = text.slice(start, end);
        if (carry !== "") {
          line = carry + line;
          carry = "";
        }
        start = end + 1;
        if (end === cr) {
          if (start < text.length) {
            if (text.charCodeAt(start) === 10) start++;
          } else skipLF = true;
        }
        if (line.length === 0) {
          if (data === undefined) continue;
          const payload = data;
          data = undefined;
          if (payload === "[DONE]") {
            done = true;
            break;
          }
          let parsed: unknown;
          try {
            parsed = JSON.parse(payload);
          } catch {
            throw new StreamError(`stream event is not JSON: ${payload.slice(0, 200)}`, { body: payload, headers });
          }
          if (parsed && typeof parsed === "object" && "error" in parsed && (parsed as { error: unknown }).error) {
            if (batch.length) yield batch.splice(0); // what came before the error still counts
            throw inBandError(parsed as Record<string, unknown>, headers);
          }
          batch.push(parsed as T);
          continue;
        }
        if (line.charCodeAt(0) === 58 /* ':' comment */) continue;
        if (line.startsWith("data")) {
          // `data:value`, `data: value`, or a bare `data` (an empty value)
          let value: string;
          if (line.charCodeAt(4) === 58) value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
          else if (line.length === 4) value = "";
          else continue;
          data = data === undefined ? value : `${data}\n${value}`;
          if (data.length > maxEvent) throw tooLarge();
        }
        // `event:`, `id:`, `retry:` carry nothing the chat stream uses.
      }
      if (!done && start < text.length) {
        carry = start === 0 ? carry + text : carry + text.slice(start);
        if (carry.length + (data?.length ?? 0) > maxEvent) throw tooLarge();
      }
      if (batch.length) {
        yield batch;
        if (signal?.aborted) throw new AbortError("stream aborted", { cause: signal.reason });
      }
      if (read.done && !done) {
        throw new StreamError("stream ended before [DONE] (cut mid-way)", { headers });
      }
    }
    // Drain the (normally empty) rest so the connection can be reused.
    try {
      for (let i = 0; i < 4; i++) if ((await reader.read()).done) break;
    } catch {
      // the answer is complete; a broken tail does not matter
    }
  } finally {
    await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
