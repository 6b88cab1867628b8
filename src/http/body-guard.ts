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
 * The bounds wrap the body's stream (a plain `Response` built on it), read only when its consumer reads (a slow
 * consumer is never "idle"), with one lazily re-armed timer instead of a timer per chunk.
 */
import { type ConfigurationError, ResponseTooLargeError, TimeoutError, ValidationError, abortErrorOf } from "./errors.js";
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
  return typeof value === "string"
    ? JSON.stringify(value.slice(0, 40))
    : typeof value === "object" && value
      ? `a ${typeof value}`
      : String(value);
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

export function totalTimeoutError(ms: number): TimeoutError {
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

function withDeadline(
  next: FetchLike,
  input: Parameters<FetchLike>[0],
  init: Parameters<FetchLike>[1],
  hints: ({ totalTimeout?: number } & object) | undefined,
  total: number,
): Promise<Response> {
  const deadline: Deadline = { at: Date.now() + total, ms: total };
  return underCallDeadline(total, init?.signal ?? undefined, (signal) =>
    next(input, { ...init, signal, service: { ...hints, [DEADLINE]: deadline } as typeof hints }),
  );
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

/**
 * Where the layer's bounds travel to a base that can apply them as it builds its answer (the Node base: one
 * stream read straight off undici's body instead of undici's web stream wrapped in the guard's). A base that
 * does so marks its answer (`markGuarded`), and `guardBody` leaves it as it is; any other base (fetch, a custom
 * `fetch`) never reads the key (a symbol: not part of what fetch sees), and its answer is wrapped here.
 */
export const BODY_GUARD = Symbol("serviceBodyGuard");
const guardedByBase = new WeakSet<Response>();

/** Marks an answer whose body a base built through `guardedStream`. */
export function markGuarded(response: Response): Response {
  guardedByBase.add(response);
  return response;
}

/** What the guard reads from: a web stream's reader, or an async iterator of the body's chunks. */
export interface BodySource {
  read(): Promise<{ done?: boolean; value?: Uint8Array }>;
  cancel(reason: unknown): Promise<void>;
}

/**
 * The response with its body bounded by idle time, the deadline and (unless a stream) size: a plain `Response`
 * built on a pull stream that reads the answer's own body only when its consumer reads (a slow consumer is never
 * idle). Every way of reading it (`text()`, `json()`, `body`, `clone()`) goes through that stream, so the bounds
 * hold whichever is used; nothing on the answer is patched.
 */
export function guardBody(response: Response, g: BodyGuardOptions): Response {
  if (guardedByBase.has(response) || response.status < 200 || NULL_BODY_STATUSES.has(response.status)) return response;
  const body = response.body;
  if (!body) return response;
  const source = () => {
    const reader = body.getReader();
    return { read: () => reader.read(), cancel: (reason: unknown) => reader.cancel(reason) };
  };
  const wrapped = new Response(guardedStream(response.status, response.headers, source, g), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  // what `new Response` cannot set
  if (response.url) Object.defineProperty(wrapped, "url", { value: response.url });
  if (response.redirected) Object.defineProperty(wrapped, "redirected", { value: true });
  return wrapped;
}

function tooLargeError(status: number, maxBytes: number): ResponseTooLargeError {
  return new ResponseTooLargeError(
    `response body larger than maxResponseBytes (${maxBytes} bytes); raise maxResponseBytes if answers this large are expected`,
    { status, option: "maxResponseBytes", limit: maxBytes },
  );
}

/**
 * A body stream that reads `openSource()` (opened at the first read) through the guard's bounds. Streams are
 * capped per event by the SSE parser (maxEventBytes), not as a whole.
 */
export function guardedStream(
  status: number,
  headers: Headers,
  openSource: () => BodySource,
  g: BodyGuardOptions,
): ReadableStream<Uint8Array> {
  const maxBytes = (headers.get("content-type") ?? "").includes("text/event-stream") ? Infinity : g.maxBytes;
  const tooLarge = () => tooLargeError(status, maxBytes);
  let reader: BodySource | undefined;
  const open = () => (reader ??= openSource());
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
    open()
      .cancel(err)
      .catch(() => undefined);
  };
  // One timer, re-armed only when it fires: no timer work per chunk.
  const checkIdle = () => {
    idleTimer = undefined;
    if (finished || waitingSince === 0) return; // nobody is waiting: the next read arms it again
    const left = waitingSince + g.idleMs - Date.now();
    if (left <= 0) fail(new TimeoutError(`no data for ${g.idleMs} ms while reading the response body (idleTimeout)`));
    else idleTimer = unref(setTimeout(checkIdle, left));
  };

  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        out = controller;
        const declared = Number(headers.get("content-length") ?? NaN);
        if (declared > maxBytes) return fail(tooLarge());
        if (g.deadline) {
          const { at, ms } = g.deadline;
          deadlineTimer = unref(setTimeout(() => fail(totalTimeoutError(ms)), Math.max(0, at - Date.now())));
        }
      },
      async pull(controller) {
        const r = open();
        waitingSince = Date.now();
        idleTimer ??= unref(setTimeout(checkIdle, g.idleMs));
        let read: { done?: boolean; value?: Uint8Array };
        try {
          read = await r.read();
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
        const chunk = read.value as Uint8Array;
        received += chunk.byteLength;
        if (received > maxBytes) return fail(tooLarge());
        controller.enqueue(chunk);
      },
      cancel(reason) {
        finish();
        return open().cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * One deadline for a call made of several requests (a crypto RPC call and the network list it checks first, an
 * explicit top-up): each request through the stack gets its own `totalTimeout`, so the call as a whole gets one
 * here, on top of the caller's signal. No deadline: the caller's signal as it is.
 */
export async function underCallDeadline<T>(
  totalTimeout: number | undefined,
  signal: AbortSignal | undefined,
  run: (signal: AbortSignal | undefined) => Promise<T>,
): Promise<T> {
  if (totalTimeout === undefined) return run(signal);
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(totalTimeoutError(totalTimeout)), totalTimeout);
  try {
    return await run(signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal);
  } finally {
    clearTimeout(timer);
  }
}
