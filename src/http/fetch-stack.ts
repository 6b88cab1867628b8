/**
 * The transport of the one fetch stack. Every request of every face (ChatService, ServiceClient, crypto tools,
 * x402 top-ups) goes through a function built here, so auth, pacing, retries, the abuse guard, typed errors and
 * header parsing exist once. The result is `fetch`-compatible, so it also plugs into the `openai` SDK.
 *
 * This floor knows nothing of wallets, payments or crypto RPC: `src/stack.ts` (above the faces) hands in the
 * credential provider, the payment layer and the fleet store; `createServiceFetch` there is what faces call.
 *
 *   errors -> deadline -> payment (x402) -> retry -> requests in flight -> pacing -> abuse guard -> auth
 *   -> timeout -> fetch
 *
 * Auth sits inside retry so that every attempt is signed afresh (a SIWX header is single-use). The in-flight
 * queue (a wallet's 5, crypto RPC's one at a time) sits outside pacing, so that a send is counted in its rate
 * window when it really leaves, not while it still waits for a place.
 */
import { errorFromResponse } from "./status-errors.js";
import { brandNames, normalizeBaseUrl, readEnv, ENV_API_KEY, DEFAULT_BRAND } from "./config.js";
import {
  ConfigurationError,
  NetworkError,
  ServiceError,
  TimeoutError,
  abortErrorOf,
} from "./errors.js";
import { parseServiceHeaders, type ServiceResponseHeaders } from "./headers.js";
import { AbuseGuard, abuseGuardLayer, type AbuseGuardOptions } from "./abuse-guard.js";
import { retryLayer, type RetryOptions } from "./retry.js";
import { pacingLayer, type PacingOptions } from "./pacing.js";
import { concurrencyLayer, type ConcurrencyOptions } from "./concurrency.js";
import { answerWithText, mark429 } from "./refusals.js";
import { curedByFreshSignIn, SIGN_IN_RESENT_HEADER } from "./sign-in-refusals.js";
import type { FetchLayer, FetchLike, ServiceRequestInit } from "./types.js";
import { sameOrigin, sendFollowingSafely } from "./redirects.js";
export { sameOrigin } from "./redirects.js";
import { CLOCK_RETRY_MS, serviceClock } from "./clock.js";
import { DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_RESPONSE_BYTES, deadlineLayer, deadlineOf, guardBody, validateBodyOptions, type BodyLimits } from "./body-guard.js";
import { SharedRegistry } from "./bounded.js";
import type { LimitStore } from "./shared-limits.js";
import { validateHints, validateStackOptions } from "./options.js";
import { DEFAULT_MAX_REQUEST_BYTES, checkRequestSize, requestHeader } from "./request-size.js";
import { checkIdempotencyKey } from "./idempotency-key.js";
// the base: undici on Node, the runtime's fetch elsewhere, picked by the `node` export condition (base.node.ts)
import { defaultFetch } from "#base";

export type { FetchLayer, FetchLike, ServiceRequestHints, ServiceRequestInit } from "./types.js";

/** Supplies the credential headers of one attempt (an API key, or a freshly signed SIWX header). */
export interface AuthProvider {
  /** a label for logs and for sharing limiters; never the secret itself */
  readonly identity: string;
  /** `wallet`: a wallet's sign-in (its requests count toward the wallet's cap of requests in flight) */
  readonly kind?: "apiKey" | "wallet";
  /**
   * true when the headers carry a time the service checks against its own clock (a SIWX `issuedAt`, signed with
   * `serviceClock`): a 401 whose `Date` shows the clock used was off is then signed again once.
   */
  readonly clockSensitive?: boolean;
  headers(url: string, init: ServiceRequestInit): Promise<Record<string, string>> | Record<string, string>;
}

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
}

const headerCache = new WeakMap<Response, ServiceResponseHeaders>();

/** Parsed part-2.5 headers of a response, parsed once and cached. */
export function responseHeaders(response: Response, brand?: string): ServiceResponseHeaders {
  let parsed = headerCache.get(response);
  if (!parsed) {
    parsed = parseServiceHeaders(response.headers, brand);
    headerCache.set(response, parsed);
  }
  return parsed;
}

/** Short, non-reversible label of a key, so limiters can be shared without keeping the key around. */
function fingerprint(secret: string): string {
  // Two FNV-1a passes (64 bits): enough to tell a process's keys apart, even many thousands of tenants; not a
  // security measure (the label is never sent). node:crypto would do, but this floor also runs outside Node.
  let h1 = 0x811c9dc5;
  let h2 = 0x050c5d1f;
  for (let i = 0; i < secret.length; i++) {
    const c = secret.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x01000193) ^ (h1 >>> 7);
  }
  return `key:${(h1 >>> 0).toString(16).padStart(8, "0")}${(h2 >>> 0).toString(16).padStart(8, "0")}`;
}

export class ApiKeyAuth implements AuthProvider {
  readonly identity: string;
  readonly #header: Record<string, string>;
  constructor(apiKey: string) {
    // printable ASCII only: anything else would fail later inside `Headers`, untyped
    if (typeof apiKey !== "string" || !/^[\x21-\x7e]+$/.test(apiKey)) {
      throw new ConfigurationError("apiKey must be a non-empty string of printable ASCII without spaces");
    }
    this.identity = fingerprint(apiKey);
    this.#header = { authorization: `Bearer ${apiKey}` };
  }
  headers(): Record<string, string> {
    return this.#header;
  }
  toJSON() {
    return { identity: this.identity };
  }
}

function mergeSignals(a: AbortSignal | null | undefined, b: AbortSignal): AbortSignal {
  return a ? AbortSignal.any([a, b]) : b;
}


/**
 * Auth + default headers + per-attempt timeout + mapping of transport failures to typed errors. Credentials
 * go only to the service's own origin: a URL elsewhere is sent without them, and a credentialed request's
 * redirects are followed by hand (same origin, signed afresh) or refused (another origin): see redirects.ts.
 * The service's `Date` headers set `serviceClock`; a clock-sensitive sign-in (SIWX) refused with a 401 is signed
 * again, once, on the service's time, when `Date` shows the clock it used was off or when the refusal's code says
 * a fresh header passes (expired, nonce already used, issued ahead: sign-in-refusals.ts); never for a body that
 * is a stream (it cannot be sent twice).
 */
function transportLayer(
  base: FetchLike,
  auth: AuthProvider | undefined,
  defaultHeaders: Record<string, string> | undefined,
  timeoutMs: number,
  origin: string,
  limits: BodyLimits,
): FetchLike {
  return async (input, init = {}) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const hints = init.service;
    const signs = auth !== undefined && hints?.auth !== false && sameOrigin(url, origin);
    // the service-clock offset this attempt is signed with (read as the headers are made)
    const signedOffset = signs && auth.clockSensitive ? serviceClock.offset(origin) : undefined;
    const authHeaders = signs ? await auth.headers(url, init) : undefined;
    let headers: Headers | undefined;
    if (authHeaders || defaultHeaders || init.headers) {
      headers = new Headers(init.headers);
      if (defaultHeaders) for (const k in defaultHeaders) if (!headers.has(k)) headers.set(k, defaultHeaders[k]!);
      if (authHeaders) {
        // the stack owns the credentials: a caller's own Authorization (the openai SDK always sends one) goes
        headers.delete("authorization");
        for (const k in authHeaders) headers.set(k, authHeaders[k]!);
      }
    }
    const timeout = hints?.timeout ?? timeoutMs;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new TimeoutError(`no response within ${timeout} ms`)), timeout);
    const userSignal = init.signal;
    // the body is read after this returns: bounded by idle time, the call's deadline and (JSON) size
    const guard = (response: Response) =>
      guardBody(response, {
        idleMs: hints?.idleTimeout ?? (limits.idleTimeout || timeout),
        deadline: deadlineOf(hints),
        maxBytes: hints?.maxResponseBytes ?? limits.maxResponseBytes,
        signal: userSignal,
        abort: (reason) => controller.abort(reason),
      });
    try {
      const { service: _hints, ...rest } = init;
      const sendInit = { ...rest, headers, signal: mergeSignals(userSignal, controller.signal) };
      // each hop of a followed redirect is signed afresh (a SIWX header is single use)
      const resign = signs ? async (hopUrl: string) => auth.headers(hopUrl, init) : undefined;
      const send = async (h: Headers | undefined) => {
        const response = h ? await sendFollowingSafely(base, url, { ...sendInit, headers: h }, origin, resign) : await base(input, sendInit);
        // the service's Date corrects the clock sign-ins use (only they need it: an API key skips the parse)
        if (auth?.clockSensitive && sameOrigin(response.url || url, origin)) serviceClock.observe(origin, response.headers.get("date"));
        return response;
      };
      const response = await send(headers);
      // (an API key's answers stop at the first test: signedOffset is only set for a clock-sensitive sign-in)
      if (response.status !== 401 || signedOffset === undefined || isStream(rest.body)) {
        // a 429 is read here once and marked with what it means (refusals.ts) for the layers outside
        return response.status === 429 ? await mark429(guard(response)) : guard(response);
      }
      if (Math.abs(serviceClock.offset(origin) - signedOffset) < CLOCK_RETRY_MS) {
        // our clock was right: the refusal's (small) body says whether a fresh header passes; read once, it is
        // handed back whole when not
        const text = await guard(response).text().catch(() => "");
        if (!curedByFreshSignIn(text)) return answerWithText(response, text);
      } else {
        // refused while our clock was off
        await response.body?.cancel().catch(() => undefined);
      }
      // once more, freshly signed (a new nonce) with the service's time
      const again = new Headers(headers);
      const fresh = await auth!.headers(url, init);
      for (const k in fresh) again.set(k, fresh[k]!);
      const retried = await send(again);
      if (retried.status === 401) {
        // refused again: the typed error says the re-sign was tried (SIGN_IN_RESENT_HEADER)
        const text = await guard(retried).text().catch(() => "");
        const marked = new Headers(retried.headers);
        marked.set(SIGN_IN_RESENT_HEADER, "1");
        return answerWithText(retried, text, marked);
      }
      return retried.status === 429 ? await mark429(guard(retried)) : guard(retried);
    } catch (err) {
      // a caller's deadline (LangChain turns `timeout` into AbortSignal.timeout) is a timeout, not an abort
      if (userSignal?.aborted) throw abortErrorOf(userSignal.reason);
      if (controller.signal.aborted) throw controller.signal.reason as TimeoutError;
      if (err instanceof ServiceError) throw err;
      const cause = err as { message?: string; cause?: { code?: string; message?: string } };
      const detail = cause?.cause?.code ?? cause?.cause?.message ?? cause?.message ?? String(err);
      throw new NetworkError(`network error: ${detail} (${safeOrigin(url)})`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
  };
}

function isStream(body: unknown): boolean {
  return typeof (body as ReadableStream | undefined)?.getReader === "function";
}

function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "invalid URL";
  }
}

/** Reads a body once: the parsed JSON when it parses, else the text (an empty body is undefined). */
export async function readBody(response: Response): Promise<{ text: string; body: unknown }> {
  let text = "";
  try {
    text = await response.text();
  } catch {
    text = "";
  }
  try {
    return { text, body: text ? JSON.parse(text) : undefined };
  } catch {
    return { text, body: text };
  }
}

/** Reads a non-success body (JSON if it parses, else text) and throws the typed error. */
export async function throwForStatus(response: Response, brand?: string): Promise<never> {
  const headers = responseHeaders(response, brand);
  const { body } = await readBody(response);
  throw errorFromResponse(response.status, body, headers, { signInResent: response.headers.has(SIGN_IN_RESENT_HEADER) });
}

/**
 * A `Request` input becomes (url, init) with its body read once into memory, so every attempt (retries, the
 * re-send after a top-up) sends the same bytes with the Request's own headers and signal. `init` overrides
 * the Request's members, as with `fetch(request, init)`.
 */
export async function fromRequest(req: Request, init: ServiceRequestInit | undefined): Promise<[string, ServiceRequestInit]> {
  const own: ServiceRequestInit = { method: req.method, headers: req.headers, signal: req.signal, redirect: req.redirect };
  if (req.body && init?.body === undefined) own.body = await req.arrayBuffer();
  if (init) for (const k of Object.keys(init) as (keyof ServiceRequestInit)[]) if (init[k] !== undefined) (own as Record<string, unknown>)[k] = init[k];
  return [req.url, own];
}

/** The request came from the `openai` SDK (it stamps every attempt with `X-Stainless-Retry-Count`). */
function fromOpenAiSdk(headers: HeadersInit | undefined): boolean {
  return requestHeader(headers, "x-stainless-retry-count") !== undefined;
}

function errorsLayer(next: FetchLike, brand: string, maxRequestBytes: number): FetchLike {
  return async (input, init) => {
    if (typeof input !== "string" && !(input instanceof URL)) [input, init] = await fromRequest(input, init);
    validateHints(init?.service); // a bad per-request timeout is refused before anything waits or sends
    // a JSON body the service would refuse with 413: refused here, before any wait, reservation or payment
    if (init?.body != null) checkRequestSize(init.body, init.headers, maxRequestBytes);
    // an Idempotency-Key the crypto RPC proxy would silently ignore
    checkIdempotencyKey(typeof input === "string" ? input : input.href, init?.headers);
    const response = await next(input, init);
    if (response.ok || init?.service?.throwOnError === false) return response;
    if (fromOpenAiSdk(init?.headers)) {
      // The SDK builds its own typed APIError from the response (a thrown error would become an
      // APIConnectionError, and be re-sent). This stack already retried what is worth retrying: tell the SDK not to.
      const headers = new Headers(response.headers);
      headers.set("x-should-retry", "false");
      return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
    }
    return throwForStatus(response, brand);
  };
}

/**
 * One guard per credential and origin, shared by every live stack on it: held weakly here and strongly by each
 * stack, and kept while its failures still count at the service (a client made per request must see them).
 */
const sharedGuards = new SharedRegistry<AbuseGuard>();
const keepGuard = (g: AbuseGuard) => sharedGuards.keep(g, g.rememberUntil());
const guardWarned = new WeakSet<AbuseGuard>();

/** Builds the transport stack. Throws `ConfigurationError` on bad options, before any request. */
export function createTransport(options: TransportOptions = {}): TransportFetch {
  const baseUrl = normalizeBaseUrl(options.baseUrl);
  const brand = options.brand ?? DEFAULT_BRAND;
  brandNames(brand); // validates
  validateStackOptions(options); // timeout, retry, pacing, topUp, defaultHeaders, fetch: named in the error
  const base: FetchLike = options.fetch ?? defaultFetch;
  const apiKey = options.auth ? undefined : (options.apiKey ?? readEnv(ENV_API_KEY));
  const auth: AuthProvider | undefined = options.auth ?? (apiKey ? new ApiKeyAuth(apiKey) : undefined);
  const paymentLayer = options.paymentLayer;
  const identity = auth?.identity ?? "anonymous";
  const timeout = options.timeout ?? 120_000;
  validateBodyOptions(options);
  const limits: BodyLimits = {
    // 0: follow each request's `timeout`
    idleTimeout: options.idleTimeout ?? 0,
    totalTimeout: options.totalTimeout,
    maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    maxEventBytes: options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES,
    maxRequestBytes: options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES,
  };

  let guard: AbuseGuard | undefined;
  let guardWaitMs: number | undefined;
  if (options.abuseGuard instanceof AbuseGuard) guard = options.abuseGuard;
  else if (options.abuseGuard !== false) {
    // One guard per credential and service origin: the service counts failures per caller, not per client
    // object or per option spelling. Differing limits resolve to the strictest, with a warning once.
    const asked = options.abuseGuard ?? {};
    guardWaitMs = asked.maxWaitMs ?? 0; // each stack's own wait, whatever the others asked
    const key = `${new URL(baseUrl).origin}|${identity}`;
    let created = false;
    guard = sharedGuards.get(key, () => ((created = true), new AbuseGuard(asked)));
    if (!created && guard.tighten(asked) && !guardWarned.has(guard)) {
      guardWarned.add(guard);
      console.warn(
        `[${brand}] two clients of one credential asked for different abuseGuard limits; both now use the strictest ` +
          `(maxFailures ${guard.options.maxFailures}, windowMs ${guard.options.windowMs}), since the service counts failures per caller`,
      );
    }
  }

  // A fleet store (not the per-process MemoryStore): pacing windows and guard failures are counted there.
  const fleetStore = options.limitStore;
  let f = transportLayer(base, auth, options.defaultHeaders, timeout, new URL(baseUrl).origin, limits);
  // a shared guard (guardWaitMs set) is kept past its stacks while its failures count; a caller's own is theirs
  if (guard) {
    const shared = fleetStore && { store: fleetStore, label: brand, key: `${new URL(baseUrl).origin}|${identity}` };
    f = abuseGuardLayer(guard, guardWaitMs, guardWaitMs === undefined ? undefined : keepGuard, shared)(f);
  }
  if (options.pacingLayer) f = options.pacingLayer(f);
  else if (options.pacing !== false) f = pacingLayer(`${baseUrl}|${identity}`, options.pacing || {}, fleetStore && { store: fleetStore, label: brand })(f);
  if (options.concurrency !== false && auth) {
    const wallet = auth.kind === "wallet" || identity.startsWith("wallet:");
    const names = brandNames(brand);
    const rpcCost = { creditsHeader: names.rpcCreditsHeader, costUsdHeader: names.rpcCostUsdHeader };
    f = concurrencyLayer(new URL(baseUrl).origin, identity, wallet, options.concurrency || {}, fleetStore && { store: fleetStore, label: brand }, rpcCost)(f);
  }
  if (options.retry !== false) f = retryLayer(options.retry ?? {}, brand)(f);
  if (paymentLayer) f = paymentLayer(f);
  if (options.spendLayer) f = options.spendLayer(f);
  f = deadlineLayer(f, limits.totalTimeout);
  f = errorsLayer(f, brand, limits.maxRequestBytes);

  const stack = f as TransportFetch;
  Object.defineProperties(stack, {
    baseUrl: { value: baseUrl, enumerable: true },
    brand: { value: brand, enumerable: true },
    identity: { value: identity, enumerable: true },
    hasCredentials: { value: auth !== undefined, enumerable: true },
    limits: { value: Object.freeze({ ...limits, idleTimeout: limits.idleTimeout || timeout }), enumerable: true },
    url: { value: (path: string) => (/^https?:\/\//.test(path) ? path : `${baseUrl}${path.startsWith("/") ? "" : "/"}${path}`) },
  });
  return stack;
}
