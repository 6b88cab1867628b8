/**
 * Shapes shared by the emulator's parts. The server (server.ts) parses each request into an
 * `EmulatorRequest`, finds the route, and writes the `EmulatorResponse` (JSON, text, or an SSE stream).
 * Each area of the API is one route module (chat, models, rate limits, crypto RPC, x402) over a shared
 * ledger; nothing clever.
 */
import type { BrandNames } from "../config.js";

export interface EmulatorRequest {
  method: string;
  /** path below `/api/v1`, e.g. `/chat/completions` */
  path: string;
  /** path parameters captured by the route pattern (`/x402/balance/:wallet`) */
  params: Record<string, string>;
  query: URLSearchParams;
  /** lowercase header names */
  headers: Record<string, string | undefined>;
  /** raw body */
  body: Buffer;
  /**
   * The request's path and query on the emulator's public origin (`EmulatorContext.publicOrigin`). Only the path
   * comes from the request line: an absolute-form target (`POST http://evil.example/...`) cannot change the origin.
   */
  url: URL;
  /** the peer's address (anonymous callers are told apart by it) */
  remoteAddress?: string;
}

export interface EmulatorResponse {
  status: number;
  headers?: Record<string, string>;
  /** JSON-serialized unless a string/Buffer */
  body?: unknown;
  /** SSE or other streamed body: each string is written as it comes (the server adds nothing) */
  stream?: AsyncIterable<string>;
  /** what the server needs after the handler: tokens used (for token rate limits), the model served */
  meta?: { tokens?: number; modelId?: string; failed?: boolean };
}

/** Who is calling, as decided by the auth step. */
export type Caller =
  | { kind: "apiKey"; account: Account }
  | { kind: "wallet"; account: Account; address: string; chain: "evm" | "solana" }
  | { kind: "anonymous" };

export interface LedgerEntry {
  id: string;
  type: "TOP_UP" | "CHARGE" | "REFUND";
  /** USD amount (positive for TOP_UP, negative for CHARGE) */
  amount: number;
  /** staking-token portion charged (CHARGE only) */
  diem?: number;
  balanceAfter: number;
  createdAt: string;
  requestId?: string;
  modelId?: string;
  /** what was charged for: "chat", "crypto-rpc", ... */
  kind?: string;
  /** TOP_UP: settlement reference (tx hash / signature) and network */
  transaction?: string;
  network?: string;
  /** TOP_UP: atomic units paid on chain */
  paidAtomic?: string;
}

export interface Account {
  /** API key (for kind apiKey) or wallet address (lowercased for EVM) */
  id: string;
  kind: "apiKey" | "wallet";
  usd: number;
  diem: number;
  /** Pro accounts may use Pro-only models */
  pro: boolean;
  /** tier overrides, e.g. partner limits */
  partner: boolean;
  entries: LedgerEntry[];
}

export interface FaultOptions {
  /** share of requests answered 500/503 instead of served (0..1); applies to paths matching `paths` */
  errorRate?: number;
  /** statuses to pick from (default [500, 503]) */
  statuses?: number[];
  /** added latency per request in ms (a number or [min, max]) */
  latencyMs?: number | [number, number];
  /** cut every stream after k chunks (the connection is destroyed, no [DONE]) */
  streamCutAfter?: number;
  /** path prefixes the faults apply to (default: all but /crypto/rpc/networks) */
  paths?: string[];
  /** deterministic randomness for faults */
  seed?: number;
}

export interface RateLimitOptions {
  /** window length in ms (default 60000: the tier table is per minute) */
  windowMs?: number;
  /** abuse block: more than `abuseMaxFailures` failures in `abuseWindowMs` block for `abuseBlockMs` */
  abuseMaxFailures?: number;
  abuseWindowMs?: number;
  abuseBlockMs?: number;
  /** override a tier's limits, e.g. { XS: { requests: 10, tokens: 1000 } } */
  tiers?: Partial<Record<"XS" | "S" | "M" | "L", { requests?: number; tokens?: number }>>;
  /** override the requests per window of the other model types (spec part 8), e.g. { image: { requests: 2 } } */
  types?: Partial<Record<"image" | "audio" | "embedding", { requests?: number }>>;
  /**
   * The crypto RPC proxy's own cap per key: `requests` per `windowMs` (default 100, the paid tier's published
   * per-minute cap, over `windowMs` above, else 60 s). Its 429 carries `X-RateLimit-Limit`, `-Remaining`, `-Reset`.
   */
  cryptoRpc?: { requests?: number; windowMs?: number };
  /** false: no rate limiting at all */
  enabled?: boolean;
}

export interface ApiKeyOption {
  key: string;
  usd?: number;
  diem?: number;
  pro?: boolean;
  partner?: boolean;
}

export interface EmulatorOptions {
  /** port (default 0: ephemeral); host is always 127.0.0.1 */
  port?: number;
  /** API keys with starting balances; strings get the default balance (USD 100, DIEM 10) */
  apiKeys?: (string | ApiKeyOption)[];
  brand?: string;
  rateLimits?: RateLimitOptions;
  faults?: FaultOptions;
  /** wallet credit granted at first sight (default 0) */
  walletStartingUsd?: number;
  /** crypto RPC: slug -> upstream JSON-RPC URL (issue 3) */
  upstreams?: Record<string, string>;
  /** start a local chain for crypto RPC and x402 (issue 3/5); default false in-process, true in the CLI */
  chain?: boolean | Record<string, unknown>;
  /** x402 options (issue 5) */
  x402?: Record<string, unknown>;
  /** log each request to stderr */
  log?: boolean;
  /**
   * crypto RPC network slugs listed by GET /crypto/rpc/networks, taken as given (default: those of the 23 of spec
   * 4.2 with a node behind them: an upstream, the local chain for EVM slugs, LiteSVM for Solana)
   */
  networks?: string[];
  /** ms clock for rate limits, the abuse block, SIWX checks and the `Date` header (default Date.now); tests may inject one */
  now?: () => number;
  /**
   * The origin clients reach the service at (default: the loopback origin it listens on). SIWX domain and uri are
   * checked against it, and the sign-in challenge names it; behind a proxy set e.g. `https://api.example`.
   */
  publicOrigin?: string;
  /** extra routes mounted after the built-in ones (custom endpoints, server tests); same pipeline */
  routes?: Route[];
}

export interface EmulatorContext {
  options: EmulatorOptions;
  names: BrandNames;
  ledger: import("./ledger.js").Ledger;
  /** ms clock (injectable for tests) */
  now(): number;
  /** the emulator's own base URL, `http://127.0.0.1:PORT/api/v1` */
  baseUrl: string;
  /** the origin clients reach it at (option `publicOrigin`, else `http://127.0.0.1:PORT`) */
  publicOrigin: string;
  /** the local chain, when started */
  chain?: LocalChain;
  /** wallet sign-in and payments */
  x402: X402Hooks;
  /** request/token windows, the abuse block and the rate-limit log (set by the server) */
  rateLimiter?: import("./rate-limits.js").RateLimiter;
}

export type RouteHandler = (req: EmulatorRequest, ctx: EmulatorContext, caller: Caller) => Promise<EmulatorResponse> | EmulatorResponse;

export interface Route {
  method: string;
  /** pattern below /api/v1 with `:name` parameters */
  pattern: string;
  /** "public": no auth; "required": API key or wallet; "optional": caller may be anonymous */
  auth: "public" | "required" | "optional";
  handler: RouteHandler;
  /** inference routes get model headers, rate limits per model tier, and wallet auth */
  inference?: boolean;
  /**
   * For an inference route whose model is optional, defaulted or absent (images, speech, web search and
   * scrape): finds it from the request (throwing EmulatorHttpError for a bad body) and names the rate-limit
   * bucket (spec part 8: image, audio). The server then checks Pro-only and credit as for chat.
   */
  resolveModel?: (req: EmulatorRequest) => ResolvedModel | Promise<ResolvedModel>;
}

/** What `Route.resolveModel` found: the model served (none for web search and scrape) and its rate-limit bucket. */
export interface ResolvedModel {
  model?: import("./models/catalog.js").ServedModel;
  bucket: import("./rate-limits.js").Bucket;
}

/** A local EVM chain (ganache in-process) serving the EVM slugs and x402 settlement. Owned by ./chain/. */
export interface LocalChain {
  rpcUrl: string;
  chainId: number;
  /** deterministic funded accounts (ETH and test USDC); index 0 deploys, the last is the service treasury */
  accounts: { address: string; privateKey: string }[];
  /** EIP-3009 USDC-like token: name "USD Coin", version "2", symbol "USDC", 6 decimals */
  usdc: { address: string; name: string; version: string; symbol: string; decimals: number };
  /** the service's payee for x402 top-ups */
  treasury: string;
  close(): Promise<void>;
}

/** Wallet sign-in and payments (x402), plugged into the server. Owned by ./x402/. */
export interface X402Hooks {
  /** verifies a SIGN-IN-WITH-X (or legacy X-Sign-In-With-X) header; throws EmulatorHttpError(401) when invalid */
  verifySiwx(header: string, req: EmulatorRequest, ctx: EmulatorContext): Promise<{ address: string; chain: "evm" | "solana" }>;
  /** 402 variant 2: no credentials on a route that needs them */
  discovery402(req: EmulatorRequest, ctx: EmulatorContext): EmulatorResponse;
  /** 402 variant 3: wallet caller whose credit is under the minimum */
  insufficientCredit402(req: EmulatorRequest, ctx: EmulatorContext, account: Account): EmulatorResponse;
  /** minimum wallet credit in USD to be served (default 0.10) */
  minimumBalanceUsd: number;
  /** /x402/top-up, /x402/balance/:wallet, /x402/transactions/:wallet */
  routes: Route[];
  close?(): Promise<void>;
}

/** Thrown by route code to answer with a status and body. */
export class EmulatorHttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof body === "object" && body && "error" in body ? String((body as { error: unknown }).error) : `HTTP ${status}`);
  }
}
