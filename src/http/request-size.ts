/**
 * The service refuses a JSON request body over 35 MB with `413 PAYLOAD_TOO_LARGE` (its errors guide). The stack
 * refuses such a body before sending (`PayloadTooLargeError`, in its outermost layer): no attempt, no spend
 * reservation, no top-up. An ordinary body pays two comparisons: a string's UTF-8 size is at least its length and at
 * most three times it, so only a string longer than a third of the limit is measured, and only one longer than the
 * limit is refused unmeasured. Bytes (a `Request` input's body) are held to the limit when they are labelled JSON;
 * multipart and streamed bodies are not checked (the service limits multipart files to 25 MB each, on its side).
 */
import { PayloadTooLargeError } from "./errors.js";

/**
 * 35 MiB: the guides say "over 35 MB of JSON" without saying which megabyte; a Node body parser set to "35mb" means
 * 35 * 1024 * 1024, and the emulator's live mode refuses above the same number.
 */
export const DEFAULT_MAX_REQUEST_BYTES = 35 * 1024 * 1024;

type ByteLength = (text: string, encoding: "utf8") => number;
const bufferByteLength = (globalThis as { Buffer?: { byteLength?: ByteLength } }).Buffer?.byteLength;

/** The UTF-8 size of `text` without encoding it (a lone surrogate counts as U+FFFD, 3 bytes, as encoders write it). */
export function countUtf8(text: string): number {
  const n = text.length;
  let bytes = n;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) {
      bytes += 1;
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 2; // a pair: 4 bytes for 2 units
        i++;
        continue;
      }
    }
    bytes += 2;
  }
  return bytes;
}

/** The UTF-8 size of `text`: Node's native count where there is one, else `countUtf8`. */
export function utf8Length(text: string): number {
  return bufferByteLength ? bufferByteLength(text, "utf8") : countUtf8(text);
}

/** A request header (`name` in lower case) from any form of `HeadersInit`, without building a `Headers`. */
export function requestHeader(headers: HeadersInit | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  if (Array.isArray(headers)) return headers.find(([k]) => k?.toLowerCase() === name)?.[1];
  for (const k in headers) if (k.toLowerCase() === name) return (headers as Record<string, string>)[k];
  return undefined;
}

/** A body labelled JSON (`application/json`, `…+json`), or unlabelled when `unlabelled` says so. */
function isJson(headers: HeadersInit | undefined, unlabelled: boolean): boolean {
  const type = requestHeader(headers, "content-type");
  return type === undefined ? unlabelled : /[/+]json\b/i.test(type);
}

function tooLarge(bytes: number, limit: number): PayloadTooLargeError {
  return new PayloadTooLargeError(
    `request body of ${bytes} bytes is over maxRequestBytes (${limit}): the service refuses JSON over 35 MB (413). ` +
      "Send large images, audio or files by URL, or split the request; nothing was sent",
    { bytes, limit },
  );
}

/**
 * Throws `PayloadTooLargeError` when `body` is a JSON body over `limit` bytes: a string (the faces send JSON as
 * strings; one without a Content-Type counts as JSON), or bytes labelled JSON. `Infinity` turns the check off.
 */
export function checkRequestSize(body: unknown, headers: HeadersInit | undefined, limit: number): void {
  if (typeof body === "string") {
    if (body.length * 3 <= limit || !isJson(headers, true)) return;
    const bytes = utf8Length(body);
    if (bytes > limit) throw tooLarge(bytes, limit);
    return;
  }
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) {
    if (body.byteLength > limit && isJson(headers, false)) throw tooLarge(body.byteLength, limit);
  }
}
