/**
 * The floor under every action that takes a client (as viem's actions sit on its transport): the shape of a
 * client the actions need (`ServiceApi`), the one request helper (JSON or text in, typed errors out), its
 * binary twin (media answers), and the checks of arguments and answers. `ServiceClient` (src/client.ts)
 * implements `ServiceApi` and sits above the actions; nothing on this floor imports it.
 */
import type { z } from "zod";
import { ResponseFormatError, ValidationError } from "../http/errors.js";
import { responseHeaders, type ServiceRequestHints, type ServiceRequestInit } from "../http/fetch-stack.js";
import type { ServiceResponseHeaders } from "../http/headers.js";
import { readResponseBytes, readResponseText } from "../http/body.js";
import type { ServiceFetch } from "./service-fetch.js";
import type { X402Wallet } from "../x402/wallets.js";
import { utf8Text } from "../runtime/bytes.js";

export interface RequestOptions {
  method?: string;
  /** JSON body (serialized here), a ready string, or a body `fetch` sends as is (FormData, URLSearchParams, Blob, bytes, a stream) */
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  /** merged case-insensitively over `accept: application/json` (and `content-type` for a JSON body) */
  headers?: Record<string, string>;
  signal?: AbortSignal;
  service?: ServiceRequestHints;
}

export interface ServiceResult<T> {
  data: T;
  headers: ServiceResponseHeaders;
  status: number;
}

/** What an action needs of a client: its stack, and the request helper over it. `ServiceClient` is one. */
export interface ServiceApi {
  readonly fetch: ServiceFetch;
  readonly baseUrl: string;
  readonly brand: string;
  /** the wallet the stack signs in and pays with, if any (else an API key, or nothing) */
  readonly wallet?: X402Wallet;
  request<T = unknown>(path: string, options?: RequestOptions): Promise<ServiceResult<T>>;
}

/** Checks an answer against its schema: a ResponseFormatError naming every problem otherwise. */
export function parseWith<T>(schema: z.ZodType<T>, data: unknown, what: string, headers?: ServiceResponseHeaders): T {
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    throw new ResponseFormatError(
      `unexpected ${what} response: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
      {
        body: data,
        headers,
      },
    );
  }
  return parsed.data;
}

/** Checks a caller's arguments against their schema: a ValidationError naming every problem, before any request. */
export function checkArgs<T>(schema: z.ZodType<T>, input: unknown, what: string): T {
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.length ? `${i.path.join(".")}: ` : ""}${i.message}`).join("; ");
    throw new ValidationError(`invalid ${what}: ${issues}`, { issues: parsed.error.issues });
  }
  return parsed.data;
}

/** A body `fetch` sends as is (not a value to serialize as JSON). */
function isBodyInit(body: unknown): body is BodyInit {
  return (
    typeof body === "object" &&
    body !== null &&
    (body instanceof URLSearchParams ||
      body instanceof FormData ||
      body instanceof Blob ||
      body instanceof ArrayBuffer ||
      ArrayBuffer.isView(body) ||
      typeof (body as ReadableStream).getReader === "function")
  );
}

/** The URL and init of a request through the stack (query, `accept`, a JSON or ready body). */
function prepare(serviceFetch: ServiceFetch, path: string, options: RequestOptions, accept: string): [string, ServiceRequestInit] {
  let url = serviceFetch.url(path);
  if (options.query) {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(options.query)) if (v !== undefined) qs.set(k, String(v));
    const s = qs.toString();
    if (s) url += (url.includes("?") ? "&" : "?") + s;
  }
  const headers = new Headers(options.headers);
  if (!headers.has("accept")) headers.set("accept", accept);
  let body: BodyInit | undefined;
  if (options.body !== undefined) {
    if (isBodyInit(options.body)) {
      // sent as is; fetch sets the content type of FormData, URLSearchParams and typed Blobs
      body = options.body;
    } else {
      body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
      if (!headers.has("content-type")) headers.set("content-type", "application/json");
    }
  }
  const init = {
    method: options.method ?? (body === undefined ? "GET" : "POST"),
    headers,
    body,
    signal: options.signal,
    service: options.service,
    // a stream body needs half duplex in Node's fetch
    ...(body && typeof (body as ReadableStream).getReader === "function" ? { duplex: "half" } : {}),
  } as ServiceRequestInit;
  return [url, init];
}

/** JSON in, JSON (or text) out, through the stack: typed errors on non-success. `ServiceClient.request` is this. */
export async function serviceRequest<T = unknown>(
  serviceFetch: ServiceFetch,
  path: string,
  options: RequestOptions = {},
): Promise<ServiceResult<T>> {
  const [url, init] = prepare(serviceFetch, path, options, "application/json");
  const response = await serviceFetch(url, init);
  const parsedHeaders = responseHeaders(response, serviceFetch.brand);
  const text = await readResponseText(response, { what: path, signal: options.signal, headers: parsedHeaders });
  // an empty body (204, 205, HEAD) is undefined, not ""
  let data: unknown = text === "" ? undefined : text;
  if (text && (parsedHeaders.contentType ?? "").includes("json")) {
    try {
      data = JSON.parse(text);
    } catch (cause) {
      throw new ResponseFormatError(`invalid JSON from ${path}`, { body: text, headers: parsedHeaders, cause });
    }
  }
  return { data: data as T, headers: parsedHeaders, status: response.status };
}

/** An answer that is either JSON (a status, an error the stack let through) or bytes (an image, audio, a video). */
export interface MediaResult {
  status: number;
  headers: ServiceResponseHeaders;
  /** the content type without parameters, lowercased (`image/png`, `video/mp4`, `application/json`) */
  contentType: string;
  /** the parsed body when the answer is JSON */
  json?: unknown;
  /** the body when it is not JSON */
  bytes?: Uint8Array;
  /** the response's headers as received (for the few a route adds, e.g. an enhanced prompt) */
  rawHeaders: Headers;
}

/** A request whose answer may be media bytes: read as bytes, parsed when it says it is JSON. */
export async function requestMedia(
  api: Pick<ServiceApi, "fetch" | "brand">,
  path: string,
  options: RequestOptions & { accept: string },
): Promise<MediaResult> {
  const [url, init] = prepare(api.fetch, path, options, options.accept);
  const response = await api.fetch(url, init);
  const headers = responseHeaders(response, api.brand);
  const bytes = await readResponseBytes(response, { what: path, signal: options.signal, headers });
  const contentType = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (contentType.includes("json")) {
    try {
      return { status: response.status, headers, contentType, json: JSON.parse(utf8Text(bytes)), rawHeaders: response.headers };
    } catch (cause) {
      throw new ResponseFormatError(`invalid JSON from ${path}`, { body: utf8Text(bytes).slice(0, 500), headers, cause });
    }
  }
  return { status: response.status, headers, contentType, bytes, rawHeaders: response.headers };
}
