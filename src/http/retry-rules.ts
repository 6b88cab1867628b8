/**
 * The rules that decide every re-send, in one place, as named predicates. The retry loop (retry.ts) reads the
 * answers' rules; the loops that cannot be that loop read theirs here too, and say why they stay apart:
 * - the 401 re-sign (layers/sign-in.ts): the same request, re-signed, inside the place it holds;
 * - a stream's in-band error (chat/stream-errors.ts): it comes after a 200, once the stack has handed the body on;
 * - an x402 route's 429 and a settling payment's 409 (x402/retry-429.ts, x402/settlement.ts): re-sends of a
 *   top-up, which goes out beside the stack's retries (a signed payment is never re-sent blindly).
 */
import { InBandStreamError, ModelOverloadedError, StreamError } from "./errors.js";
import { saysModelOffline } from "./model-errors.js";
import { curedByFreshSignIn } from "./sign-in-refusals.js";
import { CLOCK_RETRY_MS } from "./clock.js";
import type { TooManyKind } from "./refusals.js";

// --- 429: what its body says (refusals.ts `classify429`)

/** An abuse block: the answer (a re-send within the block is refused again). */
export const abuse429 = (kind: TooManyKind): boolean => kind === "abuse";
/** Too many in flight: the request never ran; re-sent after a short pause, outside the retry budget. */
export const inFlight429 = (kind: TooManyKind): boolean => kind === "in-flight";
/** An overloaded model: re-sent after its `Retry-After`, each time one of the retries. */
export const overloaded429 = (kind: TooManyKind): boolean => kind === "overloaded";
/** A request or token limit: waited for once, until the reset its headers name, and re-sent once. */
export const rateLimited429 = (kind: TooManyKind): boolean => kind === "rate";

// --- 5xx

/** statuses re-sent with backoff (504 only for a streaming request: see `asksForStream`) */
export const RETRYABLE_STATUSES = new Set([500, 502, 503]);

/**
 * Whether a request body asks for a stream (`"stream": true` in a JSON body, as a string or bytes). A 504 on
 * such a request may be re-sent; on any other it is final ("the request took too long; use stream=true").
 */
export function asksForStream(body: unknown): boolean {
  let text: string | undefined;
  if (typeof body === "string") text = body;
  else if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) text = new TextDecoder().decode(body);
  if (!text?.includes('"stream"')) return false;
  try {
    const json: unknown = JSON.parse(text);
    return typeof json === "object" && json !== null && (json as { stream?: unknown }).stream === true;
  } catch {
    return false;
  }
}

/** 500/502/503, and a 504 of a streaming request: re-sent with backoff, a bounded number of times. */
export function serverError5xx(status: number, requestBody: unknown): boolean {
  return RETRYABLE_STATUSES.has(status) || (status === 504 && asksForStream(requestBody));
}

/** A 503 whose body says the model is offline: it stays offline longer than a backoff series, so it is the answer. */
export const modelOffline503 = (status: number, text: string): boolean => saysModelOffline(status, text);

// --- what may be sent twice at all

/** A body that can be sent only once (a stream, an async iterable): never re-sent blindly. */
export function isOneShotBody(body: unknown): boolean {
  return (
    body !== null && typeof body === "object" && (typeof (body as ReadableStream).getReader === "function" || Symbol.asyncIterator in body)
  );
}

// --- 401: the fresh sign-in

/**
 * A 401 that may be cured by signing in afresh: the attempt was signed by a clock-sensitive sign-in (a SIWX
 * `issuedAt`: `signedOffset` is the service-clock offset it used) and its body is not a stream (sent only once).
 */
export function mayResignAfter401(status: number, signedOffset: number | undefined, requestBody: unknown): boolean {
  return status === 401 && signedOffset !== undefined && typeof (requestBody as ReadableStream | undefined)?.getReader !== "function";
}

/** The service's `Date` moved our idea of its clock by `CLOCK_RETRY_MS` (2 s) or more since the attempt was signed. */
export const clockWasOff = (signedOffset: number, offsetNow: number): boolean => Math.abs(offsetNow - signedOffset) >= CLOCK_RETRY_MS;

/** A sign-in refused for what a fresh one passes (expired, nonce already used, issued ahead): re-signed once. */
export const staleSignIn401 = (refusalText: string): boolean => curedByFreshSignIn(refusalText);

// --- in-band stream errors (after a 200)

/** An overloaded model said in-band, mid-stream (`model_overloaded`): re-run after its `retry_after`. */
export function inBandOverload(err: unknown): err is ModelOverloadedError {
  return err instanceof ModelOverloadedError && err.cause instanceof StreamError;
}

/** An in-band error a fresh identical request may not meet (an outage), or an in-band overload. */
export function transientInBand(err: unknown): boolean {
  return inBandOverload(err) || (err instanceof InBandStreamError && err.transient === true);
}

// --- x402 routes (top-ups, balances, transactions)

/** An x402 route's own limiter (no rate-limit header says when): waited out with growing waits while time allows. */
export const routeRateLimited429 = (status: number): boolean => status === 429;

/** `409 PAYMENT_IN_PROGRESS`: the payment is settling (or settled): the balance tells which, then the same bytes later. */
export const settling409 = (status: number): boolean => status === 409;

/**
 * The request broke on a kept-alive socket the server closed as it was picked, before any answer: undici's
 * "other side closed" (or a reset, a broken pipe) on a socket that had carried an earlier answer (it had read
 * bytes). The server never answered it: re-sent once, on a fresh socket, as Node's documentation advises. A
 * fresh socket that breaks is not this (the request may have reached the service: at-most-once for paid calls).
 */
export function droppedKeptAliveSocket(err: unknown): boolean {
  for (
    let e = err as { code?: string; socket?: { bytesRead?: number }; cause?: unknown } | undefined, depth = 0;
    e && depth < 4;
    e = e.cause as typeof e, depth++
  ) {
    if (e.code === "UND_ERR_SOCKET" || e.code === "ECONNRESET" || e.code === "EPIPE") return (e.socket?.bytesRead ?? 0) > 0;
  }
  return false;
}
