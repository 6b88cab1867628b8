/**
 * Writing an answer the pipeline decided: the common headers (the emulator's `Date`, CF-RAY, version), JSON, text
 * or bytes compressed as the client accepts, SSE streams written as they come with backpressure, and the faults
 * that happen on the way out: a stream cut after k chunks, an answer lost whole (the connection destroyed after the
 * route ran).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { randomBytes } from "node:crypto";
import { brotliCompressSync, constants as zlibConstants, gzipSync } from "node:zlib";
import { corsHeaders } from "./cors.js";
import type { EmulatorContext, EmulatorResponse } from "./types.js";

/** `x-<brand>-version`: a fixed build stamp in the service's `YYYYMMDD.HHMMSS` form */
export const EMULATOR_VERSION = "20261121.120000";

/** What is written: the route's answer, the pipeline's headers, and the faults on the way out. */
export interface WrittenOutcome {
  response: EmulatorResponse;
  /** headers the pipeline adds (rate limits, balances, model); the route's own headers win over them */
  headers: Record<string, string>;
  /** cut the stream after this many chunks */
  cutAfter?: number;
  /** lose the whole answer: destroy the connection before its first byte */
  loseAnswer?: boolean;
  /** runs once the answer is complete on the server's side (see server.ts) */
  onWritten?: () => void;
}

/** The first of br/gzip the client accepts, in the order it listed them (q=0 means "not acceptable"). */
export function pickEncoding(acceptEncoding: string | undefined): "br" | "gzip" | undefined {
  if (!acceptEncoding) return undefined;
  for (const part of acceptEncoding.split(",")) {
    const [name = "", ...params] = part.trim().toLowerCase().split(";");
    const q = params.map((s) => s.trim()).find((s) => s.startsWith("q="));
    if (q && Number(q.slice(2)) === 0) continue;
    if (name === "br" || name === "gzip") return name;
  }
  return undefined;
}

function serializeBody(body: unknown): { buffer: Buffer; contentType?: string } {
  if (body === undefined || body === null) return { buffer: Buffer.alloc(0) };
  if (Buffer.isBuffer(body)) return { buffer: body, contentType: "application/octet-stream" };
  if (typeof body === "string") return { buffer: Buffer.from(body, "utf8"), contentType: "text/plain; charset=utf-8" };
  return { buffer: Buffer.from(JSON.stringify(body), "utf8"), contentType: "application/json; charset=utf-8" };
}

export function commonHeaders(ctx: EmulatorContext): Record<string, string> {
  return {
    // the emulator's clock (option `now`), which its SIWX checks also use: a test can run it behind the client
    date: new Date(ctx.now()).toUTCString(),
    "cf-ray": `${randomBytes(8).toString("hex")}-EMU`,
    [`${ctx.names.headerPrefix}version`]: EMULATOR_VERSION,
    ...(ctx.options.cors ? corsHeaders(ctx.names) : {}),
  };
}

function lowerKeys(headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) out[k.toLowerCase()] = v;
  return out;
}

/** Resolves when the socket can take more (or is gone): stream writes honour backpressure. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

async function writeStream(
  res: ServerResponse,
  stream: AsyncIterable<string>,
  cutAfter: number | undefined,
  onWritten?: () => void,
): Promise<void> {
  res.flushHeaders();
  const iterator = stream[Symbol.asyncIterator]();
  let written = 0;
  let flushed: Promise<void> = Promise.resolve();
  const closed = new Promise<void>((resolve) => res.once("close", () => resolve()));
  try {
    while (true) {
      if (cutAfter !== undefined && written >= cutAfter) {
        // the fault: the chunks already written reach the client, then the connection dies (no [DONE])
        await Promise.race([flushed, closed]);
        onWritten?.();
        res.destroy();
        return;
      }
      const next = await iterator.next();
      if (next.done) break;
      if (res.destroyed) return;
      written++;
      let ok = true;
      flushed = new Promise<void>((resolve) => {
        ok = res.write(next.value, () => resolve());
      });
      if (!ok) await drained(res);
    }
    onWritten?.();
    res.end();
  } catch (err) {
    // an error after the headers went out can only be told by cutting the connection
    onWritten?.();
    res.destroy(err instanceof Error ? err : undefined);
  } finally {
    onWritten?.();
    if (res.destroyed) await iterator.return?.().catch(() => undefined);
  }
}

export async function writeOutcome(
  ctx: EmulatorContext,
  req: IncomingMessage,
  res: ServerResponse,
  outcome: WrittenOutcome,
): Promise<void> {
  const { response } = outcome;
  if (outcome.loseAnswer) {
    // the fault: the route ran (and charged), then the connection dies before any byte of its answer
    outcome.onWritten?.();
    res.destroy();
    return;
  }
  const headers: Record<string, string> = {
    ...commonHeaders(ctx),
    ...lowerKeys(outcome.headers),
    ...lowerKeys(response.headers),
  };
  if (response.status >= 400) headers[`${ctx.names.headerPrefix}host-name`] ??= "emulator";
  if (response.stream) {
    headers["content-type"] ??= "text/event-stream; charset=utf-8";
    headers["cache-control"] ??= "no-cache";
    res.writeHead(response.status, headers);
    await writeStream(res, response.stream, outcome.cutAfter, outcome.onWritten);
    return;
  }
  outcome.onWritten?.();
  const { buffer, contentType } = serializeBody(response.body);
  if (contentType) headers["content-type"] ??= contentType;
  let payload = buffer;
  const encoding = pickEncoding(req.headers["accept-encoding"]);
  if (encoding && buffer.length > 0 && !headers["content-encoding"]) {
    payload = encoding === "br" ? brotliCompressSync(buffer, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 4 } }) : gzipSync(buffer);
    headers["content-encoding"] = encoding;
    headers.vary = "Accept-Encoding";
  }
  headers["content-length"] = String(payload.length);
  res.writeHead(response.status, headers);
  res.end(req.method === "HEAD" ? undefined : payload);
}
