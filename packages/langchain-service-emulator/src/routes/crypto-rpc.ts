/**
 * POST /crypto/rpc/{network}: the crypto RPC proxy as the published description tells it. JSON-RPC 2.0,
 * single or batch (≤ 100), forwarded to a configured upstream (`options.upstreams[slug]`, else the local chain
 * for EVM slugs). Billed per credit (base 20 EVM/Starknet, 30 zkSync/Solana; × 1/2/4 by method tier; JSON-RPC
 * errors 5 credits) at $7e-7 per credit, with the pricing headers, idempotency replay and the per-key cap
 * (100/min by default, `rateLimits.cryptoRpc`; counted by the server's RateLimiter).
 * A published slug with no node behind it is not listed, and is refused 400 like any unlisted slug (saying what
 * would serve it); a slug listed by an explicit `networks` option without an upstream answers as the service
 * does when its upstream fails: 500.
 *
 * Live mode (the default) adds what the service's guide says of the deployment: each user's requests are served
 * one at a time (a second waits up to 0.5 s, then `429 "Another request for this user is in flight"`), and methods
 * are checked against explicit per-family lists (src/crypto-rpc/methods.ts, shared with the client) instead of the
 * published namespaces. Seed mode keeps neither; `rateLimits.cryptoRpc.inFlightWaitMs` and
 * `cryptoRpc.methodAllowlist` win over the mode. Live mode also checks and bills as the guide says
 * (`cryptoRpc.proxyRules`): a node's own non-2xx passes through with cost headers (4xx 5 credits an item, 402/429/5xx
 * 0), the balance must cover the full estimated cost before forwarding (402), batch ids are unique (400), and every
 * request, 400s and replays included, counts toward the per-minute cap. The service's own refusals carry no cost
 * headers.
 *
 * Idempotency, as the live proxy does it in both modes: the cache is read when a request arrives and written when
 * its answer is ready, so a replay after the original finished is answered from it (not billed, though it counts
 * toward the per-minute cap) while a twin that arrives before then finds nothing and runs, billed as its own request.
 * The seed promises only a replay of "the cached response" and says nothing of a request that arrives before there is
 * one, so the live behaviour is the seed's too. A key outside `[A-Za-z0-9_-]{1,255}` is silently ignored live (the
 * request runs as one without a key); seed mode refuses it with 400, as its parameter's `pattern` says
 * (`cryptoRpc.malformedIdempotencyKey` wins over the mode).
 */
import { createHash, randomBytes } from "node:crypto";
import {
  NODE_KEYS_REASON,
  describeNetwork,
  isFilterOrSubscription,
  methodTier,
  needsNodeKeys,
  unsupportedReason as listedMethodRefusal,
  type NetworkFamily,
} from "langchain-service";
import { accountIdentity } from "../auth.js";
import { cryptoNetworks, publishedNetworks, upstreamOf } from "./networks.js";
import {
  EmulatorHttpError,
  isLiveMode,
  type Account,
  type Caller,
  type EmulatorContext,
  type EmulatorRequest,
  type EmulatorResponse,
  type RouteSpec,
  type CryptoRpcEmulatorOptions,
} from "../types.js";

export const RPC_PRICE_PER_CREDIT_USD = 7e-7;
export const RPC_ERROR_CREDITS = 5;
export const RPC_MAX_BATCH = 100;
export const RPC_UPSTREAM_TIMEOUT_MS = 30_000;
/** how long an idempotent answer is replayed (the service keeps it 24 h) */
export const RPC_IDEMPOTENCY_TTL_MS = 24 * 60 * 60_000;
const IDEMPOTENCY_KEY_RE = /^[A-Za-z0-9_-]{1,255}$/;

/** the live service's wait for a user's request in flight before it answers 429 */
export const RPC_IN_FLIGHT_WAIT_MS = 500;
export const RPC_IN_FLIGHT_MESSAGE = "Another request for this user is in flight";

export type { CryptoRpcEmulatorOptions } from "../types.js";

/** the pricing tiers, shared with the client (src/crypto-rpc/methods.ts) */
export { methodTier };

/** Credits for one successful call: base per chain × method tier (the published pricing). */
export function rpcCredits(slug: string, method: string): number {
  const base = slug.startsWith("zksync-") || slug.startsWith("solana-") ? 30 : 20;
  return base * methodTier(method);
}

/**
 * Why the proxy refuses `method` on a `family` network, or undefined when it forwards it: by the explicit lists
 * (live), or by the published namespaces (seed).
 */
export function unsupportedReason(
  family: NetworkFamily,
  method: string,
  allowlist: "explicit" | "namespaces" = "explicit",
): string | undefined {
  // filters and subscriptions: the same refusal either way
  if (allowlist === "explicit" || isFilterOrSubscription(method)) return listedMethodRefusal(family, method);
  switch (family) {
    case "evm":
      // node-held keys and node administration never reach an upstream
      if (/^(personal|admin|engine|miner|evm|hardhat|anvil|ganache|clique|les)_/.test(method))
        return "method is not available on this proxy";
      if (needsNodeKeys(method)) return NODE_KEYS_REASON;
      if (/^(eth|net|web3|zks|linea|bor|debug|trace|txpool|arbtrace|pimlico)_\w+$/.test(method)) return undefined;
      if (method.startsWith("starknet_")) return "Starknet method on an EVM network";
      return "method is not supported on EVM networks";
    case "starknet":
      return /^starknet_\w+$/.test(method) ? undefined : "only starknet_* methods are supported on Starknet networks";
    case "solana":
      return /^[a-z][A-Za-z0-9]*$/.test(method) && !method.includes("_") ? undefined : "method is not a Solana JSON-RPC method";
  }
}

function noNodeReason(slug: string, family: NetworkFamily): string {
  const upstream = "or give it an upstream (`upstreams`; the CLI's --upstream slug=URL)";
  const way =
    family === "evm"
      ? `start it with the local chain (\`chain: true\`; the CLI without --no-chain) ${upstream}`
      : family === "solana"
        ? `install litesvm (the Solana x402 rail serves it) ${upstream}`
        : `give it an upstream (\`upstreams\`; the CLI's --upstream slug=URL)`;
  return `this emulator has no upstream node for ${slug}: ${way}`;
}

interface IdempotentEntry {
  bodyHash: string;
  at: number;
  response: EmulatorResponse;
}

/** a long-running emulator forgets expired idempotent answers once this many are kept */
const IDEMPOTENCY_SWEEP_AT = 10_000;

function sweep(cache: Map<string, IdempotentEntry>, now: number): void {
  for (const [key, entry] of cache) if (now - entry.at >= RPC_IDEMPOTENCY_TTL_MS) cache.delete(key);
}

/** A user's turn at the proxy (live: one request at a time), taken while it exists: who waits for it, in order. */
interface UserTurn {
  waiters: (() => void)[];
}

interface RouteState {
  idempotency: Map<string, IdempotentEntry>;
  /** users with a request being served (live), by account identity */
  turns: Map<string, UserTurn>;
}

const states = new WeakMap<EmulatorContext, RouteState>();
function stateOf(ctx: EmulatorContext): RouteState {
  let state = states.get(ctx);
  if (!state) states.set(ctx, (state = { idempotency: new Map(), turns: new Map() }));
  return state;
}

function options(ctx: EmulatorContext): CryptoRpcEmulatorOptions {
  return ctx.options.cryptoRpc ?? {};
}

/** The live proxy's checks and billing, or the seed's (see `CryptoRpcEmulatorOptions.proxyRules`). */
function liveRules(ctx: EmulatorContext): boolean {
  return (options(ctx).proxyRules ?? (isLiveMode(ctx.options) ? "live" : "seed")) === "live";
}

function methodAllowlist(ctx: EmulatorContext): "explicit" | "namespaces" {
  return options(ctx).methodAllowlist ?? (isLiveMode(ctx.options) ? "explicit" : "namespaces");
}

/** What a malformed Idempotency-Key gets: ignored (live) or a 400 (seed), unless the option says. */
function malformedIdempotencyKey(ctx: EmulatorContext): "ignore" | "refuse" {
  return options(ctx).malformedIdempotencyKey ?? (isLiveMode(ctx.options) ? "ignore" : "refuse");
}

/** How long a user's second request waits for the first (ms), or undefined when requests are not serialized. */
function inFlightWaitMs(ctx: EmulatorContext): number | undefined {
  const limits = ctx.options.rateLimits;
  const option = limits?.cryptoRpc?.inFlightWaitMs;
  if (option === false) return undefined;
  if (option !== undefined) return Number.isNaN(option) ? 0 : Math.max(0, option);
  if (limits?.enabled === false) return undefined;
  return isLiveMode(ctx.options) ? RPC_IN_FLIGHT_WAIT_MS : undefined;
}

/**
 * Takes `user`'s turn, waiting up to `waitMs` for the request being served; returns the release (idempotent), or
 * undefined when the wait ran out. A release hands the turn straight to the longest waiter, so a request that
 * arrives just then cannot jump the queue.
 */
async function takeTurn(state: RouteState, user: string, waitMs: number): Promise<(() => void) | undefined> {
  const turns = state.turns;
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    const turn = turns.get(user);
    const next = turn?.waiters.shift();
    if (next) next();
    else turns.delete(user);
  };
  const turn = turns.get(user);
  if (!turn) {
    turns.set(user, { waiters: [] });
    return release;
  }
  const served = await new Promise<boolean>((resolve) => {
    const waiter = () => {
      clearTimeout(timer);
      resolve(true);
    };
    // an infinite wait has no timer (setTimeout would fire at once)
    const timer = Number.isFinite(waitMs)
      ? setTimeout(() => {
          turn.waiters.splice(turn.waiters.indexOf(waiter), 1);
          resolve(false);
        }, waitMs)
      : undefined;
    turn.waiters.push(waiter);
  });
  return served ? release : undefined;
}

function badRequest(error: string, details?: unknown): EmulatorHttpError {
  return new EmulatorHttpError(400, details === undefined ? { error } : { error, details });
}

/** A JSON-RPC request item as the proxy accepts it; throws a 400 naming what is wrong. */
function checkItem(item: unknown, where: string): { method: string } {
  if (!item || typeof item !== "object" || Array.isArray(item)) throw badRequest(`Invalid JSON-RPC request: ${where} must be an object`);
  const r = item as Record<string, unknown>;
  if (typeof r.method !== "string" || r.method === "") throw badRequest(`Invalid JSON-RPC request: ${where} needs a string "method"`);
  if (r.jsonrpc !== undefined && r.jsonrpc !== "2.0") throw badRequest(`Invalid JSON-RPC request: ${where} "jsonrpc" must be "2.0"`);
  if (r.params !== undefined && (r.params === null || typeof r.params !== "object")) {
    throw badRequest(`Invalid JSON-RPC request: ${where} "params" must be an array or an object`);
  }
  if (r.id !== undefined && r.id !== null && typeof r.id !== "string" && typeof r.id !== "number") {
    throw badRequest(`Invalid JSON-RPC request: ${where} "id" must be a string or a number`);
  }
  return { method: r.method };
}

/** Removes node internals (ganache's `stack`) from a JSON-RPC error object. */
export function stripErrorInternals(error: unknown): unknown {
  if (!error || typeof error !== "object" || Array.isArray(error)) return error;
  const { stack: _stack, ...rest } = error as Record<string, unknown>;
  if (rest.data && typeof rest.data === "object" && !Array.isArray(rest.data)) {
    const { stack: _dataStack, ...data } = rest.data as Record<string, unknown>;
    rest.data = data;
  }
  return rest;
}

function isRpcResponse(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === "object" && !Array.isArray(value) && ("result" in value || "error" in value);
}

/**
 * Applies the per-key request cap; throws the published 429 when it is spent: a message naming the cap and
 * the three `X-RateLimit-*` headers, which the server sends alone (no `x-ratelimit-*-requests` to wait on).
 */
function admit(ctx: EmulatorContext, account: Account): void {
  const limiter = ctx.rateLimiter;
  if (!limiter) return;
  const decision = limiter.admitCryptoRpc(accountIdentity(account));
  if (!decision.allowed) {
    throw new EmulatorHttpError(
      429,
      { error: "Rate limit exceeded", customMessage: `Crypto RPC requests per minute cap (${limiter.cryptoRpcRequests}) reached` },
      decision.headers,
    );
  }
}

/** What the node answered: its status, and its body as JSON when it is JSON. */
interface NodeAnswer {
  status: number;
  json?: unknown;
  text: string;
}

async function forward(url: string, body: Buffer, timeoutMs: number): Promise<NodeAnswer> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: body.toString("utf8"),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const e = err as { name?: string; cause?: { code?: string } };
    const why = e?.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : (e?.cause?.code ?? "connection failed");
    throw new EmulatorHttpError(500, { error: `Upstream RPC request failed: ${why}` });
  }
  const text = await res.text().catch(() => "");
  try {
    return { status: res.status, text, json: JSON.parse(text) as unknown };
  } catch {
    return { status: res.status, text };
  }
}

/** The seed's reading of a node's answer: JSON-RPC whatever the status, else the service's own 500. */
function seedAnswer({ status, text, json }: NodeAnswer): unknown {
  if (json === undefined) {
    throw new EmulatorHttpError(500, {
      error: `Upstream RPC returned a non-JSON response (HTTP ${status})`,
      details: { upstreamStatus: status, preview: text.slice(0, 120) },
    });
  }
  const valid = Array.isArray(json) ? json.length > 0 && json.every(isRpcResponse) : isRpcResponse(json);
  if (!valid) {
    throw new EmulatorHttpError(500, { error: `Upstream RPC returned an invalid JSON-RPC response (HTTP ${status})` });
  }
  return json;
}

async function handle(req: EmulatorRequest, ctx: EmulatorContext, caller: Caller): Promise<EmulatorResponse> {
  if (caller.kind === "anonymous") return ctx.x402.discovery402(req, ctx);
  const account = caller.account;
  // live: every request counts toward the per-minute cap, the ones refused 400 below and replays included
  if (liveRules(ctx)) admit(ctx, account);
  const slug = req.params.network ?? "";
  const networks = cryptoNetworks(ctx);
  const family = describeNetwork(slug).family;
  if (!networks.includes(slug)) {
    const details: Record<string, unknown> = { network: slug, supportedNetworks: networks };
    // a published slug left out for want of a node: say what would serve it
    if (!ctx.options.networks && publishedNetworks(ctx.options).includes(slug)) details.reason = noNodeReason(slug, family);
    throw badRequest(`Unsupported network: ${slug}`, details);
  }

  let idempotencyKey = req.headers["idempotency-key"];
  if (idempotencyKey !== undefined && !IDEMPOTENCY_KEY_RE.test(idempotencyKey)) {
    if (malformedIdempotencyKey(ctx) === "refuse") throw badRequest("Invalid Idempotency-Key: must match [A-Za-z0-9_-]{1,255}");
    idempotencyKey = undefined; // live: the request runs as one without a key
  }

  // --- the body: JSON-RPC 2.0, single or batch ---
  if (req.body.length === 0) throw badRequest("Empty request body: expected a JSON-RPC request or batch");
  let parsed: unknown;
  try {
    parsed = JSON.parse(req.body.toString("utf8"));
  } catch {
    throw badRequest("Invalid JSON-RPC request: body is not valid JSON");
  }
  const items = Array.isArray(parsed) ? parsed : [parsed];
  if (Array.isArray(parsed)) {
    if (parsed.length === 0) throw badRequest("Empty batch: send 1 to 100 JSON-RPC requests");
    if (parsed.length > RPC_MAX_BATCH) throw badRequest(`Batch too large: ${parsed.length} requests (max ${RPC_MAX_BATCH})`);
  }
  const methods = items.map((item, i) => checkItem(item, Array.isArray(parsed) ? `item ${i}` : "request").method);
  // live: billing pairs answers to requests by id, so a batch's ids must be unique
  if (Array.isArray(parsed) && liveRules(ctx)) {
    const seen = new Set<string>();
    for (const item of items) {
      const id = (item as { id?: unknown }).id;
      if (id === undefined || id === null) continue;
      const key = JSON.stringify(id);
      if (seen.has(key)) throw badRequest(`Invalid JSON-RPC batch: duplicate id ${key}; give every item a unique id`);
      seen.add(key);
    }
  }
  const allowlist = methodAllowlist(ctx);
  const refused = [...new Set(methods)]
    .map((m) => ({ method: m, reason: unsupportedReason(family, m, allowlist) }))
    .filter((r): r is { method: string; reason: string } => r.reason !== undefined);
  if (refused.length > 0) {
    throw badRequest(`Unsupported method${refused.length > 1 ? "s" : ""} on ${slug}: ${refused.map((r) => r.method).join(", ")}`, {
      unsupportedMethods: refused,
    });
  }

  // --- idempotency, read as the request arrives: a replay is answered now, without waiting for a turn ---
  const call: RpcCall = { req, ctx, caller, account, slug, items, methods };
  const idempotent = idempotencyKey ? lookUp(call, idempotencyKey) : undefined;
  if (idempotent?.replay) return idempotent.replay;

  // --- one request at a time per user (live): a batch is one request; the turn is given back before the answer
  // is written, so a client never holds an answer while its request still counts as in flight ---
  const waitMs = inFlightWaitMs(ctx);
  if (waitMs === undefined) return serveAndKeep(call, idempotent);
  const release = await takeTurn(stateOf(ctx), accountIdentity(account), waitMs);
  // the route's own 429: the pipeline adds no x-ratelimit-* to it (the live answer carries none)
  if (!release) return { status: 429, body: { error: RPC_IN_FLIGHT_MESSAGE }, meta: { ownLimit: true } };
  try {
    return await serveAndKeep(call, idempotent);
  } finally {
    release();
  }
}

/** A validated request on its way to the upstream. */
interface RpcCall {
  req: EmulatorRequest;
  ctx: EmulatorContext;
  caller: Caller;
  account: Account;
  slug: string;
  items: unknown[];
  methods: string[];
}

/** Where a request under an Idempotency-Key keeps its answer, and the replay when one is kept already. */
interface Idempotent {
  cacheKey: string;
  bodyHash: string;
  replay?: EmulatorResponse;
}

/**
 * The idempotency cache as the request arrives: a kept answer under the key is replayed (the same body) or the
 * request refused (another body). A replay is not billed, but counts toward the per-minute cap.
 */
function lookUp(call: RpcCall, idempotencyKey: string): Idempotent {
  const { req, ctx, account, slug } = call;
  const bodyHash = createHash("sha256").update(slug).update("\n").update(req.body).digest("hex");
  const cacheKey = `${accountIdentity(account)}|${idempotencyKey}`;
  const hit = stateOf(ctx).idempotency.get(cacheKey);
  if (!hit || ctx.now() - hit.at >= RPC_IDEMPOTENCY_TTL_MS) return { cacheKey, bodyHash };
  if (hit.bodyHash !== bodyHash) throw badRequest("Idempotency-Key was already used with a different request body");
  if (!liveRules(ctx)) admit(ctx, account); // live: counted on arrival
  return { cacheKey, bodyHash, replay: { ...hit.response, headers: { ...hit.response.headers, "idempotent-replayed": "true" } } };
}

/**
 * Serves the request and keeps its answer under its key, if it has one. Only served answers are kept: a refusal
 * (402, 429, 500) may be retried under the same key. A twin served meanwhile is kept over, as the later write.
 */
async function serveAndKeep(call: RpcCall, idempotent: Idempotent | undefined): Promise<EmulatorResponse> {
  const response = await serve(call);
  // a node's own answer is kept whatever its status (it carries the cost headers); the service's refusals are not
  if (idempotent && (response.status === 200 || response.headers?.[call.ctx.names.rpcCreditsHeader] !== undefined)) {
    const { ctx } = call;
    const cache = stateOf(ctx).idempotency;
    cache.set(idempotent.cacheKey, { bodyHash: idempotent.bodyHash, at: ctx.now(), response });
    if (cache.size > IDEMPOTENCY_SWEEP_AT) sweep(cache, ctx.now());
  }
  return response;
}

/** Admits, checks the balance, forwards and bills one (already validated) request. */
async function serve({ req, ctx, caller, account, slug, items, methods }: RpcCall): Promise<EmulatorResponse> {
  const live = liveRules(ctx);
  if (!live) admit(ctx, account);
  // live: the balance must cover the full-tier cost of every item before anything is forwarded
  const estimateUsd = live ? methods.reduce((sum, m) => sum + rpcCredits(slug, m), 0) * RPC_PRICE_PER_CREDIT_USD : 0;
  const short = () => (live ? ctx.ledger.available(account) < estimateUsd : ctx.ledger.available(account) <= 0);
  if (caller.kind === "apiKey" && short()) {
    return { status: 402, body: { error: "Insufficient balance", code: "INSUFFICIENT_BALANCE" } };
  }
  if (caller.kind === "wallet") {
    const refused = ctx.x402.walletRefusal(req, ctx, account);
    if (refused) return refused;
    if (live && short()) return { status: 402, body: { error: "Insufficient balance" } };
  }

  // --- forward ---
  const upstream = upstreamOf(ctx, slug);
  if (!upstream) throw new EmulatorHttpError(500, { error: `Upstream RPC request failed: no upstream node for ${slug}` });
  const node = await forward(upstream, req.body, options(ctx).upstreamTimeoutMs ?? RPC_UPSTREAM_TIMEOUT_MS);
  if (live && (node.status < 200 || node.status > 299)) return relayNodeFailure(ctx, caller, account, node, items.length);
  const answer = seedAnswer(node);

  // --- bill: per item, errors at 5 credits ---
  const answers = (Array.isArray(answer) ? answer : [answer]) as Record<string, unknown>[];
  for (const a of answers) if ("error" in a) a.error = stripErrorInternals(a.error);
  const methodById = new Map<string, string>();
  items.forEach((item, i) => {
    methodById.set(JSON.stringify((item as { id?: unknown }).id ?? null), methods[i]!);
  });
  let credits = 0;
  answers.forEach((a, i) => {
    if (a.error !== undefined) credits += RPC_ERROR_CREDITS;
    else credits += rpcCredits(slug, methodById.get(JSON.stringify(a.id ?? null)) ?? methods[i] ?? "");
  });
  return { status: 200, headers: bill(ctx, caller, account, credits), body: answer };
}

/** Charges `credits` (none at 0) and names them in the cost headers every answer relayed from a node carries. */
function bill(ctx: EmulatorContext, caller: Caller, account: Account, credits: number): Record<string, string> {
  const costUsd = credits * RPC_PRICE_PER_CREDIT_USD;
  const requestId = randomBytes(16).toString("hex");
  if (credits > 0) ctx.ledger.charge(account, costUsd, { kind: "crypto-rpc", requestId });
  const headers: Record<string, string> = {
    "content-type": "application/json",
    [ctx.names.rpcCreditsHeader]: String(credits),
    [ctx.names.rpcCostUsdHeader]: costUsd.toFixed(8),
    "x-request-id": requestId,
  };
  if (caller.kind === "wallet" && ctx.x402.balanceHeader) headers["x-balance-remaining"] = account.usd.toFixed(6);
  return headers;
}

/**
 * Live: a node's non-2xx passes through with its status, its body sanitized (node internals stripped, a non-JSON
 * body replaced by a note), billed as the guide says: a 4xx 5 credits an item, a 402, 429 or 5xx nothing.
 */
function relayNodeFailure(ctx: EmulatorContext, caller: Caller, account: Account, node: NodeAnswer, count: number): EmulatorResponse {
  const billed = node.status >= 400 && node.status < 500 && node.status !== 402 && node.status !== 429;
  const sanitize = (v: unknown): unknown =>
    v && typeof v === "object" && !Array.isArray(v) && "error" in v
      ? { ...(v as object), error: stripErrorInternals((v as { error: unknown }).error) }
      : v;
  const body =
    node.json === undefined
      ? { error: `Upstream RPC error (HTTP ${node.status})` }
      : Array.isArray(node.json)
        ? node.json.map(sanitize)
        : sanitize(node.json);
  return { status: node.status, headers: bill(ctx, caller, account, billed ? RPC_ERROR_CREDITS * count : 0), body };
}

export const cryptoRpcRoutes = {
  proxy: { auth: "required", handler: handle },
} satisfies Record<string, RouteSpec>;
