/**
 * The emulator's HTTP server: node:http on 127.0.0.1 and the one pipeline every request under /api/v1 takes
 * (the wiring contract, top to bottom):
 *
 *   fault injection -> abuse block -> route match -> auth -> wallet requests in flight
 *   -> [inference: model, Pro-only, balance] -> request/token rate limit -> [overload] -> handler -> headers
 *   -> compression -> failure counting
 *
 * Routes come from one module per area of the API; the server only does what is common to all of them.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { PAYMENT_HEADERS } from "langchain-service";
import { accountForIdentity, accountIdentity, addressIdentity, authenticate, callerIdentity, claimedIdentity, publicAccountId } from "./auth.js";
import { FAULT_BODIES, FaultInjector } from "./faults.js";
import { chargedRequestIds } from "./ledger.js";
import { findModel, type ServedModel } from "./models/catalog.js";
import { arrivalPromptTokens, RateLimiter, type Bucket } from "./rate-limits.js";
import { apiTierId } from "./routes/rate-limits.js";
import { commonHeaders, writeOutcome, type WrittenOutcome } from "./writer.js";
import { preflightHeaders } from "./cors.js";
import {
  EmulatorHttpError,
  type Account,
  type Caller,
  type EmulatorContext,
  type EmulatorRequest,
  type EmulatorResponse,
  type ResolvedModel,
  type Route,
  type X402Hooks,
  isLiveMode,
} from "./types.js";

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
/** payment headers are accepted on the top-up route only (elsewhere 400 PAYMENT_HEADER_NOT_ACCEPTED) */
const TOP_UP_PATH = "/x402/top-up";

export { collectRoutes } from "./routes/index.js";
export { EMULATOR_VERSION, pickEncoding } from "./writer.js";

// --- route matching ------------------------------------------------------------------------------------

export interface RouteMatch {
  route: Route;
  params: Record<string, string>;
}

function matchPattern(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split("/").filter(Boolean);
  const got = path.split("/").filter(Boolean);
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const g = got[i]!;
    if (w.startsWith(":")) {
      try {
        params[w.slice(1)] = decodeURIComponent(g);
      } catch {
        return undefined;
      }
    } else if (w !== g) return undefined;
  }
  return params;
}

/** The route for `method path`; `allowed` lists the methods of a path that exists under other methods. */
export function matchRoute(routes: Route[], method: string, path: string): RouteMatch | { allowed: string[] } | undefined {
  const allowed: string[] = [];
  for (const route of routes) {
    const params = matchPattern(route.pattern, path);
    if (!params) continue;
    const routeMethod = route.method.toUpperCase();
    // HEAD is GET without the body (the writer leaves the body out)
    if (routeMethod === method || (method === "HEAD" && routeMethod === "GET")) return { route, params };
    allowed.push(route.method.toUpperCase());
  }
  return allowed.length ? { allowed } : undefined;
}

// --- the pipeline --------------------------------------------------------------------------------------

export interface PipelineState {
  ctx: EmulatorContext;
  routes: Route[];
  limiter: RateLimiter;
  faults: FaultInjector;
}

/** What the pipeline decided, before it is written. */
interface Outcome extends WrittenOutcome {
  /** who failures are counted against */
  identity: string;
  /** false for the abuse block's own answers (they do not extend the block) */
  countFailure: boolean;
  account?: Account;
  model?: ServedModel;
  /**
   * Runs once the answer is complete on the server's side, before its last byte goes out (so a client never sees
   * the end of an answer while the server still counts the request in flight): a wallet's place among its requests
   * in flight is given back here.
   */
  onWritten?: () => void;
}

/** The live service's cap of requests in flight per wallet (the 6th gets `429 X402_CONCURRENCY_LIMIT`). */
export const LIVE_WALLET_CONCURRENCY = 5;

/** Requests in flight per wallet, as the live service counts them (on inference and crypto RPC routes). */
class WalletFlights {
  readonly #count = new Map<string, number>();
  constructor(readonly limit: number) {}
  /** Takes a place for `wallet`; undefined when it already has `limit` in flight, else the release (idempotent). */
  take(wallet: string): (() => void) | undefined {
    const n = this.#count.get(wallet) ?? 0;
    if (n >= this.limit) return undefined;
    this.#count.set(wallet, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#count.get(wallet) ?? 1) - 1;
      if (left <= 0) this.#count.delete(wallet);
      else this.#count.set(wallet, left);
    };
  }
}
const walletFlights = new WeakMap<PipelineState, WalletFlights | null>();
function walletFlightsOf(state: PipelineState): WalletFlights | undefined {
  let f = walletFlights.get(state);
  if (f === undefined) {
    const option = state.ctx.options.walletConcurrency;
    const limit = option === undefined ? (isLiveMode(state.ctx.options) ? LIVE_WALLET_CONCURRENCY : 0) : option === false ? 0 : option;
    walletFlights.set(state, (f = limit > 0 ? new WalletFlights(limit) : null));
  }
  return f ?? undefined;
}

function errorResponse(status: number, error: string, extra: Record<string, unknown> = {}): EmulatorResponse {
  return { status, body: { error, ...extra } };
}

function fromHttpError(err: EmulatorHttpError): EmulatorResponse {
  return { status: err.status, body: err.body, headers: err.headers };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The JSON body of an inference request, or a 400 explaining why not. */
function parseInferenceBody(body: Buffer): { json: Record<string, unknown> } | { error: EmulatorResponse } {
  let json: unknown;
  try {
    json = JSON.parse(body.toString("utf8"));
  } catch {
    return { error: errorResponse(400, "Invalid request body: expected JSON", { details: { _errors: ["Body is not valid JSON"] } }) };
  }
  if (!json || typeof json !== "object" || Array.isArray(json)) {
    return { error: errorResponse(400, "Invalid request body: expected a JSON object", { details: { _errors: ["Expected object"] } }) };
  }
  return { json: json as Record<string, unknown> };
}

/** The abuse block's 429; it says when to retry (spec part 7): the end of the block. */
function abuseBlock(limiter: RateLimiter, blockedMs: number, identity: string): EmulatorResponse {
  const end = limiter.now() + blockedMs;
  const retry = { "x-ratelimit-reset-requests": String(limiter.resetUnit === "ms" ? end : Math.ceil(end / 1000)), "retry-after": String(Math.ceil(blockedMs / 1000)) };
  return { ...errorResponse(429, limiter.abuseMessage(identity)), headers: retry };
}

/** The live service's answer to an overloaded model (also its default wait: 30 s). */
export const OVERLOADED_MESSAGE = "The model is currently overloaded. Please try again later.";

async function runPipeline(state: PipelineState, req: EmulatorRequest): Promise<Outcome> {
  const { ctx, limiter, faults } = state;
  const p = ctx.names.headerPrefix;
  let identity = claimedIdentity(req, ctx.ledger);
  const done = (response: EmulatorResponse, extra: Partial<Outcome> = {}): Outcome => ({
    response,
    headers: {},
    identity,
    countFailure: true,
    ...extra,
  });

  // 1. faults: 500/503 before any route runs (nothing is charged), after their latency; a served request's latency
  // comes once it is admitted (below), like a model's time: it counts while the request is in flight
  const fault = faults.decide(req.path);
  if (fault.status !== undefined) {
    if (fault.latencyMs > 0) await sleep(fault.latencyMs);
    return done({ status: fault.status, body: FAULT_BODIES[fault.status] ?? { error: `HTTP ${fault.status}` } });
  }

  // 2. abuse block (of the identity claimed: reading a block lets no one cause one)
  const blockedMs = limiter.blockedFor(identity);
  if (blockedMs > 0) return done(abuseBlock(limiter, blockedMs, identity), { countFailure: false });

  // 3. route
  if (req.path !== TOP_UP_PATH && PAYMENT_HEADERS.some((h) => req.headers[h])) {
    return done(
      errorResponse(400, "Payment headers are accepted on POST /x402/top-up only", { code: "PAYMENT_HEADER_NOT_ACCEPTED" }),
    );
  }
  const match = matchRoute(state.routes, req.method, req.path);
  if (!match) return done(errorResponse(404, "Not found"));
  if ("allowed" in match) {
    return done({ ...errorResponse(405, "Method not allowed"), headers: { allow: [...new Set(match.allowed)].join(", ") } });
  }
  const { route } = match;
  req.params = match.params;

  // 4. auth
  let caller: Caller;
  try {
    caller = await authenticate(route, req, ctx);
  } catch (err) {
    if (!(err instanceof EmulatorHttpError)) throw err;
    // A refused credential proves no identity: its failure counts against the sender's address, never against
    // the wallet or key it names (junk headers naming a victim must not get the victim blocked), and a sender
    // blocked for that is answered with the block.
    identity = addressIdentity(req);
    const senderBlockedMs = limiter.blockedFor(identity);
    if (senderBlockedMs > 0) return done(abuseBlock(limiter, senderBlockedMs, identity), { countFailure: false });
    return done(fromHttpError(err));
  }
  identity = callerIdentity(caller, req.remoteAddress);
  const account = caller.kind === "anonymous" ? undefined : caller.account;
  const headers: Record<string, string> = {};
  // a wallet's requests in flight (live: at most 5; the 6th is refused, and a refusal is not a failure)
  let onWritten: (() => void) | undefined;
  const flights = caller.kind === "wallet" && (route.inference || route.pattern.startsWith("/crypto/rpc/")) ? walletFlightsOf(state) : undefined;
  if (flights && caller.kind === "wallet") {
    onWritten = flights.take(caller.account.id);
    if (!onWritten) {
      return done(errorResponse(429, `Too many concurrent requests for this wallet (at most ${flights.limit} in flight)`, { code: "X402_CONCURRENCY_LIMIT" }), { countFailure: false });
    }
  }
  if (fault.latencyMs > 0) await sleep(fault.latencyMs);
  let bucket: Bucket = "default";
  let model: ServedModel | undefined;
  /** a chat prompt's tokens, counted in the token window on arrival (the rest when served) */
  let arrivalTokens = 0;
  if (account) {
    // balances as they were before the request
    headers[`${p}balance-usd`] = String(account.usd);
    headers[`${p}balance-diem`] = String(account.diem);
  }
  /** a route answered with its own rate limit (the crypto RPC cap): the chat limits' headers stay off it */
  let ownLimit = false;
  const outcome = (response: EmulatorResponse, extra: Partial<Outcome> = {}): Outcome => {
    if (account && !ownLimit && !Object.keys(headers).some((h) => h.startsWith("x-ratelimit-"))) {
      Object.assign(headers, limiter.headers(identity, bucket, account.partner));
    }
    // the error budget (live) on every credentialed answer but a route's own rate limit (its X-RateLimit-* names clash)
    if (account && !ownLimit) Object.assign(headers, limiter.budgetHeaders(identity));
    return { response, headers, identity, countFailure: true, account, model, onWritten, ...extra };
  };

  /** an API key without balance, or a wallet under the minimum credit: the 402 (spec part 7) */
  const creditRefusal = (): EmulatorResponse | undefined => {
    if (caller.kind === "apiKey" && ctx.ledger.available(caller.account) <= 0) {
      // live: a plain message without a code; seed: the spec's INSUFFICIENT_BALANCE
      if (isLiveMode(ctx.options)) return errorResponse(402, "Insufficient USD or Diem balance to complete request. Add credits to your account.");
      return errorResponse(402, "Insufficient balance", { code: "INSUFFICIENT_BALANCE" });
    }
    if (caller.kind === "wallet") return ctx.x402.walletRefusal(req, ctx, caller.account);
    return undefined;
  };
  const modelHeaders = (served: ServedModel) => {
    headers[`${p}model-id`] = served.id;
    headers[`${p}model-name`] = served.name;
    headers[`${p}model-router`] = served.router;
    if (served.deprecated) {
      headers[`${p}model-deprecation-warning`] = served.deprecated.warning;
      headers[`${p}model-deprecation-date`] = served.deprecated.date;
    }
  };

  // 5a. inference routes that find their own model (or have none): images, speech, web search and scrape
  if (route.inference && route.resolveModel) {
    let resolved: ResolvedModel;
    try {
      resolved = await route.resolveModel(req);
    } catch (err) {
      if (!(err instanceof EmulatorHttpError)) throw err;
      return outcome(fromHttpError(err));
    }
    model = resolved.model;
    bucket = resolved.bucket;
    if (model) modelHeaders(model);
    if (account && model?.proOnly && !account.pro) return outcome(errorResponse(401, "This model is available to Pro users only"));
    const refused = account ? creditRefusal() : undefined;
    if (refused) return outcome(refused);
  }

  // 5. inference: the model, Pro-only, balance
  if (route.inference && !route.resolveModel) {
    const parsed = parseInferenceBody(req.body);
    if ("error" in parsed) return outcome(parsed.error);
    const modelId = parsed.json.model;
    if (typeof modelId !== "string" || modelId === "") {
      return outcome(errorResponse(400, "Invalid request: model is required", { details: { model: { _errors: ["Required"] } } }));
    }
    const textModel = findModel(modelId);
    model = textModel;
    if (!textModel) {
      const id = modelId.split(":")[0];
      // live: 404 "Specified model not found"; seed: a 400 DetailedError
      if (isLiveMode(ctx.options)) return outcome(errorResponse(404, `Specified model not found: ${id}. See GET /models for the models available.`));
      return outcome(
        errorResponse(400, `Invalid request: unknown model "${id}"`, {
          details: { model: { _errors: ["Model not found; see GET /models"] } },
        }),
      );
    }
    modelHeaders(textModel);
    bucket = textModel.tier;
    arrivalTokens = arrivalPromptTokens(parsed.json);
    if (account) {
      if (textModel.proOnly && !account.pro) return outcome(errorResponse(401, "This model is available to Pro users only"));
      const refused = creditRefusal();
      if (refused) return outcome(refused);
    }
  }

  // 6. request and token limits per (caller, tier)
  if (account) {
    const admitted = limiter.admit(identity, bucket, account.partner, arrivalTokens);
    Object.assign(headers, admitted.headers);
    if (!admitted.allowed) {
      limiter.record(identity, {
        apiKeyId: publicAccountId(account),
        modelId: model?.id ?? "",
        rateLimitTier: apiTierId(account),
        rateLimitType: admitted.exceeded ?? "RPM",
        timestamp: new Date(ctx.now()).toISOString(),
      });
      return outcome(errorResponse(429, "Rate limit exceeded"));
    }
  }

  // 6b. an overloaded model (fault knob): 429 with Retry-After, after the limits counted the request
  if (route.inference) {
    const retryAfter = faults.overloaded(req.path);
    if (retryAfter !== undefined) return outcome({ ...errorResponse(429, OVERLOADED_MESSAGE), headers: { "retry-after": String(retryAfter) } });
  }

  // 7. the route itself
  let response: EmulatorResponse;
  const charged: string[] = [];
  try {
    response = await chargedRequestIds.run(charged, () => route.handler(req, ctx, caller));
  } catch (err) {
    if (!(err instanceof EmulatorHttpError)) throw err;
    response = fromHttpError(err);
  }
  // the id the ledger charged this request under, for the client to quote and match
  if (charged.length && !Object.keys(response.headers ?? {}).some((k) => k.toLowerCase() === "x-request-id")) {
    response = { ...response, headers: { ...response.headers, "x-request-id": charged[0]! } };
  }

  // 8. what the request used, and the headers that follow from it
  if (account) {
    const tokens = response.meta?.tokens;
    if (tokens) limiter.addTokens(identity, bucket, Math.max(0, tokens - arrivalTokens));
    // A route's own 429 (the crypto RPC cap; its one-at-a-time rule, `meta.ownLimit`) carries only the headers the
    // route gives it (the cap's `X-RateLimit-Limit`, `-Remaining`, `-Reset`): no chat-limit `x-ratelimit-*` to misread.
    ownLimit =
      response.status === 429 &&
      (response.meta?.ownLimit === true || Object.keys(response.headers ?? {}).some((h) => h.toLowerCase() === "x-ratelimit-limit"));
    if (ownLimit) {
      for (const h of Object.keys(headers)) if (h.startsWith("x-ratelimit-")) delete headers[h];
    } else {
      Object.assign(headers, limiter.headers(identity, bucket, account.partner), limiter.budgetHeaders(identity));
    }
    if (caller.kind === "wallet" && route.inference && response.status >= 200 && response.status < 300 && ctx.x402.balanceHeader) {
      headers["x-balance-remaining"] = account.usd.toFixed(6);
    }
  }
  return outcome(response, { cutAfter: faults.streamCutAfter(req.path), loseAnswer: faults.loseAnswer(req.path) });
}

// --- the node:http listener ----------------------------------------------------------------------------

class PayloadTooLarge extends Error {}

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

function toEmulatorRequest(req: IncomingMessage, url: URL, body: Buffer): EmulatorRequest {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return {
    method: (req.method ?? "GET").toUpperCase(),
    path: url.pathname.slice(API_PREFIX.length) || "/",
    params: {},
    query: url.searchParams,
    headers,
    body,
    url,
    remoteAddress: req.socket.remoteAddress,
  };
}

/** The request listener: runs the pipeline for /api/v1, answers 404 elsewhere, counts failures. */
export function createListener(getState: () => Promise<PipelineState>) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = Date.now();
    let state: PipelineState | undefined;
    let status = 0;
    try {
      state = await getState();
      const { ctx, limiter } = state;
      const url = publicUrl(req.url ?? "/", ctx.publicOrigin);
      const inApi = url.pathname === API_PREFIX || url.pathname.startsWith(`${API_PREFIX}/`);
      if (ctx.options.cors && req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined) {
        // a preflight: no credential, no pipeline, nothing counted
        status = 204;
        req.resume();
        res.writeHead(204, { ...commonHeaders(ctx), ...preflightHeaders(ctx.names) });
        res.end();
        return;
      }
      let body: Buffer;
      const limit = maxBodyBytes(ctx.options);
      try {
        body = await readBody(req, limit);
      } catch (err) {
        if (!(err instanceof PayloadTooLarge)) throw err;
        // before auth and the error budget: the live 413 does not count as a failure
        const message = isLiveMode(ctx.options) ? LIVE_TOO_LARGE_MESSAGE : `Request body exceeds ${limit} bytes`;
        const response = errorResponse(413, message, { code: "PAYLOAD_TOO_LARGE" });
        status = 413;
        res.setHeader("connection", "close");
        await writeOutcome(ctx, req, res, { response, headers: {} });
        return;
      }
      const ereq = toEmulatorRequest(req, url, body);
      const outcome: Outcome = inApi
        ? await runPipeline(state, ereq)
        : { response: errorResponse(404, "Not found"), headers: {}, identity: "", countFailure: false };
      status = outcome.response.status;
      try {
        await writeOutcome(ctx, req, res, outcome);
      } finally {
        outcome.onWritten?.();
      }
      // an in-band failure of a 200 (a stream's error event) counts only where every non-success does (seed); a
      // capability gate's 400 counts in the unsupported-feature budget instead
      const unsupported = outcome.response.meta?.unsupportedFeature === true;
      const failed = unsupported || limiter.countsAsFailure(status) || (outcome.response.meta?.failed === true && limiter.countsAsFailure(500));
      if (failed && outcome.countFailure && outcome.identity) {
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
      }
    } catch (err) {
      status = 500;
      // an unexpected bug in a route: say so on stderr (never request headers: they carry keys)
      process.stderr.write(`[emulator] ${req.method} ${req.url}: ${(err as Error)?.stack ?? String(err)}\n`);
      if (!res.headersSent) {
        const body = JSON.stringify({ error: "Internal server error" });
        // the always-present headers (spec 2.5) on this answer too: a client logs CF-RAY for support
        const common = state ? { ...commonHeaders(state.ctx), [`${state.ctx.names.headerPrefix}host-name`]: "emulator" } : {};
        res.writeHead(500, { ...common, "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(body)) });
        res.end(body);
      } else res.destroy();
    } finally {
      if (state?.ctx.options.log) {
        process.stderr.write(`[emulator] ${req.method} ${req.url} ${status} ${Date.now() - started}ms\n`);
      }
    }
  };
}

/** Starts node:http on 127.0.0.1 (port 0: ephemeral). */
export async function listen(listener: ReturnType<typeof createListener>, port = 0): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => void listener(req, res));
  // keep-alive sockets must not hold close() up
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  return { server, port: (server.address() as AddressInfo).port };
}

export async function closeServer(server: Server): Promise<void> {
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
