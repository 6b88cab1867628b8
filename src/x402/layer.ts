/**
 * The x402 payment layer of the fetch stack, and its request path: on a 402 it tops up the wallet's credit within
 * the owner's policy and retries the original request once. The top-up itself is the single flight in top-up.ts;
 * sending a signed payment and learning its outcome is settlement.ts; the wallet's credit is balance.ts.
 *
 * Money safety, in code order:
 * - variant 1 (an API-key account's 402: `INSUFFICIENT_BALANCE`, or the live service's plain message) is handed
 *   back: there is no wallet to pay with;
 * - requirements come from `POST /x402/top-up`, the endpoint that will check them (authoritative): an inference
 *   402's own `accepts` is only a hint, never signed (a signature made for requirements the top-up endpoint then
 *   refuses would still be a live authorization in the service's hands). A paid request costs 4 round trips
 *   (request, requirements, top-up, retry), as with the service's own SDK;
 * - by default exactly the offered requirement is paid (x402 v2); an owner-chosen larger amount goes in the
 *   legacy v1 form (see PaymentPolicy);
 * - the policy decides and reserves budget before anything is signed;
 * - single flight per wallet, in the process and across a fleet (top-up.ts): while one top-up runs, every other
 *   402 waits for it and retries; a request that was sent before a top-up completed and comes back 402 retries
 *   without paying;
 * - no 402 bursts: while a wallet's credit is unknown (its first request, or after any 402) one request goes
 *   alone and the others wait until it, and the top-up it leads to, are done (a refused top-up fails them
 *   with the same error, unsent); once the service has served the wallet, requests flow freely. The service
 *   blocks a caller after a run of failures, and 50 simultaneous 402s would be 50 failures;
 * - never paying into a 402 a top-up cannot cure: before a second top-up within the policy's period the balance
 *   is read; credit already at the minimum, or a linked account billed first, is `PaymentNotCurableError`;
 * - at most once (settlement.ts): the signed payload is kept until the outcome is known; a timeout, a 5xx or
 *   `409 PAYMENT_IN_PROGRESS` re-sends the SAME bytes; a new one is signed only after `402 SETTLEMENT_FAILED`, or
 *   once the old one's `validBefore` has passed and the wallet's transactions show no settlement;
 * - a 402 right after a successful top-up is an error, not another payment;
 * - only the service's own 402s are paid: a 402 from another origin (another host through the same stack, or
 *   the end of a redirect) is handed back unpaid, and requirements are read only from the service's origin;
 * - what is reported as spent is what was signed; the service's `amountCredited` rides beside it.
 */
import { ConfigurationError, PaymentFailedError } from "../http/errors.js";
import { contextOf } from "../http/context.js";
import { awaitShared, isOwnAbort } from "../http/shared-wait.js";
import { fromRequest, readBody, type FetchLayer, type FetchLike, type ServiceRequestInit } from "../http/fetch-stack.js";
import { currentBalanceUsd, minimumBalanceOf, notCurable } from "./balance.js";
import { emitPaymentEvent, type PaymentEvent, type PaymentEventListener } from "./events.js";
import { PaymentPolicy, walletScopeKey, type PaymentDecision } from "./policy.js";
import { codeOf } from "./settlement.js";
import { PAYMENT_REQUIRED_HEADER, TopUpFlight } from "./top-up.js";
import type { TopUpResult, X402PaymentOptions } from "./types.js";
import type { PaymentContext } from "./wallet-state.js";
import { openGate, stateOf, type WalletState } from "./wallet-state.js";
import { isX402Wallet, walletNamespace, type X402Wallet } from "./wallets.js";
import { defaultStore } from "../store/memory.js";
import type { PaymentStore } from "../store/types.js";

export type { PaymentSource, TopUpResult, X402PaymentOptions } from "./types.js";
export { paymentSourceOf, PAYMENT_REQUIRED_HEADER } from "./top-up.js";
export { PAYMENT_RESPONSE_HEADER } from "./settlement.js";
export const PAYMENT_SIGNATURE_HEADER = "PAYMENT-SIGNATURE";
export const BALANCE_REMAINING_HEADER = "X-Balance-Remaining";

function urlOf(input: string | URL | Request): string {
  return typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
}

/** The base URL (through `/api/vN`) of a request URL; the origin + `/api/v1` when the path has none. */
export function baseUrlOf(url: string): string {
  const u = new URL(url);
  const m = /^(.*?\/api\/v\d+)(?:\/|$)/.exec(u.pathname);
  return `${u.origin}${m ? m[1] : "/api/v1"}`;
}

/**
 * A 402 of an API-key account, which no wallet can pay for: the seed's `INSUFFICIENT_BALANCE`, or the live service's
 * plain "Insufficient USD or Diem balance…" with no code, which carries none of x402's marks (a PAYMENT-REQUIRED
 * header, `x402Version`, `accepts`, the wallet 402's own code).
 */
function isApiKeyAccount402(body: unknown, headers: Headers): boolean {
  const code = codeOf(body);
  if (code === "INSUFFICIENT_BALANCE") return true;
  if (code !== undefined || headers.has(PAYMENT_REQUIRED_HEADER)) return false;
  const b = (body && typeof body === "object" ? body : {}) as Record<string, unknown>;
  return b.x402Version === undefined && b.accepts === undefined;
}

/** Makes a request re-sendable: a Request or stream body is read once into memory. */
async function replayable(input: string | URL | Request, init: ServiceRequestInit): Promise<[string, ServiceRequestInit]> {
  // a Request (from `withX402` around a plain fetch; the stack converts its own before this layer)
  if (typeof input !== "string" && !(input instanceof URL)) return fromRequest(input, init);
  if (init.body && typeof (init.body as ReadableStream).getReader === "function") {
    return [urlOf(input), { ...init, body: await new Response(init.body as ReadableStream).arrayBuffer() }];
  }
  return [urlOf(input), init];
}

export class X402PaymentController {
  readonly wallet: X402Wallet;
  readonly policy: PaymentPolicy;
  readonly options: X402PaymentOptions;
  readonly store: PaymentStore;
  readonly #ctx: PaymentContext;
  readonly #flight: TopUpFlight;
  /** the service's origin: the base URL's, else pinned by the first request through this controller */
  #origin?: string;
  /** the stack below this layer, and the service's base URL, as requests pass: balance reads go through them */
  #below?: FetchLike;
  #baseUrl?: string;

  constructor(options: X402PaymentOptions) {
    if (!options || !isX402Wallet(options.wallet)) {
      throw new ConfigurationError("x402: `wallet` must be an EvmWallet or a SolanaWallet");
    }
    for (const k of ["topUpTimeoutMs", "maxResends", "resendDelayMs", "topUpLeaseMs"] as const) {
      const v = options[k];
      if (v !== undefined && !(Number.isFinite(v) && v >= 0)) throw new ConfigurationError(`x402: ${k} must be a non-negative number`);
    }
    if (options.topUpLeaseMs !== undefined && !(options.topUpLeaseMs >= 50))
      throw new ConfigurationError("x402: topUpLeaseMs must be at least 50 ms");
    this.wallet = options.wallet;
    this.policy = PaymentPolicy.from(options.policy);
    this.options = options;
    this.store = options.store ?? defaultStore();
    const context = contextOf(options.context); // a bad one refused here, before any request
    this.#ctx = {
      wallet: this.wallet,
      policy: this.policy,
      options,
      store: this.store,
      state: stateOf(options.wallet, context),
      walletKey: walletScopeKey(walletNamespace(options.wallet), options.wallet.address),
      emit: (listener, type, decision, extra) => this.#emit(listener, type, decision, extra),
    };
    this.#flight = new TopUpFlight(this.#ctx);
    if (options.baseUrl) {
      this.#origin = new URL(options.baseUrl).origin;
      this.#baseUrl = options.baseUrl.replace(/\/+$/, "");
    }
  }

  get #state(): WalletState {
    return this.#ctx.state;
  }

  /** Whether `url` lies on the service's origin (the first URL seen pins it when no baseUrl was given). */
  #onServiceOrigin(url: string): boolean {
    let origin: string;
    try {
      origin = new URL(url).origin;
    } catch {
      return false;
    }
    this.#origin ??= origin;
    return origin === this.#origin;
  }

  /** Whether `url` is on the service's origin, the only one credentials and payments go to. */
  isServiceUrl(url: string): boolean {
    return this.#onServiceOrigin(url);
  }

  /** The wallet's credit as last learned (a balance read, a top-up, `X-Balance-Remaining`), in USD; no I/O. */
  get lastBalanceUsd(): number | undefined {
    return this.#state.balance.usd;
  }

  /**
   * The wallet's credit in USD: the last figure while it is fresh, else read from `GET /x402/balance` (see
   * balance.ts for when a figure is stale, and how reads stay within the route's 30 a minute per wallet).
   * Undefined before any figure could be learned.
   */
  currentBalanceUsd(): Promise<number | undefined> {
    return currentBalanceUsd(this.#ctx, this.#below, this.#baseUrl);
  }

  /** Completed top-ups of this wallet in this controller's context. */
  get completedTopUps(): number {
    return this.#state.epoch;
  }
  /** True once the service served this wallet with no 402 since (requests are no longer held back). */
  get creditKnownOk(): boolean {
    return this.#state.creditOk;
  }
  /** True while a signed payment's outcome is unknown (it will be re-sent, never re-signed). */
  get hasPendingPayment(): boolean {
    return this.#state.pending !== undefined;
  }

  /** Records `X-Balance-Remaining` of a response (when a deployment sends it). */
  observe(response: Response): boolean {
    const v = response.headers.get(BALANCE_REMAINING_HEADER);
    const n = v === null ? NaN : Number(v);
    if (!Number.isFinite(n)) return false;
    this.#state.balance.learn(n);
    return true;
  }

  /** Reports an event; awaited so that callbacks have it before the request that caused it returns. */
  #emit(
    listener: PaymentEventListener | undefined,
    type: PaymentEvent["type"],
    decision: Partial<PaymentDecision> | undefined,
    extra: Partial<PaymentEvent> = {},
  ): Promise<void> {
    const event: PaymentEvent = {
      type,
      amountUsd: decision?.amountUsd,
      network: decision?.network,
      asset: decision?.asset,
      payTo: decision?.payTo,
      payer: this.wallet.address,
      at: Date.now(),
      ...extra,
    };
    return emitPaymentEvent(event, this.options.onPayment, this.options.langchainEvents !== false, listener);
  }

  /**
   * One top-up at a time per wallet: joins the one in flight, else starts one. `amountUsd` overrides the
   * policy's amount (an explicit top-up); the policy's caps still apply.
   */
  topUp(send: FetchLike, topUpUrl: string, amountUsd?: number, listener?: PaymentEventListener): Promise<TopUpResult> {
    return this.#flight.once(send, topUpUrl, { amountUsd, listener });
  }

  /** Like `topUp` but an explicit top-up waits for one in flight instead of joining it. */
  explicitTopUp(
    send: FetchLike,
    topUpUrl: string,
    amountUsd: number,
    listener?: PaymentEventListener,
    signal?: AbortSignal,
  ): Promise<TopUpResult> {
    if (!this.#onServiceOrigin(topUpUrl))
      return Promise.reject(new ConfigurationError("topUp: the top-up URL is not on the service's origin"));
    return this.#flight.explicit(send, topUpUrl, amountUsd, listener, signal);
  }

  /** The store's top-up epoch of the wallet; undefined when it cannot be read (see TopUpFlight.storeEpoch). */
  storeEpoch(): Promise<number | undefined> {
    return this.#flight.storeEpoch();
  }

  /** The fetch layer. */
  layer(): FetchLayer {
    return (next) => {
      this.#below ??= next;
      return async (input, init = {}) => {
        const [url, replayInit] = await replayable(input, init);
        // only the service's own 402s are paid: a request elsewhere passes through untouched
        if (!this.#onServiceOrigin(url)) return next(url, replayInit);
        const base = this.options.baseUrl ?? baseUrlOf(url);
        this.#baseUrl ??= base;
        const topUpUrl = `${base}/x402/top-up`;
        if (url.split("?")[0] === topUpUrl) return next(url, replayInit);

        const s = this.#state;
        // Hold back while the wallet's credit is unknown: 50 simultaneous first requests of an empty wallet
        // would be 50 402s, and the service blocks a caller after a run of failures. The first goes alone;
        // the rest wait for it (and for the top-up it leads to). A running top-up is waited for as before.
        let release: ((outcome?: Error) => void) | undefined;
        // reads (GET /models, balances) are never refused for credit: they neither wait nor prove credit
        const method = (replayInit.method ?? "GET").toUpperCase();
        const creditBearing = method !== "GET" && method !== "HEAD";
        // every wait here is on something the wallet's requests share: the caller's signal (its deadline with it)
        // ends this request's wait, never the top-up or the gate itself
        const signal = replayInit.signal;
        for (;;) {
          if (!creditBearing) break; // reads wait for nothing (the top-up itself reads the wallet's transactions)
          if (s.inFlight)
            await awaitShared(
              s.inFlight.catch(() => undefined),
              signal,
            );
          if (s.creditOk) break;
          if (s.gate) {
            const outcome = await awaitShared(s.gate, signal);
            if (outcome) throw outcome;
            continue;
          }
          release = openGate(s);
          break;
        }
        try {
          return await this.#send(next, url, replayInit, topUpUrl, release, creditBearing);
        } finally {
          release?.(); // whatever happened (a throw, a 5xx), the next request may try
        }
      };
    };
  }

  /** A served answer: the credit is fine, and its charge moved the balance (by what the header says, if sent). */
  #served(response: Response, creditBearing: boolean): void {
    const told = this.observe(response);
    if (!response.ok || !creditBearing) {
      if (told) this.#state.creditOk = true;
      return;
    }
    this.#state.creditOk = true;
    if (!told) this.#state.balance.markStale();
  }

  /** One request through the payment logic; `release` is set when this request holds the wallet's gate. */
  async #send(
    next: FetchLike,
    url: string,
    replayInit: ServiceRequestInit,
    topUpUrl: string,
    release: ((outcome?: Error) => void) | undefined,
    creditBearing: boolean,
  ): Promise<Response> {
    const s = this.#state;
    const epochAtSend = s.epoch;
    // the fleet's top-up epoch as this request leaves: a 402 after it moved was drawn before another
    // process's top-up landed (retry, don't pay)
    const signal = replayInit.signal;
    const seenEpoch: number | null = creditBearing ? await this.#flight.epochBeforeSend(signal) : null;
    const first = await next(url, replayInit);
    // a 402 that ended on another origin (after a redirect) is not the service's to ask for: handed back unpaid
    if (first.status === 402 && first.url && !this.#onServiceOrigin(first.url)) return first;
    if (first.status !== 402) {
      this.#served(first, creditBearing);
      return first;
    }
    // out of credit: requests sent from now on wait for the top-up instead of drawing 402s too
    s.creditOk = false;
    s.balance.markStale();
    if (release) return this.#after402(next, url, replayInit, topUpUrl, release, first, epochAtSend, seenEpoch, creditBearing);
    // A gate opened here is this request's to close on every way out (a 402 handed back, its body cut, the caller's
    // abort): left open, every later request of the wallet would wait on it for good
    const opened = s.gate ? undefined : openGate(s);
    try {
      return await this.#after402(next, url, replayInit, topUpUrl, opened, first, epochAtSend, seenEpoch, creditBearing);
    } finally {
      opened?.();
    }
  }

  /** A 402 answered the request: pays (once, within the policy), or hands it back, then re-sends it. */
  async #after402(
    next: FetchLike,
    url: string,
    replayInit: ServiceRequestInit,
    topUpUrl: string,
    release: ((outcome?: Error) => void) | undefined,
    first: Response,
    epochAtSend: number,
    seenEpoch: number | null,
    creditBearing: boolean,
  ): Promise<Response> {
    const s = this.#state;
    const signal = replayInit.signal;
    const { text, body } = await readBody(first);
    const handBack = () => new Response(text, { status: first.status, statusText: first.statusText, headers: first.headers });
    // variant 1: an API-key account without balance; the wallet cannot pay for that account
    if (isApiKeyAccount402(body, first.headers)) return handBack();

    for (let round = 0; ; round++) {
      // a top-up completed in this process while this request was out: retry without paying
      let paidHere = s.epoch !== epochAtSend;
      if (!paidHere) {
        try {
          // the 402's own requirements are not read: the top-up endpoint's are what gets signed
          // The top-up is the wallet's, not this request's: a caller that gives up (its signal, its deadline) stops
          // waiting, and the top-up runs on to its end (bounded by topUpTimeoutMs); its outcome is the wallet's
          // state, which the next request finds (credit, or a signed payment still pending: re-sent, never re-signed)
          const result = await awaitShared(
            this.#flight.join(next, topUpUrl, {
              listener: replayInit.service?.onPaymentEvent,
              seenEpoch,
              after402: body ?? {},
              reason: `a 402 Payment Required answered ${replayInit.method ?? "GET"} ${new URL(url).pathname}: the wallet's credit ran out`,
            }),
            signal,
          );
          // undefined: another process's top-up landed while this request was out (or, the epoch unknown as it
          // left, may have: a re-send tells)
          paidHere = result !== undefined;
        } catch (err) {
          // the held requests fail the same way instead of each drawing a 402; not with this caller's own abort:
          // they go on and wait on the top-up themselves
          release?.(isOwnAbort(err, signal) ? undefined : err instanceof Error ? err : new PaymentFailedError(String(err)));
          throw err;
        }
      }
      // credit was added: the held requests go now, alongside this retry. Not when it only may have been (the
      // epoch unknown as this request left): they wait for the retry's answer instead of drawing 402s with it
      if (paidHere || seenEpoch !== null) release?.();
      epochAtSend = s.epoch;
      seenEpoch = await this.#flight.epochBeforeSend(signal);
      const retried = await next(url, replayInit);
      if (retried.status !== 402) {
        this.#served(retried, creditBearing);
        return retried;
      }
      s.creditOk = false;
      // after this process's own payment, or a few rounds of other processes' (whose credit the fleet used up
      // again before this request got its turn), a 402 is an error, never another payment
      if (paidHere || round >= 2) {
        const again = await readBody(retried);
        // the balance tells why, when it can: a linked account billed first, or credit that is there already
        const why = await awaitShared(
          notCurable(
            this.#ctx,
            next,
            topUpUrl.replace(/\/x402\/top-up$/, ""),
            minimumBalanceOf(again.body),
            Date.now() + (this.options.topUpTimeoutMs ?? 60_000),
          ),
          signal,
        );
        if (why) throw why;
        throw new PaymentFailedError("402 again right after a successful top-up: not paying twice", {
          status: 402,
          code: codeOf(again.body),
          body: again.body,
        });
      }
      await retried.body?.cancel().catch(() => undefined);
    }
  }
}

/** The stack's payment layer (placed outside retries); `.controller` holds the wallet's money state. */
export function x402PaymentLayer(options: X402PaymentOptions | X402PaymentController): FetchLayer & { controller: X402PaymentController } {
  const controller = options instanceof X402PaymentController ? options : new X402PaymentController(options);
  const layer = controller.layer() as FetchLayer & { controller: X402PaymentController };
  layer.controller = controller;
  return layer;
}
