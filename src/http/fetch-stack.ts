/**
 * The one fetch stack, composed here in one list. Every request of every face (ChatService, ServiceClient, crypto
 * tools, x402 top-ups) goes through a function built here, so auth, pacing, retries, the abuse guard, typed errors
 * and header parsing exist once. The result is `fetch`-compatible, so it also plugs into the `openai` SDK.
 *
 * One module per layer (./layers/), each reading and checking its own options once; outermost first:
 *
 *   errors -> deadline -> spend -> payment -> retry -> concurrency -> pacing -> abuse guard -> sign-in
 *   -> redirects -> body limits -> base
 *
 * Spend and payment are handed in from above (src/stack.ts builds them from a budget and a wallet): this floor
 * knows nothing of wallets, payments or crypto RPC. Sign-in sits inside retry so that every attempt is signed
 * afresh (a SIWX header is single-use). The in-flight queue (a wallet's 5, crypto RPC's one at a time) sits outside
 * pacing, so that a send is counted in its rate window when it really leaves, not while it still waits for a place.
 * The README draws the same list (test/http/stack-list.test.ts holds them together).
 */
import { brandNames, normalizeBaseUrl, DEFAULT_BRAND } from "./config.js";
import type { AbuseGuard, AbuseGuardOptions } from "./abuse-guard.js";
import type { RetryOptions } from "./retry.js";
import type { PacingOptions } from "./pacing.js";
import type { ConcurrencyOptions } from "./concurrency.js";
import type { FetchLayer, FetchLike } from "./types.js";
import type { BodyLimits } from "./body-guard.js";
import type { LimitStore } from "./shared-limits.js";
import type { LayerContext } from "./layers/context.js";
import { contextOf, type ServiceContext } from "./context.js";
import { errors } from "./layers/errors.js";
import { deadline } from "./layers/deadline.js";
import { retry } from "./layers/retry.js";
import { concurrency } from "./layers/concurrency.js";
import { pacing } from "./layers/pacing.js";
import { abuseGuard } from "./layers/abuse-guard.js";
import { authOf, signIn, type AuthProvider } from "./layers/sign-in.js";
import { redirects } from "./layers/redirects.js";
import { bodyLimits } from "./layers/body-limits.js";
import { base } from "./layers/base.js";
export { sameOrigin } from "./redirects.js";
export { responseHeaders, readBody, throwForStatus, fromRequest } from "./responses.js";
export { ApiKeyAuth, type AuthProvider } from "./layers/sign-in.js";
export type { FetchLayer, FetchLike, ServiceRequestHints, ServiceRequestInit } from "./types.js";

export interface TransportOptions {
  /** API key (else `SERVICE_API_KEY`). Ignored when `auth` is given. */
  apiKey?: string;
  /** base URL including `/api/v1` (else `SERVICE_BASE_URL`) */
  baseUrl?: string;
  /** the deployment's brand in wire names (default `service`) */
  brand?: string;
  /** per-attempt timeout in ms until the response headers arrive (default 120000) */
  timeout?: number;
  /**
   * longest silence in ms while a response body (JSON or stream) is read: past it the read ends in a
   * TimeoutError (default: `timeout`). Counts only while a read is waiting, so a slow consumer is never idle.
   */
  idleTimeout?: number;
  /**
   * one deadline in ms for a whole call: every attempt, retry and pacing wait, payment, and reading the body
   * (or stream) to its end; past it a TimeoutError (default: none)
   */
  totalTimeout?: number;
  /** largest non-stream response body in bytes; past it a ResponseTooLargeError (default 64 MiB) */
  maxResponseBytes?: number;
  /** largest single stream event, in characters of its text; past it a ResponseTooLargeError (default 32 MiB) */
  maxEventBytes?: number;
  /**
   * largest JSON request body, in bytes of UTF-8: a larger one is refused before sending with a
   * PayloadTooLargeError, as the service would answer 413 (default 35 MiB, the service's "35 MB"; `Infinity`: no check)
   */
  maxRequestBytes?: number;
  /** the underlying fetch (default: `globalThis.fetch`; on Node, undici's `request()` where it can be: base.node.ts) */
  fetch?: FetchLike;
  /** retry policy; `false` or `{ maxRetries: 0 }` turns retries off */
  retry?: Partial<RetryOptions> | false;
  /** client-side guard against the service's abuse block; `false` turns it off */
  abuseGuard?: Partial<AbuseGuardOptions> | AbuseGuard | false;
  /** a credential provider other than the API key (wallet sign-in) */
  auth?: AuthProvider;
  /** a fleet store (`RedisStore`) through which pacing and the abuse guard share their windows (else per process) */
  limitStore?: LimitStore;
  /** the payment layer, placed outside retries (src/stack.ts builds it from a wallet) */
  paymentLayer?: FetchLayer;
  /** the spend layer (budgets, receipts), placed outside the payment layer (src/stack.ts builds it) */
  spendLayer?: FetchLayer;
  /**
   * Rate-limit pacing from the `x-ratelimit-*` headers, one limiter per caller and model shared in the
   * process, so bursts wait for the window instead of drawing 429s (default on); `false` turns it off. Image,
   * audio, embedding and video requests keep to their type's published limit (`typeLimits`) when no headers come.
   */
  pacing?: Partial<PacingOptions> | false;
  /** a custom pacing layer, placed inside retries (replaces the default) */
  pacingLayer?: FetchLayer;
  /**
   * Requests in flight, as the service allows them: at most `perWallet` (5) per wallet, and crypto RPC calls
   * `cryptoRpc` (1) at a time per caller; more wait their turn in the process (and in a fleet store) instead of
   * drawing 429s. `false` turns the queue off.
   */
  concurrency?: Partial<ConcurrencyOptions> | false;
  /** extra headers on every request */
  defaultHeaders?: Record<string, string>;
  /**
   * The state this stack shares with others (abuse guards, rate limiters, in-flight gates, the service clock):
   * stacks of one context on one credential share them, stacks of two contexts nothing (default: the process's
   * context, `defaultServiceContext()`)
   */
  context?: ServiceContext;
}

/** The transport stack: `fetch` plus what the faces read from it. */
export interface TransportFetch extends FetchLike {
  readonly baseUrl: string;
  readonly brand: string;
  /** who is calling (for limiters, logs); never the secret */
  readonly identity: string;
  readonly hasCredentials: boolean;
  /** resolves a path relative to the base URL */
  url(path: string): string;
  /** the effective body limits (`idleTimeout`, `totalTimeout`, `maxResponseBytes`, `maxEventBytes`, `maxRequestBytes`) */
  readonly limits: Readonly<BodyLimits>;
  /** the context whose guards, limiters, gates and clock this stack shares */
  readonly context: ServiceContext;
}

/** The layers of the stack, outermost first, by the names the README's drawing gives them. */
export const STACK_LAYERS = [
  "errors",
  "deadline",
  "spend",
  "payment",
  "retry",
  "concurrency",
  "pacing",
  "abuse guard",
  "sign-in",
  "redirects",
  "body limits",
  "base",
] as const;

export type StackLayerName = (typeof STACK_LAYERS)[number];

/** Builds the transport stack. Throws `ConfigurationError` on bad options, before any request. */
export function createTransport(options: TransportOptions = {}): TransportFetch {
  const baseUrl = normalizeBaseUrl(options.baseUrl);
  const brand = options.brand ?? DEFAULT_BRAND;
  brandNames(brand); // validates
  const service = contextOf(options.context);
  const auth = authOf(options);
  const ctx: LayerContext = {
    baseUrl,
    origin: new URL(baseUrl).origin,
    brand,
    auth,
    identity: auth?.identity ?? "anonymous",
    // a fleet store (not the per-process MemoryStore): pacing windows, places and guard failures are counted there
    limitStore: options.limitStore,
    service,
  };
  // the layers that show the limits they hold (ServiceFetch.limits)
  const errorsLayer = errors(options, ctx);
  const deadlineLayer = deadline(options);
  const bodyLimitsLayer = bodyLimits(options);
  // The list, outermost first (STACK_LAYERS): each factory checks and reads its own options; undefined: off.
  const layers: [StackLayerName, FetchLayer | undefined][] = [
    ["errors", errorsLayer],
    ["deadline", deadlineLayer],
    ["spend", options.spendLayer],
    ["payment", options.paymentLayer],
    ["retry", retry(options, ctx)],
    ["concurrency", concurrency(options, ctx)],
    ["pacing", pacing(options, ctx)],
    ["abuse guard", abuseGuard(options, ctx)],
    ["sign-in", signIn(options, ctx)],
    ["redirects", redirects(ctx)],
    ["body limits", bodyLimitsLayer],
    ["base", base(options)],
  ];
  const stack = layers.reduceRight<FetchLike | undefined>((next, [, layer]) => (layer ? layer(next!) : next), undefined) as TransportFetch;

  // what the faces read back: the limits in force, as their layers hold them
  const body = bodyLimitsLayer.limits;
  const limits: BodyLimits = {
    idleTimeout: body.idleTimeout || body.timeout,
    totalTimeout: deadlineLayer.totalTimeout,
    maxResponseBytes: body.maxResponseBytes,
    maxEventBytes: body.maxEventBytes,
    maxRequestBytes: errorsLayer.maxRequestBytes,
  };
  Object.defineProperties(stack, {
    baseUrl: { value: baseUrl, enumerable: true },
    brand: { value: brand, enumerable: true },
    identity: { value: ctx.identity, enumerable: true },
    hasCredentials: { value: auth !== undefined, enumerable: true },
    limits: { value: Object.freeze(limits), enumerable: true },
    context: { value: service },
    url: { value: (path: string) => (/^https?:\/\//.test(path) ? path : `${baseUrl}${path.startsWith("/") ? "" : "/"}${path}`) },
  });
  return stack;
}
