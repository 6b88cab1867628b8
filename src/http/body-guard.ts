/**
 * Bounds on reading a response body, for every face of the stack (ChatService JSON and streams,
 * ServiceClient, crypto tools, the `openai` SDK plugged onto the stack):
 *
 * - `idleTimeout`: the longest silence while a read is pending. `timeout` only covers the wait for the
 *   headers; a service that sends its headers and then stops would otherwise hang the read forever.
 * - `totalTimeout`: one deadline for the whole call (every attempt, the retries' and pacing waits, payment, and
 *   reading the body to its end).
 * - `maxResponseBytes`: the largest non-stream body read (streams are capped per event by the SSE parser,
 *   `maxEventBytes`).
 *
 * A body is read only when its consumer reads (a slow consumer is never "idle"), with one lazily re-armed timer
 * instead of a timer per chunk.
 */
import { ConfigurationError, ResponseTooLargeError, TimeoutError, ValidationError, abortErrorOf } from "./errors.js";
import type { FetchLike } from "./types.js";
import { checkMs } from "./options.js";

/** 64 MiB: far above any chat completion; large crypto RPC answers (logs, full blocks) still fit */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
/** 32 MiB: a stream event is one chunk of an answer, normally well under a kilobyte */
export const DEFAULT_MAX_EVENT_BYTES = 32 * 1024 * 1024;

/** The stack's effective limits (`ServiceFetch.limits`). */
export interface BodyLimits {
  /** ms of silence allowed while reading a body (default: `timeout`) */
  idleTimeout: number;
  /** ms for a whole call, body included; undefined: no overall deadline */
  totalTimeout?: number;
  /** largest non-stream body, in bytes */
  maxResponseBytes: number;
  /** largest single stream event, in characters of its decoded text */
  maxEventBytes: number;
  /** largest JSON request body sent, in bytes of UTF-8 (`Infinity`: not checked) */
  maxRequestBytes: number;
}

type ErrorClass = typeof ConfigurationError | typeof ValidationError;

function shown(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value.slice(0, 40)) : typeof value === "object" && value ? `a ${typeof value}` : String(value);
}

function checkTimer(value: unknown, name: string, Err: ErrorClass): void {
  if (value !== undefined) checkMs(value, name, true, Err);
}

function checkBytes(value: unknown, name: string, Err: ErrorClass): void {
  if (value === undefined) return;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    throw new Err(`${name} must be a positive whole number of bytes (got ${shown(value)})`);
  }
}

/** Per-request hints this module reads: a ValidationError, like the other hints. */
function validateBodyHints(hints: { idleTimeout?: unknown; totalTimeout?: unknown; maxResponseBytes?: unknown }): void {
  checkTimer(hints.idleTimeout, "idleTimeout", ValidationError);
  checkTimer(hints.totalTimeout, "totalTimeout", ValidationError);
  checkBytes(hints.maxResponseBytes, "maxResponseBytes", ValidationError);
}

/** The call's deadline, carried on the hints from the deadline layer to the transport (not a public hint). */
const DEADLINE = Symbol("serviceDeadline");
interface Deadline {
  at: number;
  ms: number;
}

export function deadlineOf(hints: object | undefined): Deadline | undefined {
  return hints ? (hints as { [DEADLINE]?: Deadline })[DEADLINE] : undefined;
}

function totalTimeoutError(ms: number): TimeoutError {
  return new TimeoutError(`no complete answer within ${ms} ms (totalTimeout)`);
}

function unref(timer: ReturnType<typeof setTimeout>): ReturnType<typeof setTimeout> {
  // a guard must never keep a process alive on its own
  (timer as { unref?: () => void }).unref?.();
  return timer;
}

/**
 * Checks the per-request body hints and, when a `totalTimeout` applies, aborts everything inside (attempts,
 * waits, payment) at the deadline and hands the deadline on to the transport, which bounds the body with it.
 */
export function deadlineLayer(next: FetchLike, stackTotalTimeout: number | undefined): FetchLike {
  // no deadline (the default): the request passes straight on, no promise of ours
  return (input, init) => {
    const hints = init?.service as ({ totalTimeout?: number } & object) | undefined;
    if (hints) validateBodyHints(hints);
    const total = hints?.totalTimeout ?? stackTotalTimeout;
    if (total === undefined) return next(input, init);
    return withDeadline(next, input, init, hints, total);
  };
}

async function withDeadline(
  next: FetchLike,
  input: Parameters<FetchLike>[0],
  init: Parameters<FetchLike>[1],
  hints: ({ totalTimeout?: number } & object) | undefined,
  total: number,
): Promise<Response> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(totalTimeoutError(total)), total);
  const signal = init?.signal ? AbortSignal.any([init.signal, controller.signal]) : controller.signal;
  const deadline: Deadline = { at: Date.now() + total, ms: total };
  try {
    return await next(input, { ...init, signal, service: { ...hints, [DEADLINE]: deadline } as typeof hints });
  } finally {
    clearTimeout(timer);
  }
}

export interface BodyGuardOptions {
  idleMs: number;
  deadline?: Deadline;
  /** cap of a non-stream body */
  maxBytes: number;
  /** the request's signal (the caller's, with the deadline's) */
  signal?: AbortSignal | null;
  /** drops the connection */
  abort(reason: unknown): void;
}

const NULL_BODY_STATUSES = new Set([204, 205, 304]);

/** What a guarded read pulls a body from: a body stream's reader, or the Node base's own chunks (node-fetch.ts). */
export interface ChunkSource {
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  cancel(reason?: unknown): Promise<void>;
}

/**
 * A response that can hand its body over as chunks, with no web stream made for it (the Node base's): the guard
 * reads through this when present. It takes the body, once; undefined: no body.
 */
export const BODY_CHUNKS = Symbol("serviceBodyChunks");
type Chunked = Response & { [BODY_CHUNKS]?: () => ChunkSource | undefined };

const nativeBody = Object.getOwnPropertyDescriptor(Response.prototype, "body")!.get!;

/** Opens a response's own body (past any getter the guard put on it), once, when a read first needs it. */
function opener(response: Response): () => ChunkSource {
  let source: ChunkSource | undefined;
  return () => {
    if (source) return source;
    const chunks = (response as Chunked)[BODY_CHUNKS];
    if (chunks) return (source = chunks.call(response) ?? EMPTY);
    const body = nativeBody.call(response) as ReadableStream<Uint8Array> | null;
    return (source = body ? body.getReader() : EMPTY);
  };
}

const EMPTY: ChunkSource = { read: () => Promise.resolve({ done: true, value: undefined }), cancel: () => Promise.resolve() };

/**
 * The response with its body bounded by idle time, the deadline and (unless a stream) size. A stream's body is
 * handed on through a guarded pull stream. A non-stream body (JSON, media) is guarded where it is read: its
 * `text()`, `json()`, `arrayBuffer()` and `blob()` read it in one guarded loop, and its `body` is the guarded
 * stream, made only if asked for. Building a stream and a `Response` per request cost about a tenth of a whole
 * loopback chat call; most answers are read whole, once.
 */
export function guardBody(response: Response, g: BodyGuardOptions): Response {
  if (response.status < 200 || NULL_BODY_STATUSES.has(response.status)) return response;
  // the Node base's answer says it has a body without making a stream for it
  if (!(response as Chunked)[BODY_CHUNKS] && !response.body) return response;
  if ((response.headers.get("content-type") ?? "").includes("text/event-stream")) return guardedStreamResponse(response, opener(response), g, Infinity);
  return guardedAtRead(response, opener(response), g);
}

function tooLargeError(status: number, maxBytes: number): ResponseTooLargeError {
  return new ResponseTooLargeError(
    `response body larger than maxResponseBytes (${maxBytes} bytes); raise maxResponseBytes if answers this large are expected`,
    { status, option: "maxResponseBytes", limit: maxBytes },
  );
}

/** A non-stream response whose reading methods (and `body`, when asked for) keep the guard's bounds. */
function guardedAtRead(response: Response, source: () => ChunkSource, g: BodyGuardOptions): Response {
  let open = source;
  let stream: Response | undefined;
  const streamed = () => (stream ??= guardedStreamResponse(response, open, g, g.maxBytes));
  let read: Promise<Uint8Array> | undefined;
  const bytes = async (): Promise<Uint8Array> => {
    if (read) throw new TypeError("Body is unusable: Body has already been read");
    // `body` was asked for (to cancel it, or to hand it on): what is left is read through that guarded stream
    if (stream) return new Uint8Array(await stream.arrayBuffer());
    return (read = readGuarded(response, open, g));
  };
  const decoder = () => new TextDecoder();
  // the response's own clone (the Node base's tees its body), before this guard's replaces it
  const ownClone = response.clone;
  Object.defineProperties(response, {
    body: { get: () => streamed().body, configurable: true },
    bodyUsed: { get: () => (stream ? stream.bodyUsed : read !== undefined), configurable: true },
    text: { value: async () => decoder().decode(await bytes()), configurable: true },
    json: { value: async () => JSON.parse(decoder().decode(await bytes())) as unknown, configurable: true },
    arrayBuffer: {
      value: async () => {
        const b = await bytes();
        return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b.buffer : b.slice().buffer;
      },
      configurable: true,
    },
    // a clone tees the body: both halves stay guarded
    clone: {
      value: () => {
        if (stream) return stream.clone();
        if (read) throw new TypeError("Response.clone: Body has already been consumed.");
        const copy = ownClone.call(response);
        open = opener(response);
        return guardedAtRead(copy, opener(copy), g);
      },
      configurable: true,
    },
    blob: { value: async () => new Blob([(await bytes()) as Uint8Array<ArrayBuffer>], { type: response.headers.get("content-type") ?? "" }), configurable: true },
  });
  return response;
}

/** Reads a whole body within the guard's bounds, in one loop: no stream or Response made for it. */
async function readGuarded(response: Response, open: () => ChunkSource, g: BodyGuardOptions): Promise<Uint8Array> {
  const maxBytes = g.maxBytes;
  const declared = Number(response.headers.get("content-length") ?? NaN);
  let failWith!: (err: unknown) => void;
  const failed = new Promise<never>((_, reject) => (failWith = reject));
  failed.catch(() => undefined);
  let finished = false;
  const reader = open();
  const fail = (err: unknown) => {
    if (finished) return;
    finished = true;
    failWith(err);
    g.abort(err);
    reader.cancel(err).catch(() => undefined);
  };
  if (declared > maxBytes) {
    fail(tooLargeError(response.status, maxBytes));
    return failed;
  }
  let waitingSince = 0;
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  const checkIdle = () => {
    idleTimer = undefined;
    if (finished || waitingSince === 0) return;
    const left = waitingSince + g.idleMs - Date.now();
    if (left <= 0) fail(new TimeoutError(`no data for ${g.idleMs} ms while reading the response body (idleTimeout)`));
    else idleTimer = unref(setTimeout(checkIdle, left));
  };
  const deadlineTimer = g.deadline ? unref(setTimeout(() => fail(totalTimeoutError(g.deadline!.ms)), Math.max(0, g.deadline.at - Date.now()))) : undefined;
  const chunks: Uint8Array[] = [];
  let received = 0;
  try {
    for (;;) {
      waitingSince = Date.now();
      idleTimer ??= unref(setTimeout(checkIdle, g.idleMs));
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await Promise.race([reader.read(), failed]);
      } catch (err) {
        if (finished) throw err; // the guard's own failure (idle, deadline, size)
        throw g.signal?.aborted ? abortErrorOf(g.signal.reason) : err;
      } finally {
        waitingSince = 0;
      }
      if (chunk.done) break;
      received += chunk.value.byteLength;
      if (received > maxBytes) {
        fail(tooLargeError(response.status, maxBytes));
        return await failed;
      }
      chunks.push(chunk.value);
    }
  } finally {
    finished = true;
    if (idleTimer !== undefined) clearTimeout(idleTimer);
    if (deadlineTimer !== undefined) clearTimeout(deadlineTimer);
  }
  return joinChunks(chunks, received);
}

/** The chunks of a body as one array (the one chunk itself when there is one). */
export function joinChunks(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** The response with its body handed on through a guarded pull stream (streams; a non-stream body asked for as a stream). */
function guardedStreamResponse(response: Response, open: () => ChunkSource, g: BodyGuardOptions, maxBytes: number): Response {
  const tooLarge = () => tooLargeError(response.status, maxBytes);
  let reader: ChunkSource | undefined;
  let out!: ReadableStreamDefaultController<Uint8Array>;
  let received = 0;
  /** when the pending read started; 0: no read pending */
  let waitingSince = 0;
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  let deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  let finished = false;

  const finish = () => {
    finished = true;
    if (idleTimer !== undefined) clearTimeout(idleTimer);
    if (deadlineTimer !== undefined) clearTimeout(deadlineTimer);
  };
  const fail = (err: unknown) => {
    if (finished) return;
    finish();
    out.error(err);
    g.abort(err);
    (reader ?? open()).cancel(err).catch(() => undefined);
  };
  // One timer, re-armed only when it fires: no timer work per chunk.
  const checkIdle = () => {
    idleTimer = undefined;
    if (finished || waitingSince === 0) return; // nobody is waiting: the next read arms it again
    const left = waitingSince + g.idleMs - Date.now();
    if (left <= 0) fail(new TimeoutError(`no data for ${g.idleMs} ms while reading the response body (idleTimeout)`));
    else idleTimer = unref(setTimeout(checkIdle, left));
  };

  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        out = controller;
        const declared = Number(response.headers.get("content-length") ?? NaN);
        if (declared > maxBytes) return fail(tooLarge());
        if (g.deadline) {
          const { at, ms } = g.deadline;
          deadlineTimer = unref(setTimeout(() => fail(totalTimeoutError(ms)), Math.max(0, at - Date.now())));
        }
      },
      async pull(controller) {
        reader ??= open();
        waitingSince = Date.now();
        idleTimer ??= unref(setTimeout(checkIdle, g.idleMs));
        let read: ReadableStreamReadResult<Uint8Array>;
        try {
          read = await reader.read();
        } catch (err) {
          if (finished) return;
          finish();
          // the caller's abort (or the deadline's) is typed; other breaks pass as they are
          throw g.signal?.aborted ? abortErrorOf(g.signal.reason) : err;
        } finally {
          waitingSince = 0;
        }
        if (finished) return;
        if (read.done) {
          finish();
          controller.close();
          return;
        }
        received += read.value.byteLength;
        if (received > maxBytes) return fail(tooLarge());
        controller.enqueue(read.value);
      },
      cancel(reason) {
        finish();
        return (reader ?? open()).cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  const wrapped = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  // what `new Response` cannot set
  if (response.url) Object.defineProperty(wrapped, "url", { value: response.url });
  if (response.redirected) Object.defineProperty(wrapped, "redirected", { value: true });
  return wrapped;
}
