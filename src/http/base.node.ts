/**
 * The stack's base on Node: a request the stack sends (a string or bytes body, `redirect: "manual"`, as every
 * credentialed request goes out: see redirects.ts) sent with undici's `request()` over one keep-alive `Agent`,
 * and answered as a plain `Response` built on the body's stream. Picked by the `node` condition of the package's
 * `#base` import (src/package.json while developing, package.json's `imports` once built): a bundle for a worker
 * or a browser resolves `#base` to base.ts and never sees undici.
 *
 * Why `request()` and not undici's `fetch`: on loopback a `fetch` spends most of a request in the spec's
 * machinery (a `Request`, a body clone for redirects, header guards); `request()` wrapped into a `Response`
 * sends the same request in about half the time, which is what lets `invoke` cost less than the bare `openai` SDK.
 *
 * Everything else goes to `globalThis.fetch`, untouched: other bodies (FormData, Blob, streams), redirects the
 * runtime follows, and `NODE_USE_ENV_PROXY` (Node's fetch reads the proxy settings). A stack given its own
 * `fetch` (a spy, msw, a proxy) never comes here.
 *
 * What fetch does that callers see, this does too: `accept`, `user-agent` and `accept-encoding` defaults, gzip
 * and deflate bodies decoded, `TypeError("fetch failed", { cause })` on a
 * network failure, the signal's reason on an abort. A request that breaks on a kept-alive socket before any
 * answer is re-sent once by the retry layer (retry.ts `droppedKeptAliveSocket`), not here.
 */
// first: the runtime's fetch keeps its own global dispatcher (see the file), then undici
import "#keep-runtime-dispatcher";
import { Agent, request, type Dispatcher } from "undici";
import { BODY_GUARD, guardedStream, markGuarded, type BodyGuardOptions } from "./body-guard.js";
import type { FetchLike, ServiceRequestInit } from "./types.js";

/**
 * One dispatcher for the process. Free sockets are dropped after 4 s (undici's default, or a second before the
 * server's own `Keep-Alive: timeout=N`); no pipelining (a paid request never waits behind another on a socket).
 */
let dispatcher: Dispatcher | undefined;
function agent(): Dispatcher {
  return (dispatcher ??= new Agent({ keepAliveTimeout: 4_000, pipelining: 1 }));
}

const useEnvProxy = typeof process !== "undefined" && !!process.env.NODE_USE_ENV_PROXY;

type Body = string | Uint8Array | undefined;

function sendable(body: unknown): boolean {
  return body === undefined || body === null || typeof body === "string" || body instanceof Uint8Array || body instanceof ArrayBuffer;
}

/** `fetch`, sent with undici's `request()` where it can be (see the file's opening), else `globalThis.fetch`. */
export const defaultFetch: FetchLike = (input, init) => {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : undefined;
  if (
    url !== undefined &&
    !useEnvProxy &&
    init?.redirect === "manual" &&
    (url.startsWith("http://") || url.startsWith("https://")) &&
    sendable(init.body)
  ) {
    const body = init.body instanceof ArrayBuffer ? new Uint8Array(init.body) : ((init.body ?? undefined) as Body);
    return send(url, init, body);
  }
  return globalThis.fetch(input, init);
};

/** The request's headers with fetch's defaults, as undici takes them. */
function headersOf(init: ServiceRequestInit, body: Body): Record<string, string> {
  const out: Record<string, string> = {};
  const h = init.headers;
  if (h instanceof Headers) {
    for (const [k, v] of h) out[k] = v;
  } else if (Array.isArray(h)) {
    for (const [k, v] of h as [string, string][]) {
      const name = k.toLowerCase();
      out[name] = out[name] === undefined ? v : `${out[name]}, ${v}`;
    }
  } else if (h) for (const k in h) out[k.toLowerCase()] = String((h as Record<string, string>)[k]);
  out.accept ??= "*/*";
  out["accept-language"] ??= "*";
  out["user-agent"] ??= "node";
  out["accept-encoding"] ??= "gzip, deflate";
  if (typeof body === "string") out["content-type"] ??= "text/plain;charset=UTF-8";
  return out;
}

/** The answer's headers as a `Headers` (repeated ones, such as `set-cookie`, kept apart). */
function headersFrom(raw: Record<string, string | string[] | undefined>): Headers {
  const headers = new Headers();
  for (const k in raw) {
    const v = raw[k];
    if (typeof v === "string") headers.append(k, v);
    else if (v) for (const one of v) headers.append(k, one);
  }
  return headers;
}

/**
 * The body decoded as its `content-encoding` says (applied last to first), with the platform's
 * `DecompressionStream`: undici's `request()` does not decode, and its decompress interceptor is experimental
 * (it prints a warning in every process that loads it). Only gzip and deflate are asked for; a coding not asked
 * for passes as it came.
 */
function decoded(body: ReadableStream<Uint8Array>, coding: string): ReadableStream<Uint8Array> {
  let out = body;
  for (const c of coding.toLowerCase().split(",").reverse()) {
    const name = c.trim();
    const format = name === "gzip" || name === "x-gzip" ? "gzip" : name === "deflate" ? "deflate" : undefined;
    if (format) out = out.pipeThrough(new DecompressionStream(format) as unknown as TransformStream<Uint8Array, Uint8Array>);
    else if (name !== "identity") return body;
  }
  return out;
}

const NULL_BODY = new Set([101, 103, 204, 205, 304]);

async function send(url: string, init: ServiceRequestInit, body: Body): Promise<Response> {
  const signal = init.signal ?? undefined;
  if (signal?.aborted) throw signal.reason;
  const method = (init.method ?? "GET").toUpperCase() as Dispatcher.HttpMethod;
  let answer: Dispatcher.ResponseData;
  try {
    answer = await request(url, { method, headers: headersOf(init, body), body, signal, dispatcher: agent() });
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw new TypeError("fetch failed", { cause: err });
  }
  const status = answer.statusCode;
  const empty = method === "HEAD" || NULL_BODY.has(status);
  if (empty) answer.body.resume(); // nothing to wait for: the socket goes back to the pool at once
  let response: Response;
  try {
    const headers = headersFrom(answer.headers);
    const coding = answer.headers["content-encoding"];
    const offered = (init as { [BODY_GUARD]?: BodyGuardOptions })[BODY_GUARD];
    // an encoded body is decoded by a stream of its own, which the layer's guard then wraps
    const guard = !empty && coding === undefined && status >= 200 ? offered : undefined;
    let body: ReadableStream<Uint8Array> | null;
    if (empty) body = null;
    else if (guard) {
      // the stack's bounds read undici's body itself: one stream per answer, not undici's web stream and the
      // guard's around it (a tenth of a loopback `invoke` on Node 20, where each stream and Response costs ~20 us);
      // its chunks are undici's Buffers, as they came off the socket
      const chunks = answer.body;
      body = guardedStream(
        status,
        headers,
        () => {
          const it = chunks[Symbol.asyncIterator]();
          return {
            read: () => it.next(),
            cancel: async (reason) => {
              await it.return?.(reason);
            },
          };
        },
        guard,
      );
    } else {
      // undici's body as the web stream it makes of it (a byte stream whose chunks are copies, not views of a Buffer)
      body = answer.body.body as unknown as ReadableStream<Uint8Array>;
      if (typeof coding === "string") body = decoded(body, coding);
    }
    response = new Response(body, { status, statusText: answer.statusText ?? "", headers });
    if (guard) markGuarded(response);
  } catch (err) {
    answer.body.destroy();
    throw new TypeError("fetch failed", { cause: err });
  }
  // what `new Response` cannot set
  Object.defineProperty(response, "url", { value: url });
  return response;
}
