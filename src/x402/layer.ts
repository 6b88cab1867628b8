/**
 * The x402 payment layer of the fetch stack: on a 402 it tops up the wallet's credit within the owner's
 * policy and retries the original request once.
 *
 * Money safety, in code order:
 * - variant 1 (`INSUFFICIENT_BALANCE`, an API-key account) is handed back: there is no wallet to pay with;
 * - requirements come from `POST /x402/top-up`, the endpoint that will check them (authoritative): an inference
 *   402's own `accepts` is only a hint, never signed (a signature made for requirements the top-up endpoint then
 *   refuses would still be a live authorization in the service's hands). A paid request costs 4 round trips
 *   (request, requirements, top-up, retry), as with the service's own SDK;
 * - by default exactly the offered requirement is paid (x402 v2); an owner-chosen larger amount goes in the
 *   legacy v1 form (see PaymentPolicy);
 * - the policy decides and reserves budget before anything is signed;
 * - single flight per wallet: while one top-up runs, every other 402 waits for it and retries; a request that
 *   was sent before a top-up completed and comes back 402 retries without paying. Across processes the store
 *   holds a lease per wallet (expiry + fencing token), the top-up epoch and the pending signed payment: one
 *   process pays, the others wait for the lease to end and retry when the epoch moved; a process killed while
 *   paying holds the lease only until it lapses, and its signed payment is re-sent by the next holder, never
 *   re-signed;
 * - no 402 bursts: while a wallet's credit is unknown (its first request, or after any 402) one request goes
 *   alone and the others wait until it, and the top-up it leads to, are done (a refused top-up fails them
 *   with the same error, unsent); once the service has served the wallet, requests flow freely. The service
 *   blocks a caller after 20 failures in 30 s, and 50 simultaneous 402s would be 50 failures;
 * - at most once: the signed payload is kept until the outcome is known; a timeout or 5xx resends the SAME
 *   `PAYMENT-SIGNATURE` (its nonce makes it idempotent); a new one is never signed automatically while an
 *   old one may still settle;
 * - a 402 right after a successful top-up is an error, not another payment;
 * - only the service's own 402s are paid: a 402 from another origin (another host through the same stack, or
 *   the end of a redirect) is handed back unpaid, and requirements are read only from the service's origin;
 * - an unclear outcome (timeouts, 5xx, a refusal of a re-send) is reconciled against the wallet's transactions,
 *   and a new payment is signed only once the old one's `validBefore` has passed and it shows no settlement;
 * - what is reported as spent is what was signed; the service's `amountCredited` rides beside it.
 */
import { ConfigurationError, PaymentFailedError, PaymentPolicyError, ServiceError, StoreUnavailableError } from "../http/errors.js";
import { decodeBase64Json } from "../http/headers.js";
import { fromRequest, readBody, type FetchLayer, type FetchLike, type ServiceRequestInit } from "../http/fetch-stack.js";
import { emitPaymentEvent, type PaymentEvent, type PaymentEventListener } from "./events.js";
import { PaymentPolicy, walletScopeKey, type PaymentDecision, type PaymentPolicyOptions } from "./policy.js";
import { signPayment, type SignedPayment } from "./payment.js";
import { isX402Wallet, walletNamespace, type X402Wallet } from "./wallets.js";
import { defaultStore } from "../store/memory.js";
import type { PaymentStore, PendingPaymentRecord, TopUpEnd } from "../store/types.js";
import { SharedRegistry } from "../http/bounded.js";

export const PAYMENT_SIGNATURE_HEADER = "PAYMENT-SIGNATURE";
export const PAYMENT_REQUIRED_HEADER = "PAYMENT-REQUIRED";
export const PAYMENT_RESPONSE_HEADER = "PAYMENT-RESPONSE";
export const BALANCE_REMAINING_HEADER = "X-Balance-Remaining";

export interface X402PaymentOptions {
  wallet: X402Wallet;
  /** the owner's rules (share one PaymentPolicy instance to share its caps between clients) */
  policy?: PaymentPolicy | PaymentPolicyOptions;
  onPayment?: (event: PaymentEvent) => void;
  /** deployment brand (for symmetry with the stack; x402 wire names carry no brand) */
  brand?: string;
  /** base URL including /api/v1; default: derived from each request URL */
  baseUrl?: string;
  /** Solana RPC for building Solana payments: the mint and a blockhash (default: @x402/svm's public mainnet RPC;
   *  against the emulator: `${emulator.url}/x402/solana/rpc`) */
  solanaRpcUrl?: string;
  /** per-attempt timeout of a top-up POST in ms (default 60000) */
  topUpTimeoutMs?: number;
  /** re-sends of the same signed payment after a timeout or 5xx (default 3) */
  maxResends?: number;
  /** pause before a re-send in ms (default 500) */
  resendDelayMs?: number;
  /** report events to LangChain callbacks when inside a run (default true) */
  langchainEvents?: boolean;
  /** where budgets, payee pins and the top-up lease live (default: this process's `MemoryStore`, shared by every stack) */
  store?: PaymentStore;
  /**
   * how long the wallet's top-up lease lasts without renewal, in ms (default 15000; renewed every third of it
   * while a top-up runs): the longest a process killed while paying holds up the others
   */
  topUpLeaseMs?: number;
}

export interface TopUpResult {
  /** USD signed and paid (what left the wallet) */
  amountUsd: number;
  /** USD the service says it credited, when it said (a warning event is emitted when it differs) */
  creditedUsd?: number;
  /** the outcome was established from the wallet's transactions, not from the top-up answer */
  reconciled?: boolean;
  /** the wallet's credit after the top-up, when reported */
  newBalanceUsd?: number;
  transaction?: string;
  network: string;
  payer?: string;
  paymentId?: string;
  /** re-sends of the same signature it took */
  resends: number;
}

/** What a 402 offers. */
export interface PaymentSource {
  accepts?: unknown[];
  resource?: { url: string; description?: string; mimeType?: string };
  extensions?: Record<string, unknown>;
}

interface PendingPayment {
  /** unique per signed payment (its record in the store) */
  id: string;
  signed: SignedPayment;
  decision: PaymentDecision;
  topUpUrl: string;
  /** ms after which it can no longer settle */
  expiresAt: number;
  /** ms when it was signed */
  signedAt: number;
  /** these bytes went out at least once (an answer may have been lost) */
  sent?: boolean;
}

/** A pending payment as the store keeps it (for another process to re-send or reconcile). */
function pendingRecord(p: PendingPayment): PendingPaymentRecord {
  const { id, expiresAt, signed, decision, topUpUrl, signedAt } = p;
  const data = JSON.stringify({ signed, decision, topUpUrl, signedAt }, (_k, v: unknown) => (typeof v === "bigint" ? { bigint: v.toString() } : v));
  return { id, expiresAt, data };
}

function pendingFromRecord(r: PendingPaymentRecord, topUpUrl: string): PendingPayment {
  const d = JSON.parse(r.data, (_k, v: unknown) =>
    v && typeof v === "object" && typeof (v as { bigint?: unknown }).bigint === "string" && Object.keys(v).length === 1 ? BigInt((v as { bigint: string }).bigint) : v,
  ) as Omit<PendingPayment, "id" | "expiresAt" | "sent">;
  // whether its holder sent it is unknown: as if it had (it is re-sent or reconciled, never dropped)
  // sent (and reconciled) only at this process's own top-up URL: a URL read from the store is not trusted
  return { ...d, topUpUrl, id: r.id, expiresAt: r.expiresAt, sent: true };
}

/** The lease this process holds on the wallet's top-ups while one runs. */
interface HeldLease {
  token: number;
  /** what the store is told when the top-up ends */
  end: TopUpEnd;
  /** the store still had this pending payment when the lease was taken */
  storedPending?: string;
}

/** default lease of a top-up in the store (renewed every third while it runs) */
const DEFAULT_LEASE_MS = 15_000;
/** the longest the read of the store's epoch may delay a request, and the pause in reads after one failed */
const EPOCH_READ_MS = 500;
const EPOCH_BACKOFF_MS = 5_000;
/** how long the last requirements seen stand in for a budget check before new ones are asked for */
const LAST_ACCEPTS_MS = 5 * 60_000;
/** how far before its signing (on the service's clock) a top-up may be dated and still be taken for a payment */
const RECONCILE_MARGIN_MS = 3_000;
/** the longest a request waits for another process's top-up of the wallet */
const MAX_LEASE_WAIT_MS = 10 * 60_000;

/**
 * Money-flow state of one wallet in this process: shared by every client and layer using that wallet. It lives
 * while a controller holds it, and while a signed payment's outcome is unknown even without one (`pending`).
 */
class WalletState {
  inFlight?: Promise<TopUpResult | undefined>;
  /** the top-up in flight was asked for explicitly (`client.topUp(amount)`) */
  inFlightExplicit?: boolean;
  /** completed top-ups */
  epoch = 0;
  #pending?: PendingPayment;
  lastBalanceUsd?: number;
  /** the service served this wallet and no 402 came since: requests flow freely */
  creditOk = false;
  /** the store's lease while this process runs a top-up of the wallet */
  held?: HeldLease;
  /** the top-up endpoint's last requirements (to refuse a top-up the budget cannot fit without asking again) */
  lastAccepts?: { accepts: unknown[]; at: number };
  /**
   * While the credit is unknown (first use, or after a 402) one request goes alone and every other one waits
   * here; it resolves when that request (and the top-up it led to) is done: with undefined to go on, or with
   * the top-up's error for the waiters to throw (they would only draw 402s, and the service counts every
   * failure towards its abuse block).
   */
  gate?: Promise<Error | undefined>;

  /** a signed payment whose outcome is unknown: re-sent, never re-signed, so never forgotten while set */
  get pending(): PendingPayment | undefined {
    return this.#pending;
  }
  set pending(p: PendingPayment | undefined) {
    this.#pending = p;
    walletStates.keep(this, p ? Number.POSITIVE_INFINITY : 0);
  }
}

/**
 * One state per wallet ADDRESS: two wallet objects holding one key are one wallet (one single flight). Held
 * weakly (each controller holds its own strongly), so a process serving many wallets keeps only live ones.
 */
const walletStates = new SharedRegistry<WalletState>();
function stateOf(wallet: X402Wallet): WalletState {
  return walletStates.get(walletScopeKey(walletNamespace(wallet), wallet.address), () => new WalletState());
}

/**
 * Words a service (v1 or v2, any letter case, the reference facilitator's `invalid_exact_evm_nonce_already_used`)
 * uses to say a payment's nonce was already used: for a payment we sent before, that means it settled.
 */
const ALREADY_USED = /already[\s_-]*(used|settled|processed|redeemed|spent|claimed)|nonce[\s\S]{0,40}\bused\b|replay|duplicate/i;
function saysAlreadyUsed(body: unknown): boolean {
  if (body === undefined || body === null) return false;
  const text = typeof body === "string" ? body : JSON.stringify(body);
  return ALREADY_USED.test(text.slice(0, 8192));
}

/** Opens the wallet's gate; the returned function closes it (once) with the outcome for the waiters. */
function openGate(s: WalletState): (outcome?: Error) => void {
  let resolve!: (outcome: Error | undefined) => void;
  const gate = new Promise<Error | undefined>((r) => (resolve = r));
  s.gate = gate;
  let closed = false;
  return (outcome) => {
    if (closed) return;
    closed = true;
    if (s.gate === gate) s.gate = undefined;
    resolve(outcome);
  };
}

function urlOf(input: string | URL | Request): string {
  return typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
}

/** The base URL (through `/api/vN`) of a request URL; the origin + `/api/v1` when the path has none. */
export function baseUrlOf(url: string): string {
  const u = new URL(url);
  const m = /^(.*?\/api\/v\d+)(?:\/|$)/.exec(u.pathname);
  return `${u.origin}${m ? m[1] : "/api/v1"}`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function codeOf(body: unknown): string | undefined {
  if (!body || typeof body !== "object") return undefined;
  const b = body as Record<string, unknown>;
  if (typeof b.code === "string") return b.code;
  return typeof b.error === "string" && /^[A-Z0-9_]+$/.test(b.error) ? b.error : undefined;
}

/** Reads what a 402 offers: `accepts` from the body, else from the PAYMENT-REQUIRED header. */
export function paymentSourceOf(body: unknown, headers: Headers): PaymentSource {
  const b = (body && typeof body === "object" ? body : {}) as Record<string, unknown>;
  const fromHeader = decodeBase64Json<Record<string, unknown>>(headers.get(PAYMENT_REQUIRED_HEADER));
  const nonEmpty = (v: unknown) => (Array.isArray(v) && v.length > 0 ? (v as unknown[]) : undefined);
  const accepts = nonEmpty(b.accepts) ?? nonEmpty(fromHeader?.accepts);
  const resource = (b.resource ?? fromHeader?.resource) as PaymentSource["resource"];
  const extensions = (fromHeader?.extensions ?? b.extensions) as Record<string, unknown> | undefined;
  return { accepts, resource, extensions };
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
  readonly #state: WalletState;
  /** the wallet's key in the store (its budget scope, its lease) */
  readonly #walletKey: string;
  /** when reading the store's epoch last failed */
  #epochFailedAt = Number.NEGATIVE_INFINITY;
  /** the service's origin: the base URL's, else pinned by the first request through this controller */
  #origin?: string;

  constructor(options: X402PaymentOptions) {
    if (!options || !isX402Wallet(options.wallet)) {
      throw new ConfigurationError("x402: `wallet` must be an EvmWallet or a SolanaWallet");
    }
    for (const k of ["topUpTimeoutMs", "maxResends", "resendDelayMs", "topUpLeaseMs"] as const) {
      const v = options[k];
      if (v !== undefined && !(Number.isFinite(v) && v >= 0)) throw new ConfigurationError(`x402: ${k} must be a non-negative number`);
    }
    if (options.topUpLeaseMs !== undefined && !(options.topUpLeaseMs >= 50)) throw new ConfigurationError("x402: topUpLeaseMs must be at least 50 ms");
    this.wallet = options.wallet;
    this.policy = PaymentPolicy.from(options.policy);
    this.options = options;
    this.store = options.store ?? defaultStore();
    this.#state = stateOf(options.wallet);
    this.#walletKey = walletScopeKey(walletNamespace(options.wallet), options.wallet.address);
    if (options.baseUrl) this.#origin = new URL(options.baseUrl).origin;
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

  /** The wallet's credit as last reported (X-Balance-Remaining or a top-up), in USD. */
  get lastBalanceUsd(): number | undefined {
    return this.#state.lastBalanceUsd;
  }
  /** Completed top-ups of this wallet in this process. */
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

  /** Records `X-Balance-Remaining` of a response. */
  observe(response: Response): void {
    const v = response.headers.get(BALANCE_REMAINING_HEADER);
    const n = v === null ? NaN : Number(v);
    if (Number.isFinite(n)) this.#state.lastBalanceUsd = n;
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
  async topUp(send: FetchLike, topUpUrl: string, amountUsd?: number, listener?: PaymentEventListener): Promise<TopUpResult> {
    const result = await this.#join(send, topUpUrl, amountUsd, listener, undefined);
    // without an epoch to compare there is no joining another process's top-up: this one paid
    if (!result) throw new PaymentFailedError("top-up ended without a payment");
    return result;
  }

  /**
   * The single flight: joins this process's top-up in flight, else starts one, which joins another process's
   * when the store's epoch moved past `seenEpoch` (then the result is undefined: credit was added elsewhere).
   * `seenEpoch`: the epoch as the request left; null when it could not be read; undefined for an explicit top-up
   * (which never joins another).
   */
  #join(send: FetchLike, topUpUrl: string, amountUsd: number | undefined, listener: PaymentEventListener | undefined, seenEpoch: number | null | undefined): Promise<TopUpResult | undefined> {
    const s = this.#state;
    if (s.inFlight) {
      // an automatic top-up that finds an explicit one in flight takes its credit when it lands; when the
      // policy refused the explicit amount (over a cap), that refusal is not this request's: it tries its own
      if (amountUsd === undefined && s.inFlightExplicit) {
        const joined = s.inFlight;
        return joined.catch((err: unknown) => {
          if (err instanceof PaymentPolicyError && err.rule !== "dryRun") return this.#join(send, topUpUrl, undefined, listener, seenEpoch);
          throw err;
        });
      }
      return s.inFlight;
    }
    const run = this.#leased(send, topUpUrl, amountUsd, listener, seenEpoch).finally(() => {
      if (s.inFlight === run) {
        s.inFlight = undefined;
        s.inFlightExplicit = false;
      }
    });
    s.inFlight = run;
    s.inFlightExplicit = amountUsd !== undefined;
    return run;
  }

  /** Like `topUp` but an explicit top-up waits for one in flight instead of joining it. */
  async explicitTopUp(send: FetchLike, topUpUrl: string, amountUsd: number, listener?: PaymentEventListener): Promise<TopUpResult> {
    if (!(Number.isFinite(amountUsd) && amountUsd > 0)) throw new ConfigurationError("topUp: amountUsd must be a positive number");
    if (!this.#onServiceOrigin(topUpUrl)) throw new ConfigurationError("topUp: the top-up URL is not on the service's origin");
    while (this.#state.inFlight) await this.#state.inFlight.catch(() => undefined);
    return this.topUp(send, topUpUrl, amountUsd, listener);
  }

  /**
   * Takes the wallet's lease in the store, waiting while another process holds it. Undefined when the epoch
   * moved past `seenEpoch` (another process's top-up completed since the request was sent: retry, don't pay).
   */
  async #takeLease(seenEpoch: number | null | undefined): Promise<{ token: number; pending?: PendingPaymentRecord; resolved?: string[] } | undefined> {
    const ttl = this.options.topUpLeaseMs ?? DEFAULT_LEASE_MS;
    const giveUpAt = Date.now() + MAX_LEASE_WAIT_MS;
    let delay = 25;
    for (;;) {
      // a store that cannot answer refuses the payment (StoreUnavailableError): no top-up without the fleet's lease
      const r = await this.store.acquireTopUpLease(this.#walletKey, ttl);
      // the epoch could not be read as the request left (a slow store): the first one seen here stands in, so a
      // top-up that ends while this request waits is still joined, not paid again
      if (seenEpoch === null) seenEpoch = r.epoch;
      if (seenEpoch !== undefined && r.epoch !== seenEpoch) {
        // credit was added elsewhere: a store that fails to take the lease back must not fail this request (and
        // every one held behind it); the lease then lapses by itself within `ttl`
        if (r.token !== undefined) await this.store.endTopUp(this.#walletKey, r.token, { settled: false }).catch(() => undefined);
        return undefined;
      }
      if (r.token !== undefined) return { token: r.token, pending: r.pending, resolved: r.resolved };
      if (Date.now() > giveUpAt) throw new PaymentFailedError(`another process's top-up of this wallet held its lease for over ${MAX_LEASE_WAIT_MS} ms`);
      // another process is paying: poll until its lease ends (released, or lapsed with its process)
      await sleep(delay);
      delay = Math.min(delay * 2, 250);
    }
  }

  /** Runs a top-up under the wallet's lease (renewed while it runs), and tells the store how it ended. */
  async #leased(send: FetchLike, topUpUrl: string, amountUsd: number | undefined, listener: PaymentEventListener | undefined, seenEpoch: number | null | undefined): Promise<TopUpResult | undefined> {
    const s = this.#state;
    const lease = await this.#takeLease(seenEpoch);
    if (!lease) return undefined;
    const ttl = this.options.topUpLeaseMs ?? DEFAULT_LEASE_MS;
    const held: HeldLease = { token: lease.token, end: { settled: false }, storedPending: lease.pending?.id };
    s.held = held;
    // a payment this process still holds whose outcome another process learned and reported (it re-sent it and
    // cleared it): known, so dropped. Re-sent from memory, it would draw "already used", be taken for this
    // top-up's payment (reported settled twice, the epoch moved for no credit) and fail the request with a 402.
    if (s.pending && s.pending.id !== lease.pending?.id && lease.resolved?.includes(s.pending.id)) s.pending = undefined;
    // another process's signed payment whose outcome is unknown comes first: re-sent, never re-signed
    if (lease.pending && s.pending?.id !== lease.pending.id) s.pending = pendingFromRecord(lease.pending, topUpUrl);
    const renew = setInterval(() => void this.store.renewTopUpLease(this.#walletKey, held.token, ttl).catch(() => false), Math.max(10, ttl / 3));
    renew.unref?.();
    try {
      return await this.#topUp(send, topUpUrl, amountUsd, listener);
    } finally {
      clearInterval(renew);
      if (s.held === held) s.held = undefined;
      // the epoch must move before the lease ends, or a waiting process would pay again: a few tries
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          await this.store.endTopUp(this.#walletKey, held.token, held.end);
          break;
        } catch {
          await sleep(100 * (attempt + 1));
        }
      }
    }
  }

  /** Keeps a signed payment in the store under the lease: true, or why not (then it must not be sent). */
  async #storePending(pending: PendingPayment): Promise<true | "lost" | "unavailable"> {
    const held = this.#state.held;
    if (!held) return true; // no lease (cannot happen under #leased): the process's own state holds it
    try {
      if (!(await this.store.putPendingPayment(this.#walletKey, held.token, pendingRecord(pending)))) return "lost";
      held.storedPending = pending.id;
      return true;
    } catch {
      return "unavailable";
    }
  }

  /** The pending payment's outcome is known: the store forgets it when this top-up ends. */
  #outcomeKnown(pending: PendingPayment, settled: boolean): void {
    const held = this.#state.held;
    if (!held) return;
    held.end.clearPending = pending.id;
    if (settled) held.end.settled = true;
  }

  /**
   * The store's top-up epoch of the wallet; undefined when it cannot be read. Read as each request leaves, so a
   * store that is down must not hold requests up: the read waits at most EPOCH_READ_MS, and after a failure
   * none is tried for EPOCH_BACKOFF_MS (a 402 then goes to the lease, which fails closed).
   */
  async storeEpoch(): Promise<number | undefined> {
    // the in-process store answers at once: no timer on every request for it
    if (this.store.processLocal === true) return (await this.store.topUpState(this.#walletKey)).epoch;
    if (Date.now() - this.#epochFailedAt < EPOCH_BACKOFF_MS) return undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const timeout = new Promise<undefined>((_, reject) => (timer = setTimeout(() => reject(new Error("slow")), EPOCH_READ_MS)));
      return (await Promise.race([this.store.topUpState(this.#walletKey), timeout]))!.epoch;
    } catch {
      this.#epochFailedAt = Date.now();
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  async #fetchRequirements(send: FetchLike, topUpUrl: string): Promise<PaymentSource> {
    // nothing is signed yet: a 5xx here is retried like any read
    const res = await send(topUpUrl, {
      method: "POST",
      headers: { accept: "application/json", "content-type": "application/json" },
      body: "{}",
      // bounded under a plain fetch too (`withX402`): the wallet's lease is held meanwhile
      signal: AbortSignal.timeout(this.options.topUpTimeoutMs ?? 60_000),
      service: { throwOnError: false },
    });
    const { body } = await readBody(res);
    const source = paymentSourceOf(body, res.headers);
    if (res.status !== 402 || !source.accepts) {
      throw new PaymentFailedError(`could not read payment requirements from the top-up endpoint (HTTP ${res.status})`, {
        status: res.status,
        body,
      });
    }
    return source;
  }

  async #topUp(send: FetchLike, topUpUrl: string, amountUsd: number | undefined, listener: PaymentEventListener | undefined): Promise<TopUpResult> {
    const s = this.#state;
    // An earlier signed payment whose outcome is unknown goes first, unchanged. Once it can no longer settle
    // (its validBefore passed), a payment that ever left the process is looked up before anything new is signed.
    if (s.pending && s.pending.expiresAt <= Date.now()) {
      const expired = s.pending;
      if (!expired.sent) {
        s.pending = undefined;
        this.#outcomeKnown(expired, false);
      } else {
        const found = await this.#reconcile(send, expired);
        if (found === "settled") return this.#settled(undefined, undefined, expired, 0, listener, true);
        if (found === "unknown") {
          const reason = "an earlier signed payment expired, and whether it settled cannot be read from the service: not signing another";
          await this.#emit(listener, "payment.failed", expired.decision, { reason });
          throw new PaymentFailedError(reason);
        }
        s.pending = undefined; // the service shows it did not settle, and it no longer can
        this.#outcomeKnown(expired, false);
      }
    }
    if (!s.pending) {
      // a budget that cannot fit even the last requirements seen is refused without asking for new ones (each
      // ask is a 402, which the service counts toward its abuse block)
      const last = s.lastAccepts;
      if (last && Date.now() - last.at < LAST_ACCEPTS_MS) {
        try {
          await this.policy.checkBudget(last.accepts, { namespace: walletNamespace(this.wallet), amountUsd, walletAddress: this.wallet.address, store: this.store });
        } catch (err) {
          if (err instanceof PaymentPolicyError) await this.#emit(listener, "payment.refused", undefined, { rule: err.rule, reason: err.message });
          throw err;
        }
      }
      // the top-up endpoint's own requirements, never the inference 402's (a hint at most)
      const source = await this.#fetchRequirements(send, topUpUrl);
      s.lastAccepts = { accepts: source.accepts ?? [], at: Date.now() };
      if (amountUsd !== undefined) await this.#checkExplicitAmount(amountUsd, listener);
      let authorization: Awaited<ReturnType<PaymentPolicy["authorize"]>>;
      try {
        // decide, check pins and budgets, reserve and pin: one atomic step of the store, nothing awaited between
        authorization = await this.policy.authorize(source.accepts ?? [], {
          namespace: walletNamespace(this.wallet),
          amountUsd,
          walletAddress: this.wallet.address,
          store: this.store,
        });
      } catch (err) {
        if (err instanceof PaymentPolicyError) {
          // a dry run reports the payment it would have made
          if (err.rule === "dryRun") await this.#emit(listener, "payment.requested", this.policy.decide(source.accepts ?? [], { namespace: walletNamespace(this.wallet), amountUsd }));
          await this.#emit(listener, "payment.refused", undefined, { rule: err.rule, reason: err.message });
        }
        throw err;
      }
      const { decision } = authorization;
      await this.#emit(listener, "payment.requested", decision);
      let signed: SignedPayment;
      try {
        signed = await signPayment(this.wallet, decision, {
          // default: @x402/svm's public mainnet RPC. The service's own `solana-mainnet` proxy needs credentials,
          // and the kit RPC the scheme builds can send none; pass `solanaRpcUrl` to use another node.
          solanaRpcUrl: this.options.solanaRpcUrl,
          resource: source.resource ?? { url: topUpUrl },
          extensions: undefined,
        });
      } catch (err) {
        await authorization.release(); // nothing was signed
        await this.#emit(listener, "payment.failed", decision, { reason: (err as Error).message });
        throw err;
      }
      // committed before it can leave (the budget never undercounts), recorded in the store before it is sent
      await authorization.commit();
      const signedAt = Date.now();
      const expiresAt = (signed.validBefore ?? Math.floor(signedAt / 1000) + decision.requirement.maxTimeoutSeconds) * 1000;
      const pending: PendingPayment = { id: globalThis.crypto.randomUUID(), signed, decision, topUpUrl, expiresAt, signedAt };
      const stored = await this.#storePending(pending);
      if (stored !== true) {
        // never sent, so dropped; its budget stays counted (the cap errs on the safe side)
        const reason = `the signed payment could not be recorded in the store (${stored === "lost" ? "the wallet's top-up lease was lost" : "store unavailable"}): not sent`;
        await this.#emit(listener, "payment.failed", decision, { reason });
        throw stored === "lost" ? new PaymentFailedError(reason) : new StoreUnavailableError(reason, { operation: "putPendingPayment" });
      }
      s.pending = pending;
      await this.#emit(listener, "payment.signed", decision);
    } else if (s.held && s.held.storedPending !== s.pending.id) {
      // a payment this process signed that the store does not hold: recorded for the fleet (re-sending it is safe either way)
      await this.#storePending(s.pending);
    }
    return this.#deliver(send, s.pending, listener);
  }

  /**
   * Looks for a pending payment's settlement in the wallet's transactions: a top-up of the signed amount made
   * after it was signed. "unknown" when the service cannot be read.
   */
  async #reconcile(send: FetchLike, pending: PendingPayment): Promise<"settled" | "absent" | "unknown"> {
    const base = pending.topUpUrl.replace(/\/x402\/top-up$/, "");
    try {
      const res = await send(`${base}/x402/transactions/${this.wallet.address}?limit=50`, {
        method: "GET",
        headers: { accept: "application/json" },
        signal: AbortSignal.timeout(this.options.topUpTimeoutMs ?? 60_000),
        service: { retry: false, throwOnError: false },
      });
      const { body } = await readBody(res);
      const list = (body as { data?: { transactions?: unknown } } | undefined)?.data?.transactions;
      if (!res.ok || !Array.isArray(list)) return "unknown";
      // Only a top-up made after this payment was signed can be it: another top-up of the same amount (in a fleet,
      // another process's, settled before this lease was taken) must not be taken for it. Compared on the
      // service's clock, read from this answer's Date (1 s resolution, and fleet clocks a few s apart: a margin);
      // without a Date, a wide window (the service's clock may run behind ours).
      const served = Date.parse(res.headers.get("date") ?? "");
      const since = Number.isFinite(served) ? pending.signedAt + (served - Date.now()) - RECONCILE_MARGIN_MS : pending.signedAt - 120_000;
      const hit = list.some((t) => {
        const tx = t as { type?: unknown; amount?: unknown; createdAt?: unknown };
        const at = typeof tx.createdAt === "string" ? Date.parse(tx.createdAt) : NaN;
        return tx.type === "TOP_UP" && typeof tx.amount === "number" && Math.abs(tx.amount - pending.decision.amountUsd) < 1e-6 && at >= since;
      });
      return hit ? "settled" : "absent";
    } catch {
      return "unknown";
    }
  }

  async #checkExplicitAmount(amountUsd: number, listener: PaymentEventListener | undefined): Promise<void> {
    if (amountUsd > this.policy.maxPerTopUpUsd) {
      const err = new PaymentPolicyError(`payment refused by policy (maxPerTopUp): $${amountUsd} is over the $${this.policy.maxPerTopUpUsd} cap per top-up`, {
        rule: "maxPerTopUp",
      });
      await this.#emit(listener, "payment.refused", undefined, { rule: err.rule, reason: err.message, amountUsd });
      throw err;
    }
  }

  /** Sends the signed payment; on an unclear outcome re-sends the same bytes, then reads the transactions. */
  async #deliver(send: FetchLike, pending: PendingPayment, listener: PaymentEventListener | undefined): Promise<TopUpResult> {
    const s = this.#state;
    const maxResends = this.options.maxResends ?? 3;
    const { decision } = pending;
    let lastProblem = "";
    for (let attempt = 0; attempt <= maxResends; attempt++) {
      if (attempt > 0) await sleep(this.options.resendDelayMs ?? 500);
      let res: Response;
      const sentBefore = pending.sent === true;
      pending.sent = true;
      try {
        res = await send(pending.topUpUrl, {
          method: "POST",
          headers: { accept: "application/json", "content-type": "application/json", [pending.signed.headerName]: pending.signed.header },
          body: "{}",
          service: { retry: false, throwOnError: false, timeout: this.options.topUpTimeoutMs ?? 60_000 },
        });
      } catch (err) {
        // timeout, reset, abuse guard: the payment may or may not have settled
        lastProblem = err instanceof ServiceError ? err.message : String((err as Error)?.message ?? err);
        continue;
      }
      const { body } = await readBody(res);
      if (res.ok) return this.#settled(res, body, pending, attempt, listener);
      const code = codeOf(body);
      if (res.status >= 500 || res.status === 429 || res.status === 408) {
        lastProblem = `HTTP ${res.status}${code ? ` ${code}` : ""}`;
        continue;
      }
      if (sentBefore && saysAlreadyUsed(body)) {
        // a re-send of a payment that settled on an earlier attempt (of this top-up or an earlier one) whose answer was lost
        return this.#settled(res, body, pending, attempt, listener);
      }
      if (sentBefore || saysAlreadyUsed(body)) {
        // these bytes went out before, so the refusal is not the whole story: they may have settled
        lastProblem = `HTTP ${res.status}${code ? ` ${code}` : ""} on a re-send`;
        break;
      }
      // a definite refusal of a payment the service had never seen: it will not be settled
      s.pending = undefined;
      this.#outcomeKnown(pending, false);
      const reason = `top-up refused: HTTP ${res.status}${code ? ` ${code}` : ""}`;
      await this.#emit(listener, "payment.failed", decision, { reason });
      throw new PaymentFailedError(reason, { status: res.status, code, body });
    }
    // unclear: the wallet's transactions tell whether it settled
    if ((await this.#reconcile(send, pending)) === "settled") return this.#settled(undefined, undefined, pending, maxResends, listener, true);
    // keep `pending`: the next top-up re-sends these bytes instead of signing anew
    const reason = `top-up outcome unknown (${lastProblem}); the same signed payment will be re-sent, never re-signed, until it expires`;
    await this.#emit(listener, "payment.failed", decision, { reason, resends: maxResends });
    throw new PaymentFailedError(reason);
  }

  async #settled(
    res: Response | undefined,
    body: unknown,
    pending: PendingPayment,
    resends: number,
    listener: PaymentEventListener | undefined,
    reconciled = false,
  ): Promise<TopUpResult> {
    const s = this.#state;
    if (s.pending === pending) s.pending = undefined;
    this.#outcomeKnown(pending, true);
    s.epoch++;
    s.creditOk = true;
    const data = ((body as { data?: Record<string, unknown> } | undefined)?.data ?? {}) as Record<string, unknown>;
    const receipt = res ? decodeBase64Json<Record<string, unknown>>(res.headers.get(PAYMENT_RESPONSE_HEADER)) : undefined;
    // what is reported as spent is what was signed: the server's figure is its claim, carried beside it
    const signedUsd = pending.decision.amountUsd;
    const credited = typeof data.amountCredited === "number" && Number.isFinite(data.amountCredited) ? data.amountCredited : undefined;
    const newBalance = typeof data.newBalance === "number" && Number.isFinite(data.newBalance) ? data.newBalance : undefined;
    if (newBalance !== undefined) s.lastBalanceUsd = newBalance;
    const result: TopUpResult = {
      amountUsd: signedUsd,
      creditedUsd: credited,
      newBalanceUsd: newBalance,
      transaction: typeof receipt?.transaction === "string" ? receipt.transaction : undefined,
      network: typeof receipt?.network === "string" ? receipt.network : pending.decision.network,
      payer: typeof receipt?.payer === "string" ? receipt.payer : this.wallet.address,
      paymentId: typeof data.paymentId === "string" ? data.paymentId : undefined,
      resends,
      ...(reconciled ? { reconciled } : {}),
    };
    await this.#emit(listener, "payment.settled", pending.decision, {
      amountUsd: signedUsd,
      creditedUsd: credited,
      transaction: result.transaction,
      balanceUsd: newBalance,
      resends,
    });
    if (credited !== undefined && Math.abs(credited - signedUsd) > 1e-6) {
      await this.#emit(listener, "payment.warning", pending.decision, {
        amountUsd: signedUsd,
        creditedUsd: credited,
        reason: `the service reports $${credited} credited for a payment of $${signedUsd}`,
      });
    }
    return result;
  }

  /** The fetch layer. */
  layer(): FetchLayer {
    return (next) => async (input, init = {}) => {
      const [url, replayInit] = await replayable(input, init);
      // only the service's own 402s are paid: a request elsewhere passes through untouched
      if (!this.#onServiceOrigin(url)) return next(url, replayInit);
      const base = this.options.baseUrl ?? baseUrlOf(url);
      const topUpUrl = `${base}/x402/top-up`;
      if (url.split("?")[0] === topUpUrl) return next(url, replayInit);

      const s = this.#state;
      // Hold back while the wallet's credit is unknown: 50 simultaneous first requests of an empty wallet
      // would be 50 402s, and the service blocks a caller after 20 failures in 30 s. The first goes alone;
      // the rest wait for it (and for the top-up it leads to). A running top-up is waited for as before.
      let release: ((outcome?: Error) => void) | undefined;
      // reads (GET /models, balances) are never refused for credit: they neither wait nor prove credit
      const method = (replayInit.method ?? "GET").toUpperCase();
      const creditBearing = method !== "GET" && method !== "HEAD";
      for (;;) {
        if (!creditBearing) break; // reads wait for nothing (the top-up itself reads the wallet's transactions)
        if (s.inFlight) await s.inFlight.catch(() => undefined);
        if (s.creditOk) break;
        if (s.gate) {
          const outcome = await s.gate;
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
    let epochAtSend = s.epoch;
    // the fleet's top-up epoch as this request leaves: a 402 after it moved was drawn before another
    // process's top-up landed (retry, don't pay)
    let seenEpoch: number | null = creditBearing ? ((await this.storeEpoch()) ?? null) : null;
    const first = await next(url, replayInit);
    // a 402 that ended on another origin (after a redirect) is not the service's to ask for: handed back unpaid
    if (first.status === 402 && first.url && !this.#onServiceOrigin(first.url)) return first;
    this.observe(first);
    if (first.status !== 402) {
      // served, or the balance was reported: credit is fine
      if ((first.ok && creditBearing) || first.headers.has(BALANCE_REMAINING_HEADER)) s.creditOk = true;
      return first;
    }
    // out of credit: requests sent from now on wait for the top-up instead of drawing 402s too
    s.creditOk = false;
    release ??= s.gate ? undefined : openGate(s);

    const { text, body } = await readBody(first);
    const handBack = () => new Response(text, { status: first.status, statusText: first.statusText, headers: first.headers });
    // variant 1: an API-key account without balance; the wallet cannot pay for that account
    if (codeOf(body) === "INSUFFICIENT_BALANCE") return handBack();

    for (let round = 0; ; round++) {
      // a top-up completed in this process while this request was out: retry without paying
      let paidHere = s.epoch !== epochAtSend;
      if (!paidHere) {
        try {
          // the 402's own requirements are not read: the top-up endpoint's are what gets signed
          const result = await this.#join(next, topUpUrl, undefined, replayInit.service?.onPaymentEvent, seenEpoch);
          // undefined: another process's top-up landed while this request was out
          paidHere = result !== undefined;
        } catch (err) {
          // the held requests fail the same way instead of each drawing a 402
          release?.(err instanceof Error ? err : new PaymentFailedError(String(err)));
          throw err;
        }
      }
      // credit was added: the held requests go now, alongside this retry
      release?.();
      epochAtSend = s.epoch;
      seenEpoch = (await this.storeEpoch()) ?? null;
      const retried = await next(url, replayInit);
      this.observe(retried);
      if (retried.status !== 402) return retried;
      s.creditOk = false;
      // after this process's own payment, or a few rounds of other processes' (whose credit the fleet used up
      // again before this request got its turn), a 402 is an error, never another payment
      if (paidHere || round >= 2) {
        const again = await readBody(retried);
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
