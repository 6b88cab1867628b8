/**
 * Reading answers, shared by the errors layer and the faces: the parsed headers of a response (parsed once), its
 * body read once, the typed error of a non-success answer, and a `Request` input turned into (url, init).
 */
import { AbortError, TimeoutError } from "./errors.js";
import { errorFromResponse } from "./status-errors.js";
import { parseServiceHeaders, type ServiceResponseHeaders } from "./headers.js";
import { SIGN_IN_RESENT_HEADER } from "./sign-in-refusals.js";
import type { ServiceRequestInit } from "./types.js";

const headerCache = new WeakMap<Response, ServiceResponseHeaders>();

/** Parsed part-2.5 headers of a response, parsed once and cached. */
export function responseHeaders(response: Response, brand?: string): ServiceResponseHeaders {
  let parsed = headerCache.get(response);
  if (!parsed) {
    parsed = parseServiceHeaders(response.headers, brand);
    headerCache.set(response, parsed);
  }
  return parsed;
}

/** Reads a body once: the parsed JSON when it parses, else the text (an empty body is undefined). */
export async function readBody(response: Response): Promise<{ text: string; body: unknown }> {
  let text = "";
  try {
    text = await response.text();
  } catch (err) {
    // a cut body still tells its status; a deadline or an abort ends the call as what it is
    if (err instanceof TimeoutError || err instanceof AbortError) throw err;
    text = "";
  }
  try {
    return { text, body: text ? JSON.parse(text) : undefined };
  } catch {
    return { text, body: text };
  }
}

/** Reads a non-success body (JSON if it parses, else text) and throws the typed error. */
export async function throwForStatus(response: Response, brand?: string): Promise<never> {
  const headers = responseHeaders(response, brand);
  const { body } = await readBody(response);
  throw errorFromResponse(response.status, body, headers, { signInResent: response.headers.has(SIGN_IN_RESENT_HEADER) });
}

/**
 * A `Request` input becomes (url, init) with its body read once into memory, so every attempt (retries, the
 * re-send after a top-up) sends the same bytes with the Request's own headers and signal. `init` overrides
 * the Request's members, as with `fetch(request, init)`.
 */
export async function fromRequest(req: Request, init: ServiceRequestInit | undefined): Promise<[string, ServiceRequestInit]> {
  const own: ServiceRequestInit = { method: req.method, headers: req.headers, signal: req.signal, redirect: req.redirect };
  if (req.body && init?.body === undefined) own.body = await req.arrayBuffer();
  if (init)
    for (const k of Object.keys(init) as (keyof ServiceRequestInit)[])
      if (init[k] !== undefined) (own as Record<string, unknown>)[k] = init[k];
  return [req.url, own];
}

/** The URL of a fetch input, as a string. */
export function urlOf(input: string | URL | Request): string {
  return typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
}
