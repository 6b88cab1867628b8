/**
 * Shapes shared by the emulator's parts. The server (server.ts) parses each request into an
 * `EmulatorRequest`, finds the route, and writes the `EmulatorResponse` (JSON, text, or an SSE stream).
 * Each area of the API is one route module (chat, models, rate limits, crypto RPC, x402) over a shared
 * ledger; nothing clever.
 */
import type { BrandNames } from "langchain-service";
// owned by the modules that keep them (which import nothing from here): re-exported for every route's imports
import type { Account } from "./ledger.js";
export type { Account, ApiKeyOption, LedgerEntry } from "./ledger.js";
export type { RateLimitOptions } from "./rate-limits.js";
export type { FaultOptions } from "./faults.js";
import type { ApiKeyOption } from "./ledger.js";
import type { RateLimitOptions } from "./rate-limits.js";
import type { FaultOptions } from "./faults.js";

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
  meta?: {
    tokens?: number;
    modelId?: string;
    failed?: boolean;
    /** a route's own rate-limit answer (a 429): the pipeline adds no `x-ratelimit-*` of its own to it */
    ownLimit?: boolean;
    /** a capability gate's 400: counted in the unsupported-feature budget, not as a failure (live) */
    unsupportedFeature?: boolean;
  };
}

/** Who is calling, as decided by the auth step. */
export type Caller =
  | { kind: "apiKey"; account: Account }
  | { kind: "wallet"; account: Account; address: string; chain: "evm" | "solana" }
  | { kind: "anonymous" };

/** Long-running jobs (video, asynchronous audio): how long they run, and which fail (then refunded). */
export interface JobEmulatorOptions {
  /** ms from queue to media (default video 2000, audio 1000), one number or per kind */
  processingMs?: number | Partial<Record<"video" | "audio", number>>;
  /**
   * Jobs that fail when their time is up, refunded at that moment (a `REFUND` row) and answered by retrieve with the
   * error: the first N queued, or a share; `status` 400 (provider rejected), 422 (content policy) or 500 (default).
   * A prompt with `[[emu:fail]]` or `[[emu:fail=422]]` fails too.
   */
  failures?: { first?: number; rate?: number; status?: 400 | 422 | 500 };
  /** how long unfetched media is kept, ms (default 24 h) */
  retentionMs?: number;
  /**
   * `/video/complete` with a queue id from `/video/queue`: `"refuse"` (live: every one is refused; retrieve's
   * `delete_media_on_completion` deletes the media) or `"delete"` (seed: deletes the job's media)
   */
  videoComplete?: "refuse" | "delete";
}

/**
 * Which deployment the emulator behaves as. `"live"` (the default): as the service's current agent guides say the
 * live service behaves (`../shared/notes/service-live.md`). `"seed"`: as the contract (`service-api.md`) and the
 * published description tell it. Where they differ, each behaviour also has an option of its own, which wins over
 * the mode. What differs (the rest is the same in both):
 *
 * | behaviour | live | seed |
 * |---|---|---|
 * | requests in flight per wallet | 5, then 429 `X402_CONCURRENCY_LIMIT` | no limit |
 * | crypto RPC per user | one at a time: a second waits 0.5 s, then 429 | any number |
 * | crypto RPC methods | explicit names per family | the published namespaces (`debug_*`, `zks_*`, …) |
 * | crypto RPC networks | 27 (with `blast-*`, `robinhood-*`) | the spec's 23 |
 * | citation markers | `^n^`, `^i,j^` | `[REF]n[/REF]` |
 * | search-documents call | id `web_search_call`, name `web_search`, before the content | `<brand>_web_search_documents` |
 * | search results in a stream | only with `include_search_results_in_stream`, at the end | last, or first with the flag |
 * | a stream failing in-band | charged, then a `REFUND` row | not charged |
 * | `X-Balance-Remaining` | never sent | on wallet inference answers |
 * | `x-ratelimit-reset-*` | Unix ms | Unix s (requests), s from now (tokens) |
 * | abuse block | > 50 non-429 4xx in 30 s; error-budget headers | > 20 non-success answers in 30 s |
 * | API-key 402 | no code | `INSUFFICIENT_BALANCE` |
 * | `/x402/*` route limits | top-up 10/min, balance 30/min, transactions 20/min | none |
 * | a re-send of a payment still settling | `409 PAYMENT_IN_PROGRESS` | waits for the settlement |
 * | a re-send of a payment already credited (`x402.resendAfterSettled`) | `409 PAYMENT_IN_PROGRESS` | 400 `PAYMENT_VERIFICATION_FAILED` |
 * | a sign-in's domain (`x402.signInCheck`, `signInDomains`) | one of the service's hosts, port stripped; `uri` unchecked; 30 s ahead | the public origin's host:port and uri; 5 s ahead |
 * | Bearer and sign-in both (`x402.bothCredentials`) | the wallet, billed | the key |
 * | `/video/complete` with a queue id (`jobs.videoComplete`) | 400 | deletes the media |
 * | `/api_keys/rate_limits/log` | an ADMIN key | any key |
 * | top-up 400 codes | `INVALID_PAYMENT_FORMAT`, `AMOUNT_TOO_LOW`, … | `X402_INVALID_PAYMENT` |
 * | `/x402/balance`, `/x402/transactions` without sign-in | 402 (empty `accepts`); a bad one: generic 401 | 401 |
 * | capability gates (tools, response formats, images, audio, video, logprobs) | 400 with `issues[]` before inference | images and `json_schema` only, refused by the engine |
 * | unsupported-feature budget | > 200 capability 400s in 30 s block (`UNSUPPORTED_FEATURE_REQUESTS`); they are not failures | none: they count as failures |
 * | request body limit (`maxBodyBytes`) | 35 MiB, 413 "Request body exceeds the maximum allowed size." | 10 MiB |
 * | a malformed crypto RPC `Idempotency-Key` (`cryptoRpc.malformedIdempotencyKey`) | ignored: served and billed as without one | 400 |
 * | crypto RPC checks and billing (`cryptoRpc.proxyRules`) | a node's non-2xx passed through (its 4xx 5 credits an item, 402/429/5xx 0); 402 unless the balance covers the full estimated cost; duplicate batch ids 400; every request (400s, replays) counts toward the cap | a node's JSON answer is a 200 whatever its status; 402 only at a zero balance; duplicate ids accepted; 400s not counted |
 * | `anon_user_id`, `reasoning.enabled` | accepted (1–128 printable ASCII without `||`; `enabled: false` turns thinking off) | `anon_user_id` is an unknown member (400) |
 */
export type EmulatorMode = "live" | "seed";

/** Whether the emulator behaves as the live service (the default) rather than as the seed contract. */
export function isLiveMode(options: Pick<EmulatorOptions, "mode">): boolean {
  return options.mode !== "seed";
}

/** Citation markers of the emulated chat model (`EmulatorOptions.chat.citationMarkers`). */
export type CitationMarkers = "caret" | "ref";

export interface ChatEmulatorOptions {
  /** inline citation markers with `enable_web_citations`: `"caret"` `^1^` (live) or `"ref"` `[REF]1[/REF]` (seed) */
  citationMarkers?: CitationMarkers;
  /** the shape and place of the search-documents tool call: `"live"` or `"seed"` (see the table above) */
  searchDocuments?: "live" | "seed";
  /** where a stream carries `web_search_citations`: `"live"` or `"seed"` (see the table above) */
  streamSearchResults?: "live" | "seed";
  /** a stream that fails in-band is charged, then refunded (`true`, live) or never charged (`false`, seed) */
  refundFailedStreams?: boolean;
  /**
   * Refuse a request needing a capability the model lacks (tools, response formats, images, audio, video,
   * logprobs) with a 400 naming the field in `issues[]`, before inference, counted in the unsupported-feature
   * budget (`true`, live) rather than only where the engine cannot serve it (`false`, seed)
   */
  capabilityGates?: boolean;
  /**
   * The live rules on messages: at most 10 `image_url`, 5 `input_audio`, 3 `video_url`, 5 `file` parts per message
   * and 3 videos per request, audio only as base64 (a 400 with `issues[]`), an assistant message with neither
   * content nor tool calls dropped silently (`true`, live) or none of them (`false`, seed)
   */
  messageRules?: boolean;
  /**
   * The first N streamed chat completions answer an in-band `model_overloaded` (with `retry_after`) before any
   * content, then `[DONE]`; they are not charged. Later ones are served: a client that retries gets its answer.
   */
  overloadedStreams?: number;
  /** `retry_after` of in-band `model_overloaded` errors and `Retry-After` of the JSON 429, in seconds (default 1) */
  overloadedRetryAfterSeconds?: number;
}

/** This route's options (`EmulatorOptions.cryptoRpc`); its request limits are in `rateLimits.cryptoRpc`. */
export interface CryptoRpcEmulatorOptions {
  /** upstream timeout in ms (default 30 s); the request cap is `rateLimits.cryptoRpc` */
  upstreamTimeoutMs?: number;
  /**
   * How methods are checked: `"explicit"` (live default), against the per-family lists of
   * src/crypto-rpc/methods.ts; `"namespaces"` (seed default), by the namespaces the published description names
   * (`zks_*`, `debug_*`, `trace_*`, any Solana-shaped name, ...).
   */
  methodAllowlist?: "explicit" | "namespaces";
  /**
   * A key outside `[A-Za-z0-9_-]{1,255}`: `"ignore"` (live default), served and billed as a request without one;
   * `"refuse"` (seed default), a 400, as the published parameter's `pattern` says.
   */
  malformedIdempotencyKey?: "ignore" | "refuse";
  /**
   * `"live"` (live default): a node's non-2xx passes through with its cost headers (4xx: 5 credits an item; 402,
   * 429, 5xx: 0); the full estimated cost is checked before forwarding (402); batch ids must be unique (400); every
   * request, 400s and replays included, counts toward the per-minute cap. `"seed"` (seed default): a node's JSON
   * answer is a 200 billed as usual, non-JSON a 500; 402 only at a zero balance; duplicate ids pass; a 400 is not
   * counted.
   */
  proxyRules?: "live" | "seed";
}

export interface EmulatorOptions {
  /** which deployment to behave as: `"live"` (default) or `"seed"` (see `EmulatorMode`) */
  mode?: EmulatorMode;
  /**
   * Request bodies above this many bytes answer `413 {error, code: "PAYLOAD_TOO_LARGE"}` before auth (live default
   * 35 MiB, the guides' "over 35 MB of JSON"; seed 10 MiB)
   */
  maxBodyBytes?: number;
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
  /** crypto RPC proxy options (upstream timeout, method allowlist); its request limits are in `rateLimits.cryptoRpc` */
  cryptoRpc?: CryptoRpcEmulatorOptions;
  /** start a local chain for crypto RPC and x402 (issue 3/5); default false in-process, true in the CLI */
  chain?: boolean | Record<string, unknown>;
  /** x402 options (issue 5) */
  x402?: Record<string, unknown>;
  /** log each request to stderr */
  log?: boolean;
  /**
   * answer CORS preflights and let any origin read the answers and the headers the client reads (./cors.ts), so
   * a page can call the emulator; off by default, as the live API's own policy is not the emulator's to guess
   */
  cors?: boolean;
  /**
   * crypto RPC network slugs listed by GET /crypto/rpc/networks, taken as given (default: those of the 23 of spec
   * 4.2 with a node behind them: an upstream, the local chain for EVM slugs, LiteSVM for Solana)
   */
  networks?: string[];
  /** ms clock for rate limits, the abuse block, SIWX checks, media jobs and the `Date` header (default Date.now); tests may inject one */
  now?: () => number;
  /**
   * The origin clients reach the service at (default: the loopback origin it listens on). SIWX domain and uri are
   * checked against it, and the sign-in challenge names it; behind a proxy set e.g. `https://api.example`.
   */
  publicOrigin?: string;
  /**
   * Requests in flight per wallet on inference and crypto RPC routes; one more is refused with
   * `429 {code: "X402_CONCURRENCY_LIMIT"}` (live default 5; seed: no limit; `false`: none)
   */
  walletConcurrency?: number | false;
  /**
   * Chat completions: where live and seed differ (citation markers, the search-documents call, search results in
   * streams, refunds of failed streams) and the in-band error knobs (`overloadedStreams`); see
   * ./models/chat-behaviour.ts
   */
  chat?: ChatEmulatorOptions;
  /**
   * What model records say is refused (live default `true`): an `offline` model answers 503, a region-restricted
   * one 403, `/models/compatibility_mapping` 400 for `type=all` and `type=code` (./models/availability.ts)
   */
  modelGates?: boolean;
  /** long-running jobs: their run time and failures (see JobEmulatorOptions) */
  jobs?: JobEmulatorOptions;
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

/** A route without its method and path: what an area's module answers with (the table in ../app.ts mounts it). */
export type RouteSpec = Omit<Route, "method" | "pattern">;

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
  /** CREATE2 factory of minimal ERC-1271 smart accounts (`createAccount(owner, salt)`, `getAddress(owner, salt)`) */
  smartAccountFactory?: string;
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
  /**
   * Whether a wallet caller may be served: undefined, or its 402 (credit under the minimum; or, for a wallet linked
   * to an account with staking-token credit, that account's DIEM under it, whatever the wallet's own credit)
   */
  walletRefusal(req: EmulatorRequest, ctx: EmulatorContext, account: Account): EmulatorResponse | undefined;
  /** send `X-Balance-Remaining` on a wallet's served answers (live: no; seed: yes; option `x402.balanceHeader`) */
  readonly balanceHeader: boolean;
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
