/**
 * The stages every request takes, API or not, outermost first: the log line, the emulator's state, failure
 * counting and the writer on the way back out, then CORS preflights and the body (413) on the way in.
 *
 * The writer keeps the raw Node response (`c.env.outgoing`) rather than a web `Response`: answers lost whole and
 * streams cut after k chunks destroy the socket mid-answer, SSE writes wait for `drain`, and brotli is not in
 * Hono's `compress()` (CompressionStream has gzip and deflate only); ../writer.ts does all three in one place.
 */
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import type { IncomingMessage } from "node:http";
import { accountForIdentity, accountIdentity, claimedIdentity, publicAccountId } from "../auth.js";
import { preflightHeaders } from "../cors.js";
import { apiTierId } from "../routes/rate-limits.js";
import { isLiveMode, type EmulatorContext, type EmulatorRequest } from "../types.js";
import { commonHeaders, writeOutcome } from "../writer.js";
import { errorResponse, onward, type PipelineState, type Stage, type StageContext } from "./state.js";

export const API_PREFIX = "/api/v1";
/**
 * Request bodies above this answer 413 in live mode (the default): the service's guides say "over 35 MB of JSON"
 * without saying which megabyte, so this takes 35 MiB (35 * 1024 * 1024), which is also what a body-size setting of
 * "35mb" means to the usual Node body parsers. The client's `maxRequestBytes` defaults to the same number.
 */
export const MAX_BODY_BYTES = 35 * 1024 * 1024;
/** seed mode's limit: the contract names none, and the emulator refused above 10 MiB before the guides said 35 MB */
export const SEED_MAX_BODY_BYTES = 10 * 1024 * 1024;
/** the live service's words for a JSON body over its limit (its errors guide) */
const LIVE_TOO_LARGE_MESSAGE = "Request body exceeds the maximum allowed size.";

/** The largest request body the emulator reads: the `maxBodyBytes` option, else the mode's. */
export function maxBodyBytes(options: EmulatorContext["options"]): number {
  return options.maxBodyBytes ?? (isLiveMode(options) ? MAX_BODY_BYTES : SEED_MAX_BODY_BYTES);
}

/** node-server's marker for "written on the raw response": a fresh one per answer, as Hono may merge headers into it. */
export function alreadySent(): Response {
  return new Response(null, { headers: RESPONSE_ALREADY_SENT.headers });
}

/**
 * The request's path and query on the public origin. Only the path is taken from the request line: an
 * absolute-form (`http://evil.example/...`) or `//evil.example/...` target must not choose the origin that SIWX
 * sign-ins are checked against.
 */
export function publicUrl(target: string, publicOrigin: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(target, "http://request-line.invalid");
  } catch {
    parsed = new URL("http://request-line.invalid/"); // outside /api/v1: a 404
  }
  const url = new URL(publicOrigin);
  url.pathname = parsed.pathname;
  url.search = parsed.search;
  return url;
}

/** `[emulator] METHOD URL STATUS ms` on stderr with option `log`. */
export const logRequest: Stage = async (c, next) => {
  const started = Date.now();
  try {
    await next();
  } finally {
    if (c.var.state.ctx.options.log) {
      const { method, url } = c.env.incoming;
      const status = c.var.outcome?.response.status ?? (c.error ? 500 : 0);
      process.stderr.write(`[emulator] ${method} ${url} ${status} ${Date.now() - started}ms\n`);
    }
  }
};

/** The emulator's state, for every stage. */
export function withState(state: PipelineState): Stage {
  return async (c, next) => {
    c.set("state", state);
    await next();
  };
}

/**
 * Failures count toward the abuse block once the answer is out. An in-band failure of a 200 (a stream's error
 * event) counts only where every non-success does (seed); a capability gate's 400 counts in the
 * unsupported-feature budget instead.
 */
export const countFailures: Stage = async (c, next) => {
  await next();
  const outcome = c.var.outcome;
  if (!outcome) return;
  const { ctx, limiter } = c.var.state;
  const status = outcome.response.status;
  const unsupported = outcome.response.meta?.unsupportedFeature === true;
  const failed = unsupported || limiter.countsAsFailure(status) || (outcome.response.meta?.failed === true && limiter.countsAsFailure(500));
  if (!failed || !outcome.countFailure || !outcome.identity) return;
  const blocked = unsupported ? limiter.recordUnsupportedFeature(outcome.identity) : limiter.recordFailure(outcome.identity);
  const account = blocked ? (outcome.account ?? accountForIdentity(outcome.identity, ctx.ledger)) : undefined;
  if (account) {
    limiter.record(accountIdentity(account), {
      apiKeyId: publicAccountId(account),
      modelId: outcome.model?.id ?? "",
      rateLimitTier: apiTierId(account),
      rateLimitType: unsupported ? "UNSUPPORTED_FEATURE_REQUESTS" : "FAILED_REQUESTS",
      timestamp: new Date(ctx.now()).toISOString(),
    });
  }
};

/** Writes what the stages decided: common headers, compression, streams and the faults on the way out (../writer.ts). */
export const writeAnswer: Stage = async (c, next) => {
  await next();
  const outcome = c.var.outcome;
  if (!outcome) return; // the error handler wrote its 500 itself
  try {
    await writeOutcome(c.var.state.ctx, c.env.incoming, c.env.outgoing, outcome);
  } finally {
    outcome.onWritten?.();
  }
  // over any answer an inner handler returned (the not-found handler must return one): node-server writes nothing
  c.res = alreadySent();
};

/** A CORS preflight (option `cors`): 204 before the body is read; no credential, no pipeline, nothing counted. */
export const answerPreflight: Stage = async (c, next) => {
  const { ctx } = c.var.state;
  const incoming = c.env.incoming;
  if (!ctx.options.cors || incoming.method !== "OPTIONS" || incoming.headers["access-control-request-method"] === undefined)
    return onward(next);
  incoming.resume();
  c.set("outcome", { response: { status: 204, headers: preflightHeaders(ctx.names) }, headers: {}, identity: "", countFailure: false });
};

class PayloadTooLarge extends Error {}

/**
 * Node's request stream read whole, up to the limit. Hono's `bodyLimit()` would answer a declared-too-large body
 * without reading it; this drains it (keeping nothing), so the client reads the 413 rather than a reset upload.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume(); // drain what comes, keep nothing
      reject(new PayloadTooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on("end", () => (tooLarge ? reject(new PayloadTooLarge()) : resolve(Buffer.concat(chunks))));
    req.on("error", reject);
  });
}

function toEmulatorRequest(incoming: IncomingMessage, url: URL, body: Buffer): EmulatorRequest {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(incoming.headers)) {
    headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return {
    method: (incoming.method ?? "GET").toUpperCase(),
    path: url.pathname.slice(API_PREFIX.length) || "/",
    params: {},
    query: url.searchParams,
    headers,
    body,
    url,
    remoteAddress: incoming.socket.remoteAddress,
  };
}

/** The body, or 413 before auth and the error budget (the live 413 does not count as a failure); then the request. */
export const readRequest: Stage = async (c: StageContext, next) => {
  const { ctx } = c.var.state;
  const incoming = c.env.incoming;
  const limit = maxBodyBytes(ctx.options);
  let body: Buffer;
  try {
    body = await readBody(incoming, limit);
  } catch (err) {
    if (!(err instanceof PayloadTooLarge)) throw err;
    const message = isLiveMode(ctx.options) ? LIVE_TOO_LARGE_MESSAGE : `Request body exceeds ${limit} bytes`;
    const response = errorResponse(413, message, { code: "PAYLOAD_TOO_LARGE" });
    c.set("outcome", { response, headers: { connection: "close" }, identity: "", countFailure: false });
    return;
  }
  const req = toEmulatorRequest(incoming, publicUrl(incoming.url ?? "/", ctx.publicOrigin), body);
  c.set("pass", {
    req,
    identity: claimedIdentity(req, ctx.ledger),
    fault: { latencyMs: 0 },
    headers: {},
    bucket: "default",
    arrivalTokens: 0,
    ownLimit: false,
  });
  await next();
};

/** An unexpected bug in a route: a 500 (or a cut connection once the answer started), said on stderr. */
export function internalError(err: Error, c: StageContext): Response {
  const incoming = c.env.incoming;
  const res = c.env.outgoing;
  // never request headers: they carry keys
  process.stderr.write(`[emulator] ${incoming.method} ${incoming.url}: ${err?.stack ?? String(err)}\n`);
  c.set("outcome", undefined);
  if (!res.headersSent) {
    const body = JSON.stringify({ error: "Internal server error" });
    const state = c.var.state;
    // the always-present headers (spec 2.5) on this answer too: a client logs CF-RAY for support
    const common = state ? { ...commonHeaders(state.ctx), [`${state.ctx.names.headerPrefix}host-name`]: "emulator" } : {};
    res.writeHead(500, { ...common, "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(body)) });
    res.end(body);
  } else res.destroy();
  return alreadySent();
}
