/**
 * The stack's default base on Node: a request the stack sends (a string or bytes body, `redirect: "manual"`, as
 * every credentialed request goes out: see redirects.ts) sent with `node:http(s)` over keep-alive agents, and
 * answered as a `Response`.
 *
 * Why not fetch for these: on loopback Node 20's fetch spends about 0.3 ms of a 0.45 ms request in its spec
 * machinery (a `Request`, a clone of the body for redirects, a web stream per body); `node:http` sends the same
 * request in about 0.15 ms, which is what lets a whole LangChain `invoke` cost less than the bare `openai` SDK.
 * undici's own `request()` is as fast, but would be a dependency for what Node already has.
 *
 * Everything else goes to `globalThis.fetch`, untouched: other bodies (FormData, Blob, streams), redirects the
 * runtime follows, a replaced global `fetch` (a test's spy, msw) or global dispatcher (a proxy, a MockAgent),
 * `NODE_USE_ENV_PROXY`, and runtimes other than Node. A stack given its own `fetch` never comes here.
 *
 * What fetch does that callers see, this does too: `accept`, `user-agent` and `accept-encoding` defaults, gzip,
 * deflate and br bodies decoded, `TypeError("fetch failed", { cause })` on a network failure, the signal's reason
 * on an abort, an errored body when the connection breaks mid-read. A request that breaks on a reused keep-alive
 * socket before any answer (the server closed it as it was picked) is sent once more on a fresh one, as Node's
 * documentation advises: the server never read it.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { pipeline, type Readable } from "node:stream";
import { constants as zlibConstants, createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { BODY_CHUNKS, joinChunks, type ChunkSource } from "./body-guard.js";
import type { FetchLike, ServiceRequestInit } from "./types.js";

// Free sockets are dropped after 4 s (undici's default), or a second before the server's own `Keep-Alive:
// timeout=N` hint, which Node honours only when the agent has a timeout of its own.
const KEEP_ALIVE = { keepAlive: true, timeout: 4_000, scheduling: "lifo" as const };
let agents: { http: HttpAgent; https: HttpsAgent } | undefined;

const DISPATCHER = Symbol.for("undici.globalDispatcher.1");
const fetchAtLoad = globalThis.fetch;
const onNode =
  typeof process !== "undefined" &&
  typeof process.versions?.node === "string" &&
  process.versions.bun === undefined &&
  !("Deno" in globalThis) &&
  !process.env.NODE_USE_ENV_PROXY &&
  // Node's own fetch, not one a preloaded module put there before this module was loaded (its text loads Node's undici)
  typeof fetchAtLoad === "function" &&
  Function.prototype.toString.call(fetchAtLoad).includes("internal/deps/undici");

/** The global fetch is still Node's own, on its default dispatcher: what it would do, this does. */
function fetchIsNodes(): boolean {
  if (globalThis.fetch !== fetchAtLoad) return false;
  const dispatcher = (globalThis as { [DISPATCHER]?: { constructor?: { name?: string } } })[DISPATCHER];
  return dispatcher === undefined || dispatcher.constructor?.name === "Agent";
}

type Body = string | Uint8Array | undefined;

function sendableBody(body: unknown): boolean {
  return body === undefined || body === null || typeof body === "string" || body instanceof Uint8Array || body instanceof ArrayBuffer;
}

/** A sendable body as node:http takes it (an ArrayBuffer, as a `Request` input's body is read, viewed as bytes). */
function bodyOf(body: unknown): Body {
  return body instanceof ArrayBuffer ? new Uint8Array(body) : ((body ?? undefined) as Body);
}

/** `fetch`, sent over `node:http(s)` where it can be (see the file's opening), else `globalThis.fetch`. */
export const defaultFetch: FetchLike = (input, init) => {
  if (
    onNode &&
    init?.redirect === "manual" &&
    typeof input === "string" &&
    (input.startsWith("http://") || input.startsWith("https://")) &&
    sendableBody(init.body) &&
    fetchIsNodes()
  ) {
    return nodeSend(input, init, bodyOf(init.body));
  }
  return globalThis.fetch(input, init);
};

function headersOf(init: ServiceRequestInit, body: Body): OutgoingHttpHeaders {
  const out: Record<string, string> = {};
  const h = init.headers;
  if (h instanceof Headers) h.forEach((v, k) => (out[k] = v));
  else if (Array.isArray(h)) {
    for (const [k, v] of h as [string, string][]) {
      const name = k.toLowerCase();
      out[name] = out[name] === undefined ? v : `${out[name]}, ${v}`;
    }
  } else if (h) for (const k in h) out[k.toLowerCase()] = String((h as Record<string, string>)[k]);
  // fetch's defaults
  out.accept ??= "*/*";
  out["accept-language"] ??= "*";
  out["user-agent"] ??= "node";
  out["accept-encoding"] ??= "gzip, deflate, br";
  if (typeof body === "string") out["content-type"] ??= "text/plain;charset=UTF-8";
  if (body !== undefined) out["content-length"] = String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength);
  return out;
}

function fetchFailed(cause: unknown): TypeError {
  return new TypeError("fetch failed", { cause });
}

function nodeSend(url: string, init: ServiceRequestInit, body: Body): Promise<Response> {
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(signal.reason);
  let headers: OutgoingHttpHeaders;
  try {
    headers = headersOf(init, body);
  } catch (err) {
    return Promise.reject(fetchFailed(err));
  }
  agents ??= { http: new HttpAgent(KEEP_ALIVE), https: new HttpsAgent(KEEP_ALIVE) };
  const https = url.charCodeAt(4) === 115; // "https:"
  const method = (init.method ?? "GET").toUpperCase();
  return new Promise<Response>((resolve, reject) => {
    let req: ReturnType<typeof httpRequest> | undefined;
    let chunks: NodeChunks | undefined;
    // The caller's signal is watched here, not handed to node:http: node:http would destroy the socket whenever
    // the signal fires, even after the answer is whole (the socket back in the pool, or serving another request),
    // with an error nobody listens to. Watched until the body is read, cancelled or failed.
    const onAbort = () => {
      if (chunks) chunks.abort(signal!.reason);
      else {
        req?.destroy();
        reject(signal!.reason);
      }
    };
    const unwatch = () => signal?.removeEventListener("abort", onAbort);
    signal?.addEventListener("abort", onAbort, { once: true });
    const attempt = (again: boolean) => {
      let answered = false;
      try {
        const options = { method, headers, agent: https ? agents!.https : agents!.http };
        req = https ? httpsRequest(url, options) : httpRequest(url, options);
      } catch (err) {
        // a bad header name or value, an invalid URL: what fetch rejects with
        unwatch();
        reject(fetchFailed(err));
        return;
      }
      const sent = req;
      sent.on("response", (res) => {
        answered = true;
        const status = res.statusCode ?? 0;
        let response: NodeResponse;
        try {
          if (status < 200 || status > 599) throw new Error(`invalid HTTP status ${status}`);
          const empty = method === "HEAD" || status === 204 || status === 304;
          if (empty) {
            // no body to wait for: the socket goes back to the pool at once
            res.resume();
            unwatch();
          } else chunks = new NodeChunks(decoded(res), unwatch);
          response = new NodeResponse(res, url, chunks);
        } catch (err) {
          res.destroy();
          unwatch();
          reject(fetchFailed(err));
          return;
        }
        resolve(response);
      });
      sent.on("error", (err: NodeJS.ErrnoException) => {
        if (answered || signal?.aborted) return; // the body's reader sees it; an abort has rejected already
        // the server closed a kept-alive socket as it was picked: it never read this request
        if (!again && sent.reusedSocket && (err.code === "ECONNRESET" || err.code === "EPIPE")) return attempt(true);
        unwatch();
        reject(fetchFailed(err));
      });
      sent.end(body);
    };
    attempt(false);
  });
}

/** The decoders of a `content-encoding` (applied last to first), as fetch applies them; unknown codings pass as they are. */
function decoded(res: IncomingMessage): Readable {
  const coding = res.headers["content-encoding"];
  if (!coding) return res;
  const steps: NodeJS.ReadWriteStream[] = [];
  for (const c of coding.toLowerCase().split(",").reverse()) {
    const name = c.trim();
    // lenient ends, as undici's fetch: a body cut after its last full block still reads
    const flush = { flush: zlibConstants.Z_SYNC_FLUSH, finishFlush: zlibConstants.Z_SYNC_FLUSH };
    if (name === "gzip" || name === "x-gzip") steps.push(createGunzip(flush));
    else if (name === "deflate") steps.push(createInflate(flush));
    else if (name === "br") steps.push(createBrotliDecompress({ flush: zlibConstants.BROTLI_OPERATION_FLUSH, finishFlush: zlibConstants.BROTLI_OPERATION_FLUSH }));
    else if (name !== "identity") return res;
  }
  if (steps.length === 0) return res;
  return pipeline([res, ...steps] as unknown as [Readable, ...NodeJS.ReadWriteStream[]], () => undefined) as unknown as Readable;
}

/**
 * A Buffer as the plain Uint8Array a web stream gives (the same memory, no copy): a Buffer's `slice()` is a view
 * where a Uint8Array's is a copy, and readers of chunks (`b.slice().buffer`) count on the copy.
 */
function plain(chunk: Buffer): Uint8Array {
  return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

/** Reads a Node stream chunk by chunk, as a web stream's reader would (no web stream made for it). */
class NodeChunks implements ChunkSource {
  #src: Readable;
  #ended = false;
  #error: unknown;
  #waiting: { resolve: (r: ReadableStreamReadResult<Uint8Array>) => void; reject: (e: unknown) => void } | undefined;
  /** called once, when the body is read to its end, fails or is cancelled */
  #settled: (() => void) | undefined;

  constructor(src: Readable, settled?: () => void) {
    this.#src = src;
    this.#settled = settled;
    src.on("readable", () => {
      const w = this.#waiting;
      if (!w) return;
      const chunk = src.read() as Buffer | null;
      if (chunk !== null) {
        this.#waiting = undefined;
        w.resolve({ done: false, value: plain(chunk) });
      }
    });
    src.on("end", () => {
      this.#ended = true;
      this.#settle();
      const w = this.#waiting;
      this.#waiting = undefined;
      w?.resolve({ done: true, value: undefined });
    });
    src.on("error", (err) => this.#fail(err));
    // a connection that breaks mid-body ends the answer without an error of its own
    if ("aborted" in src) src.on("aborted", () => this.#fail(Object.assign(new Error("aborted"), { code: "ECONNRESET" })));
  }

  #settle(): void {
    const settled = this.#settled;
    this.#settled = undefined;
    settled?.();
  }

  #fail(err: unknown, asIs = false): void {
    if (this.#ended || this.#error !== undefined) return;
    this.#error = asIs ? err : fetchFailed(err);
    this.#settle();
    const w = this.#waiting;
    this.#waiting = undefined;
    w?.reject(this.#error);
  }

  /** The caller's signal fired while the body was being read: reads fail with its reason, the connection closes. */
  abort(reason: unknown): void {
    this.#fail(reason, true);
    this.#src.destroy();
  }

  read(): Promise<ReadableStreamReadResult<Uint8Array>> {
    if (this.#error !== undefined) return Promise.reject(this.#error);
    const chunk = this.#src.read() as Buffer | null;
    if (chunk !== null) return Promise.resolve({ done: false, value: plain(chunk) });
    if (this.#ended || this.#src.readableEnded) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve, reject) => (this.#waiting = { resolve, reject }));
  }

  cancel(reason?: unknown): Promise<void> {
    if (!this.#ended) {
      this.#ended = true;
      this.#settle();
      this.#src.destroy();
      const w = this.#waiting;
      this.#waiting = undefined;
      w?.resolve({ done: true, value: undefined });
    }
    void reason;
    return Promise.resolve();
  }
}

function rawHeaders(res: IncomingMessage): Headers {
  const headers = new Headers();
  const raw = res.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  return headers;
}

function usedError(): TypeError {
  return new TypeError("Body is unusable: Body has already been read");
}

/**
 * A `Response` (it is one: `instanceof`, `headers`, `status`, `ok` are the platform's) whose body comes from the
 * Node answer: read whole in one loop, or as a web stream made only when `body` is asked for.
 */
class NodeResponse extends Response {
  readonly #url: string;
  #chunks: ChunkSource | undefined;
  #stream: ReadableStream<Uint8Array> | undefined;
  #used = false;

  /** `chunks`: the body's reader; undefined: no body (HEAD, 204, 304) */
  constructor(res: IncomingMessage, url: string, chunks: ChunkSource | undefined) {
    super(null, { status: res.statusCode, statusText: res.statusMessage ?? "", headers: rawHeaders(res) });
    this.#url = url;
    this.#chunks = chunks;
  }

  override get url(): string {
    return this.#url;
  }

  override get body(): ReadableStream<Uint8Array<ArrayBuffer>> | null {
    return this.#body() as ReadableStream<Uint8Array<ArrayBuffer>> | null;
  }

  // (the body guard puts its own `body` and `clone` on the instance: these read past them)
  #body(): ReadableStream<Uint8Array> | null {
    if (this.#stream) return this.#stream;
    const chunks = this.#chunks;
    if (!chunks) return null;
    this.#chunks = undefined;
    this.#stream = new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          const r = await chunks.read();
          if (r.done) controller.close();
          else controller.enqueue(r.value);
        },
        cancel: (reason) => chunks.cancel(reason),
      },
      { highWaterMark: 0 },
    );
    return this.#stream;
  }

  override get bodyUsed(): boolean {
    return this.#used || (this.#stream !== undefined && this.#stream.locked);
  }

  /** The body as chunks, with no web stream made for it (the body guard's read); once. */
  [BODY_CHUNKS](): ChunkSource | undefined {
    if (this.#used) throw usedError();
    if (this.#stream) return this.#stream.getReader();
    this.#used = true;
    const chunks = this.#chunks;
    this.#chunks = undefined;
    return chunks;
  }

  async #bytes(): Promise<Uint8Array> {
    const source = this[BODY_CHUNKS]();
    this.#used = true;
    if (!source) return new Uint8Array(0);
    const parts: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const r = await source.read();
      if (r.done) return joinChunks(parts, size);
      parts.push(r.value);
      size += r.value.byteLength;
    }
  }

  override async text(): Promise<string> {
    return new TextDecoder().decode(await this.#bytes());
  }

  override async json(): Promise<unknown> {
    return JSON.parse(await this.text()) as unknown;
  }

  override async arrayBuffer(): Promise<ArrayBuffer> {
    const b = await this.#bytes();
    return (b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b.buffer : b.slice().buffer) as ArrayBuffer;
  }

  override async bytes(): Promise<Uint8Array<ArrayBuffer>> {
    return new Uint8Array(await this.arrayBuffer());
  }

  override async blob(): Promise<Blob> {
    return new Blob([await this.arrayBuffer()], { type: this.headers.get("content-type") ?? "" });
  }

  override async formData(): Promise<FormData> {
    return new Response(await this.arrayBuffer(), { headers: this.headers }).formData();
  }

  override clone(): Response {
    if (this.#used || this.#stream?.locked) throw new TypeError("Response.clone: Body has already been consumed.");
    const body = this.#body();
    let copy: ReadableStream<Uint8Array> | null = null;
    if (body) [this.#stream, copy] = body.tee();
    const clone = new Response(copy, { status: this.status, statusText: this.statusText, headers: this.headers });
    Object.defineProperty(clone, "url", { value: this.#url });
    return clone;
  }
}
