/**
 * The top-up single flight: one top-up at a time per wallet, in this process and, through the store, across a
 * fleet. Within the process every 402 joins the top-up in flight. Across processes the store holds a lease per
 * wallet (expiry + fencing token), the top-up epoch and the pending signed payment: one process pays, the others
 * wait for the lease to end and retry when the epoch moved; a process killed while paying holds the lease only
 * until it lapses, and its signed payment is re-sent by the next holder, never re-signed.
 *
 * Under the lease, in order: an earlier payment whose outcome is unknown goes first, unchanged; a budget that
 * cannot fit even the last requirements seen is refused without asking again; before a second automatic top-up
 * within the policy's period the balance is read, and a 402 that paying would not cure is not paid
 * (`PaymentNotCurableError`); then the top-up endpoint's own requirements are read, the policy decides and
 * reserves, the payment is signed, recorded in the store, and delivered (settlement.ts).
 */
import {
  AbortError,
  ConfigurationError,
  PaymentFailedError,
  PaymentPolicyError,
  PaymentsUnavailableError,
  StoreUnavailableError,
  TimeoutError,
} from "../http/errors.js";
import { readBody, type FetchLike } from "../http/fetch-stack.js";
import { decodeBase64Json } from "../http/headers.js";
import { awaitShared, isOwnAbort } from "../http/shared-wait.js";
import type { PaymentStore, PendingPaymentRecord } from "../store/types.js";
import { minimumBalanceOf, notCurable } from "./balance.js";
import type { PaymentEventListener } from "./events.js";
import { nonceOf, signPayment, type SignedPayment } from "./payment.js";
import type { PaymentPolicy } from "./policy.js";
import { sendWaitingOut429, sleep } from "./retry-429.js";
import { codeOf, deliver, outcomeKnown, reconcile, settled } from "./settlement.js";
import type { PaymentSource, PendingPayment, TopUpResult } from "./types.js";
import type { PaymentContext } from "./wallet-state.js";
import { pendingFromRecord, pendingRecord, type HeldLease } from "./wallet-state.js";
import { walletNamespace } from "./wallets.js";

export const PAYMENT_REQUIRED_HEADER = "PAYMENT-REQUIRED";

/** default lease of a top-up in the store (renewed every third while it runs) */
const DEFAULT_LEASE_MS = 15_000;
/** the longest the read of the store's epoch may delay a request, and the pause in reads after one failed */
const EPOCH_READ_MS = 500;
const EPOCH_BACKOFF_MS = 5_000;
/** how long the last requirements seen stand in for a budget check before new ones are asked for */
const LAST_ACCEPTS_MS = 5 * 60_000;
/** the longest a request waits for another process's top-up of the wallet */
const MAX_LEASE_WAIT_MS = 10 * 60_000;

/** What a top-up is asked with. */
export interface TopUpAsk {
  /** an explicit top-up's amount, instead of the policy's (the caps still apply) */
  amountUsd?: number;
  listener?: PaymentEventListener;
  /**
   * the store's epoch as the request that drew the 402 left (or an older one); null when none is known; undefined for an
   * explicit top-up (which never joins another process's)
   */
  seenEpoch?: number | null;
  /** the 402 body that asked for it (an automatic top-up): what it says guides the check before a second top-up */
  after402?: unknown;
  /** what asked for it, for the owner's `approve` (default: an explicit top-up, or a 402) */
  reason?: string;
  /**
   * an explicit top-up's caller's signal: until the payment is signed it cancels the top-up (nothing is paid); once
   * signed, the payment is delivered to its end all the same (never abandoned), and only the caller stops waiting
   */
  signal?: AbortSignal;
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

/** The credit a wallet-short 402 reports (`currentBalanceUsd`), when it names a usable one. */
function currentBalanceOf(body: unknown): number | undefined {
  const v = body && typeof body === "object" ? (body as { currentBalanceUsd?: unknown }).currentBalanceUsd : undefined;
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined;
}

/** The top-up single flight of one controller's wallet. */
export class TopUpFlight {
  /** when reading the store's epoch last failed */
  #epochFailedAt = Number.NEGATIVE_INFINITY;
  /** the store's epoch as it last answered (a read, a lease asked for, a top-up ended); undefined before any */
  #knownEpoch: number | undefined;

  constructor(readonly ctx: PaymentContext) {}

  get #store(): PaymentStore {
    return this.ctx.store;
  }

  /**
   * Joins this process's top-up in flight, else starts one, which joins another process's when the store's epoch
   * moved past `ask.seenEpoch` (then the result is undefined: credit was added elsewhere).
   */
  join(send: FetchLike, topUpUrl: string, ask: TopUpAsk): Promise<TopUpResult | undefined> {
    const s = this.ctx.state;
    if (s.inFlight) {
      // an automatic top-up that finds an explicit one in flight takes its credit when it lands; when the
      // policy refused the explicit amount (over a cap), that refusal is not this request's: it tries its own
      if (ask.amountUsd === undefined && s.inFlightExplicit) {
        return s.inFlight.catch((err: unknown) => {
          if (err instanceof PaymentPolicyError && err.rule !== "dryRun") return this.join(send, topUpUrl, ask);
          // the explicit top-up's caller gave up before it signed: this request's own top-up goes ahead
          if (err instanceof AbortError || err instanceof TimeoutError) return this.join(send, topUpUrl, ask);
          throw err;
        });
      }
      return s.inFlight;
    }
    const run = this.#leased(send, topUpUrl, ask).finally(() => {
      if (s.inFlight === run) {
        s.inFlight = undefined;
        s.inFlightExplicit = false;
      }
    });
    // its callers may stop waiting (their signals): its outcome is then the wallet's state, never an unhandled rejection
    run.catch(() => undefined);
    s.inFlight = run;
    s.inFlightExplicit = ask.amountUsd !== undefined;
    return run;
  }

  /** An explicit top-up: waits for one in flight instead of joining it; never joins another process's. */
  async explicit(
    send: FetchLike,
    topUpUrl: string,
    amountUsd: number,
    listener?: PaymentEventListener,
    signal?: AbortSignal,
  ): Promise<TopUpResult> {
    if (!(Number.isFinite(amountUsd) && amountUsd > 0)) throw new ConfigurationError("topUp: amountUsd must be a positive number");
    while (this.ctx.state.inFlight)
      await awaitShared(
        this.ctx.state.inFlight.catch(() => undefined),
        signal,
      );
    signal?.throwIfAborted();
    return awaitShared(this.once(send, topUpUrl, { amountUsd, listener, signal }), signal);
  }

  /** One top-up that must pay (nothing to join across processes). */
  async once(send: FetchLike, topUpUrl: string, ask: TopUpAsk): Promise<TopUpResult> {
    const result = await this.join(send, topUpUrl, { ...ask, seenEpoch: undefined });
    // without an epoch to compare there is no joining another process's top-up: this one paid
    if (!result) throw new PaymentFailedError("top-up ended without a payment");
    return result;
  }

  /**
   * The store's top-up epoch of the wallet; undefined when it cannot be read. Read as each request leaves, so a
   * store that is down must not hold requests up: the read waits at most EPOCH_READ_MS, and after a failure
   * none is tried for EPOCH_BACKOFF_MS (a 402 then goes to the lease, which fails closed).
   */
  async storeEpoch(signal?: AbortSignal | null): Promise<number | undefined> {
    const store = this.#store;
    // the in-process store answers at once: no timer on every request for it
    if (store.processLocal === true) return (await store.topUpState(this.ctx.walletKey)).epoch;
    if (Date.now() - this.#epochFailedAt < EPOCH_BACKOFF_MS) return undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const timeout = new Promise<undefined>((_, reject) => (timer = setTimeout(() => reject(new Error("slow")), EPOCH_READ_MS)));
      return (this.#knownEpoch = (await awaitShared(Promise.race([store.topUpState(this.ctx.walletKey), timeout]), signal))!.epoch);
    } catch (err) {
      if (isOwnAbort(err, signal)) throw err; // the caller gave up: not the store's failure
      this.#epochFailedAt = Date.now();
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The epoch to hand a request about to leave, to compare with when it draws a 402: the store's now, else the
   * last one it answered (older is safe: a 402 is then retried once more, never paid twice); null when none is
   * known (the 402 is retried before anything is paid, see #takeLease).
   */
  async epochBeforeSend(signal?: AbortSignal | null): Promise<number | null> {
    return (await this.storeEpoch(signal)) ?? this.#knownEpoch ?? null;
  }

  /**
   * Takes the wallet's lease in the store, waiting while another process holds it. Undefined when the epoch
   * moved past `seenEpoch` (another process's top-up completed since the request was sent: retry, don't pay),
   * or when `seenEpoch` is null and the lease came free (whether one completed is unknown: retry first).
   */
  async #takeLease(
    seenEpoch: number | null | undefined,
  ): Promise<{ token: number; pending?: PendingPaymentRecord; resolved?: string[] } | undefined> {
    const store = this.#store;
    const key = this.ctx.walletKey;
    const ttl = this.ctx.options.topUpLeaseMs ?? DEFAULT_LEASE_MS;
    const giveUpAt = Date.now() + MAX_LEASE_WAIT_MS;
    let delay = 25;
    let blind = false;
    for (;;) {
      // a store that cannot answer refuses the payment (StoreUnavailableError): no top-up without the fleet's lease
      const r = await store.acquireTopUpLease(key, ttl);
      this.#knownEpoch = r.epoch;
      // No epoch from before the request left (a slow store): the first one seen here is read after its 402, so
      // a top-up that ended in between (credit added after the 402, epoch moved before this read) is not in it.
      // It still tells a top-up that ends while this request waits; a lease that comes free is given back
      // unpaid, and the layer re-sends the request with this epoch, read before the re-send, to compare with.
      if (seenEpoch === null) {
        seenEpoch = r.epoch;
        blind = true;
      }
      if ((seenEpoch !== undefined && r.epoch !== seenEpoch) || (blind && r.token !== undefined)) {
        // credit was (or may have been) added elsewhere: a store that fails to take the lease back must not fail
        // this request (and every one held behind it); the lease then lapses by itself within `ttl`
        if (r.token !== undefined) await store.endTopUp(key, r.token, { settled: false }).catch(() => undefined);
        return undefined;
      }
      if (r.token !== undefined) return { token: r.token, pending: r.pending, resolved: r.resolved };
      if (Date.now() > giveUpAt)
        throw new PaymentFailedError(`another process's top-up of this wallet held its lease for over ${MAX_LEASE_WAIT_MS} ms`);
      // another process is paying: poll until its lease ends (released, or lapsed with its process)
      await sleep(delay);
      delay = Math.min(delay * 2, 250);
    }
  }

  /** Runs a top-up under the wallet's lease (renewed while it runs), and tells the store how it ended. */
  async #leased(send: FetchLike, topUpUrl: string, ask: TopUpAsk): Promise<TopUpResult | undefined> {
    const { state: s, walletKey: key } = this.ctx;
    const store = this.#store;
    const lease = await this.#takeLease(ask.seenEpoch);
    if (!lease) return undefined;
    const ttl = this.ctx.options.topUpLeaseMs ?? DEFAULT_LEASE_MS;
    const held: HeldLease = { token: lease.token, end: { settled: false }, storedPending: lease.pending?.id };
    s.held = held;
    // a payment this process still holds whose outcome another process learned and reported (it re-sent it and
    // cleared it): known, so dropped. Re-sent from memory, it would draw "already used", be taken for this
    // top-up's payment (reported settled twice, the epoch moved for no credit) and fail the request with a 402.
    if (s.pending && s.pending.id !== lease.pending?.id && lease.resolved?.includes(s.pending.id)) s.pending = undefined;
    // another process's signed payment whose outcome is unknown comes first: re-sent, never re-signed
    if (lease.pending && s.pending?.id !== lease.pending.id) s.pending = pendingFromRecord(lease.pending, topUpUrl);
    const renew = setInterval(() => void store.renewTopUpLease(key, held.token, ttl).catch(() => false), Math.max(10, ttl / 3));
    renew.unref?.();
    try {
      return await this.#topUp(send, topUpUrl, ask);
    } finally {
      clearInterval(renew);
      if (s.held === held) s.held = undefined;
      // the epoch must move before the lease ends, or a waiting process would pay again: a few tries
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          this.#knownEpoch = (await store.endTopUp(key, held.token, held.end)).epoch;
          break;
        } catch {
          await sleep(100 * (attempt + 1));
        }
      }
    }
  }

  /** Keeps a signed payment in the store under the lease: true, or why not (then it must not be sent). */
  async #storePending(pending: PendingPayment): Promise<true | "lost" | "unavailable"> {
    const held = this.ctx.state.held;
    if (!held) return true; // no lease (cannot happen under #leased): the process's own state holds it
    try {
      if (!(await this.#store.putPendingPayment(this.ctx.walletKey, held.token, pendingRecord(pending)))) return "lost";
      held.storedPending = pending.id;
      return true;
    } catch {
      return "unavailable";
    }
  }

  async #fetchRequirements(send: FetchLike, topUpUrl: string, caller?: AbortSignal): Promise<PaymentSource> {
    const timeoutMs = this.ctx.options.topUpTimeoutMs ?? 60_000;
    const timeout = AbortSignal.timeout(timeoutMs);
    // nothing is signed yet: a 5xx here is retried like any read, and the route's own 429 waited out
    const res = await sendWaitingOut429(
      send,
      topUpUrl,
      {
        method: "POST",
        headers: { accept: "application/json", "content-type": "application/json" },
        body: "{}",
        // bounded under a plain fetch too (`withX402`): the wallet's lease is held meanwhile; nothing is signed
        // yet, so an explicit top-up's caller may cancel it here
        signal: caller ? AbortSignal.any([timeout, caller]) : timeout,
        service: { throwOnError: false },
      },
      Date.now() + timeoutMs,
    );
    const { body } = await readBody(res);
    const source = paymentSourceOf(body, res.headers);
    if (res.status === 503 && codeOf(body) === "X402_NOT_CONFIGURED") {
      throw new PaymentsUnavailableError("payments are unavailable for now (HTTP 503 X402_NOT_CONFIGURED): nothing was signed", {
        status: 503,
        code: "X402_NOT_CONFIGURED",
        body,
      });
    }
    if (res.status !== 402 || !source.accepts) {
      throw new PaymentFailedError(`could not read payment requirements from the top-up endpoint (HTTP ${res.status})`, {
        status: res.status,
        body,
      });
    }
    return source;
  }

  async #refused(err: unknown, listener: PaymentEventListener | undefined): Promise<never> {
    if (err instanceof PaymentPolicyError)
      await this.ctx.emit(listener, "payment.refused", undefined, { rule: err.rule, reason: err.message });
    throw err;
  }

  /**
   * Before a second automatic top-up of the wallet within the policy's period (the fleet's, with a fleet store):
   * the balance says whether paying would cure the 402. The first top-up is not checked: an empty wallet is the
   * common case, and the read would cost every first payment a round trip.
   */
  async #checkCurable(send: FetchLike, topUpUrl: string, after402: unknown, listener: PaymentEventListener | undefined): Promise<void> {
    const { ctx } = this;
    const spent = await ctx.store.spentUsd(ctx.walletKey, ctx.policy.periodMs, Date.now());
    if (!(spent > 0)) return;
    const base = topUpUrl.replace(/\/x402\/top-up$/, "");
    const err = await notCurable(ctx, send, base, minimumBalanceOf(after402), Date.now() + (ctx.options.topUpTimeoutMs ?? 60_000));
    if (!err) return;
    await ctx.emit(listener, "payment.failed", undefined, { reason: err.message, balanceUsd: err.balanceUsd });
    throw err;
  }

  async #topUp(send: FetchLike, topUpUrl: string, ask: TopUpAsk): Promise<TopUpResult> {
    const { ctx } = this;
    const { state: s, wallet, policy } = ctx;
    const { amountUsd, listener } = ask;
    // An earlier signed payment whose outcome is unknown goes first, unchanged. Once it can no longer settle
    // (its validBefore passed), a payment that ever left the process is looked up before anything new is signed.
    if (s.pending && s.pending.expiresAt <= Date.now()) {
      const expired = s.pending;
      if (!expired.sent) {
        s.pending = undefined;
        outcomeKnown(ctx, expired, false);
      } else {
        const found = await reconcile(ctx, send, expired);
        if (found === "settled") return settled(ctx, undefined, undefined, expired, 0, listener, true);
        if (found === "unknown") {
          const reason = "an earlier signed payment expired, and whether it settled cannot be read from the service: not signing another";
          await ctx.emit(listener, "payment.failed", expired.decision, { reason });
          throw new PaymentFailedError(reason);
        }
        s.pending = undefined; // the service shows it did not settle, and it no longer can
        outcomeKnown(ctx, expired, false);
      }
    }
    if (!s.pending) {
      const context = { namespace: walletNamespace(wallet), amountUsd, walletAddress: wallet.address, store: ctx.store };
      // a budget that cannot fit even the last requirements seen is refused without asking for new ones (each
      // ask is a 402, which the service counts toward its abuse block)
      const last = s.lastAccepts;
      if (last && Date.now() - last.at < LAST_ACCEPTS_MS)
        await policy.checkBudget(last.accepts, context).catch((err: unknown) => this.#refused(err, listener));
      // an explicit amount is checked against the caps before any ask, even with no requirements seen yet
      if (amountUsd !== undefined) {
        await this.#checkExplicitAmount(policy, amountUsd, listener);
        await policy.checkAmountFits(amountUsd, context).catch((err: unknown) => this.#refused(err, listener));
      }
      if (ask.after402 !== undefined) await this.#checkCurable(send, topUpUrl, ask.after402, listener);
      // the top-up endpoint's own requirements, never the inference 402's (a hint at most)
      const source = await this.#fetchRequirements(send, topUpUrl, ask.signal);
      s.lastAccepts = { accepts: source.accepts ?? [], at: Date.now() };
      let authorization: Awaited<ReturnType<PaymentPolicy["authorize"]>>;
      try {
        // decide, check pins and budgets, reserve and pin: one atomic step of the store, nothing awaited between
        authorization = await policy.authorize(source.accepts ?? [], context);
      } catch (err) {
        // a dry run reports the payment it would have made
        if (err instanceof PaymentPolicyError && err.rule === "dryRun") {
          await ctx.emit(listener, "payment.requested", policy.decide(source.accepts ?? [], { namespace: context.namespace, amountUsd }));
        }
        return this.#refused(err, listener);
      }
      const { decision } = authorization;
      try {
        const reason =
          ask.reason ??
          (amountUsd !== undefined ? `an explicit top-up of $${amountUsd}` : "a 402 Payment Required: the wallet's credit ran out");
        await policy.approval(decision, { wallet: wallet.address, reason });
      } catch (err) {
        await authorization.release(); // nothing was signed: the reservation is undone
        return this.#refused(err, listener);
      }
      await ctx.emit(listener, "payment.requested", decision);
      // the credit before paying, when known (the 402's own figure, else a fresh one): a 409 that may mean "already
      // processed" and a payment still settling are then told apart by one balance read (settlement.ts)
      const balanceBeforeUsd = currentBalanceOf(ask.after402) ?? (s.balance.fresh() ? s.balance.usd : undefined);
      let signed: SignedPayment;
      // A signer that never answers (a remote signer down, a wallet whose user walked away) must not hold the
      // wallet's top-up, and every request waiting on it, forever: signing is bounded like the rest of the top-up
      // (and an explicit top-up's caller may cancel it). A signature that comes after is never sent nor kept.
      const signing = AbortSignal.timeout(ctx.options.topUpTimeoutMs ?? 60_000);
      try {
        ask.signal?.throwIfAborted();
        signed = await awaitShared(
          signPayment(wallet, decision, {
            // default: @x402/svm's public mainnet RPC. The service's own `solana-mainnet` proxy needs credentials,
            // and the kit RPC the scheme builds can send none; pass `solanaRpcUrl` to use another node.
            solanaRpcUrl: ctx.options.solanaRpcUrl,
            resource: source.resource ?? { url: topUpUrl },
            extensions: undefined,
          }),
          ask.signal ? AbortSignal.any([signing, ask.signal]) : signing,
        );
      } catch (err) {
        await authorization.release(); // nothing was signed
        await ctx.emit(listener, "payment.failed", decision, { reason: (err as Error).message });
        throw err;
      }
      // committed before it can leave (the budget never undercounts), recorded in the store before it is sent
      await authorization.commit();
      const signedAt = Date.now();
      const expiresAt = (signed.validBefore ?? Math.floor(signedAt / 1000) + decision.requirement.maxTimeoutSeconds) * 1000;
      const pending: PendingPayment = {
        id: globalThis.crypto.randomUUID(),
        signed,
        decision,
        topUpUrl,
        expiresAt,
        signedAt,
        balanceBeforeUsd,
      };
      const stored = await this.#storePending(pending);
      if (stored !== true) {
        // never sent, so dropped; its budget stays counted (the cap errs on the safe side)
        const reason = `the signed payment could not be recorded in the store (${stored === "lost" ? "the wallet's top-up lease was lost" : "store unavailable"}): not sent`;
        await ctx.emit(listener, "payment.failed", decision, { reason });
        throw stored === "lost" ? new PaymentFailedError(reason) : new StoreUnavailableError(reason, { operation: "putPendingPayment" });
      }
      s.pending = pending;
      await ctx.emit(listener, "payment.signed", decision, { nonce: nonceOf(signed) });
    } else if (s.held && s.held.storedPending !== s.pending.id) {
      // a payment this process signed that the store does not hold: recorded for the fleet (re-sending it is safe either way)
      await this.#storePending(s.pending);
    }
    return deliver(ctx, send, s.pending, listener);
  }

  async #checkExplicitAmount(policy: PaymentPolicy, amountUsd: number, listener: PaymentEventListener | undefined): Promise<void> {
    if (amountUsd > policy.maxPerTopUpUsd) {
      const err = new PaymentPolicyError(
        `payment refused by policy (maxPerTopUp): $${amountUsd} is over the $${policy.maxPerTopUpUsd} cap per top-up`,
        {
          rule: "maxPerTopUp",
        },
      );
      await this.ctx.emit(listener, "payment.refused", undefined, { rule: err.rule, reason: err.message, amountUsd });
      throw err;
    }
  }
}
