/**
 * Server-sent events for chat completion streams: `data: {chunk}` events, then `data: [DONE]`.
 *
 * Hand-written rather than `eventsource-parser` or the `openai` SDK's `Stream` for two reasons: speed (one
 * pass over the decoded text, one `JSON.parse` per event, no per-event objects besides the chunk itself; the
 * SDK's parser is most of its stream overhead), and the service's rules: an error after the headers were
 * sent arrives in-band as `data: {"error": ...}` and must be raised, not read as a chunk, and a stream that
 * ends before `[DONE]` was cut and must not pass for a complete answer.
 */
import { AbortError, StreamError } from "../http/errors.js";
import type { ServiceResponseHeaders } from "../http/headers.js";

export interface SseOptions {
  signal?: AbortSignal;
  /** parsed response headers, kept on errors raised from the stream */
  headers?: ServiceResponseHeaders;
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
 */
export async function* parseSseBatches<T = Record<string, unknown>>(
  body: ReadableStream<Uint8Array> | null,
  options: SseOptions = {},
): AsyncGenerator<T[]> {
  if (!body) throw new StreamError("stream response has no body", { headers: options.headers });
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const { signal, headers } = options;
  let buffer = "";
  let data: string | undefined;
  let done = false;
  try {
    while (!done) {
      let read: ReadableStreamReadResult<Uint8Array>;
      try {
        read = await reader.read();
      } catch (err) {
        if (signal?.aborted) throw new AbortError("stream aborted", { cause: signal.reason });
        throw new StreamError(`stream broken before [DONE]: ${(err as Error)?.message ?? String(err)}`, {
          cause: err,
          headers,
        });
      }
      if (read.done) {
        buffer += decoder.decode();
        // A last event without its blank line still counts.
        buffer += "\n\n";
      } else {
        buffer += decoder.decode(read.value, { stream: true });
      }
      let start = 0;
      const batch: T[] = [];
      for (;;) {
        const nl = buffer.indexOf("\n", start);
        if (nl === -1) break;
        let line = buffer.slice(start, nl);
        start = nl + 1;
        if (line.endsWith("\r")) line = line.slice(0, -1);
        if (line === "") {
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
        if (line.startsWith("data:")) {
          const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
          data = data === undefined ? value : `${data}\n${value}`;
        }
        // `event:`, `id:`, `retry:` carry nothing the chat stream uses.
      }
      buffer = buffer.slice(start);
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
