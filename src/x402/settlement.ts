/**
 * Settlement: sending a signed payment to `POST /x402/top-up` and learning its outcome, at most once. The signed
 * bytes are kept until the outcome is known, and only ever re-sent unchanged (their nonce makes a re-send
 * idempotent: the service credits a signed payment at most once). What each answer means:
 * - 200: settled (also "already used" for bytes sent before: an earlier send settled and its answer was lost);
 * - `409 PAYMENT_IN_PROGRESS`: this very payment is still settling, or (live) it was already processed: after each
 *   409 the balance is read (`GET /x402/balance`, within its route's pacing), and a credit of the payment's amount
 *   over the credit before it means it landed: settled, no more re-sends. Else wait and re-send the same bytes, waits
 *   growing, for as long as the payment can still settle (its `validBefore`); never a failure meanwhile. When the
 *   credit before it is not known, the wallet's transactions say whether it landed;
 * - `504 SETTLEMENT_TIMEOUT`, another 5xx, a timeout, a reset: it may still land: the same bytes are re-sent
 *   (`maxResends`), then the wallet's transactions decide; while unknown, the payment is kept (the next top-up
 *   re-sends it, never signs a new one until it has expired and shows no settlement);
 * - 429 (the route's own limit, no headers): waited out, the same bytes re-sent;
 * - `402 SETTLEMENT_FAILED`: no funds moved: the payment is dropped and the next top-up may sign a new one
 *   (`TopUpRejectedError`). Its budget stays counted: the store commits a reservation before the payment can
 *   leave, and a committed one cannot be undone (the caps err on the safe side);
 * - `503 X402_NOT_CONFIGURED`: payments are off for now (`PaymentsUnavailableError`);
 * - a 400 with a code (`INVALID_PAYMENT`, `AMOUNT_TOO_LOW`, … in `error`) for bytes never sent before: refused,
 *   nothing moved (`TopUpRejectedError` with the code).
 */
import { PaymentFailedError, PaymentsUnavailableError, ServiceError, TopUpRejectedError } from "../http/errors.js";
import { decodeBase64Json } from "../http/headers.js";
import { readBody, type FetchLike } from "../http/fetch-stack.js";
import type { PaymentEventListener } from "./events.js";
import { nonceOf } from "./payment.js";
import { nextRouteWait, sendWaitingOut429, sleep } from "./retry-429.js";
import { routeRateLimited429, settling409 } from "../http/retry-rules.js";
import { readBalance } from "./balance.js";
import type { PendingPayment, TopUpResult } from "./types.js";
import type { PaymentContext } from "./wallet-state.js";

export const PAYMENT_RESPONSE_HEADER = "PAYMENT-RESPONSE";
/** how far before its signing (on the service's clock) a top-up may be dated and still be taken for a payment */
const RECONCILE_MARGIN_MS = 3_000;
/** the longest pause between re-sends of a payment the service says is still settling */
const MAX_SETTLING_WAIT_MS = 5_000;

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

/** The machine code of an error body: `code` (inference routes), else an upper-case `error` (top-up routes). */
export function codeOf(body: unknown): string | undefined {
  if (!body || typeof body !== "object") return undefined;
  const b = body as Record<string, unknown>;
  if (typeof b.code === "string") return b.code;
  return typeof b.error === "string" && /^[A-Z0-9_]+$/.test(b.error) ? b.error : undefined;
}

/** The pending payment's outcome is known: the store forgets it when this top-up ends. */
export function outcomeKnown(ctx: PaymentContext, pending: PendingPayment, settled: boolean): void {
  const held = ctx.state.held;
  if (!held) return;
  held.end.clearPending = pending.id;
  if (settled) held.end.settled = true;
}

/** A payment whose outcome is known to be "not settled, and it will not be": forgotten, so a new one may be signed. */
function dropped(ctx: PaymentContext, pending: PendingPayment): void {
  if (ctx.state.pending === pending) ctx.state.pending = undefined;
  outcomeKnown(ctx, pending, false);
}

/** Sends the signed payment; on an unclear outcome re-sends the same bytes, then reads the transactions. */
export async function deliver(
  ctx: PaymentContext,
  send: FetchLike,
  pending: PendingPayment,
  listener: PaymentEventListener | undefined,
): Promise<TopUpResult> {
  const maxResends = ctx.options.maxResends ?? 3;
  const resendDelayMs = ctx.options.resendDelayMs ?? 500;
  const { decision } = pending;
  let lastProblem = "";
  let sends = 0;
  /** sends with no clear answer (timeouts, 5xx): bounded by maxResends */
  let unclear = 0;
  let pause = 0;
  let settlingWait: number | undefined;
  let limitWait: number | undefined;
  /** whether a wait of `ms` still ends while the payment can settle */
  const within = (ms: number) => Date.now() + ms < pending.expiresAt;
  // A loop of its own (its rules are retry-rules.ts's): the same signed bytes, sent with the stack's retries off,
  // re-sent only while the payment can still settle, and every answer weighed against the wallet's balance.
  for (;;) {
    if (pause > 0) await sleep(pause);
    const sentBefore = pending.sent === true;
    pending.sent = true;
    sends++;
    let res: Response;
    try {
      res = await send(pending.topUpUrl, {
        method: "POST",
        headers: { accept: "application/json", "content-type": "application/json", [pending.signed.headerName]: pending.signed.header },
        body: "{}",
        service: { retry: false, throwOnError: false, timeout: ctx.options.topUpTimeoutMs ?? 60_000 },
      });
    } catch (err) {
      // timeout, reset, abuse guard: the payment may or may not have settled
      lastProblem = err instanceof ServiceError ? err.message : String((err as Error)?.message ?? err);
      if (++unclear > maxResends) break;
      pause = resendDelayMs;
      continue;
    }
    const { body } = await readBody(res);
    if (res.ok) return settled(ctx, res, body, pending, sends - 1, listener);
    const code = codeOf(body);
    const what = `HTTP ${res.status}${code ? ` ${code}` : ""}`;
    if (settling409(res.status)) {
      // "settling" or "already processed": the balance (else the transactions) tells which; landed, it is settled
      const landed = await creditedSince(ctx, send, pending);
      if (landed)
        return settled(
          ctx,
          undefined,
          landed.balanceUsd === undefined ? undefined : { data: { newBalance: landed.balanceUsd } },
          pending,
          sends - 1,
          listener,
          true,
        );
      // still settling: the same bytes again, later; never a failure while it can still land
      settlingWait = settlingWait === undefined ? Math.max(resendDelayMs, 1) : Math.min(settlingWait * 2, MAX_SETTLING_WAIT_MS);
      lastProblem = `${what}: still settling when it could no longer settle`;
      if (!within(settlingWait)) break;
      pause = settlingWait;
      continue;
    }
    if (routeRateLimited429(res.status)) {
      limitWait = nextRouteWait(limitWait);
      lastProblem = what;
      if (!within(limitWait)) break;
      pause = limitWait;
      continue;
    }
    if (res.status === 402 && code === "SETTLEMENT_FAILED") {
      // no funds moved: a new payment is safe (within the caps)
      dropped(ctx, pending);
      const reason = `top-up refused: ${what} (no funds moved; a new payment may be signed)`;
      await ctx.emit(listener, "payment.failed", decision, { reason, resends: sends - 1 });
      throw new TopUpRejectedError(reason, { status: res.status, code, body });
    }
    if (res.status === 503 && code === "X402_NOT_CONFIGURED") {
      // bytes never sent before were not taken; bytes sent before may have settled then: kept
      if (!sentBefore) dropped(ctx, pending);
      const reason = `payments are unavailable for now (${what})`;
      await ctx.emit(listener, "payment.failed", decision, { reason });
      throw new PaymentsUnavailableError(reason, { status: res.status, code, body });
    }
    if (res.status >= 500 || res.status === 408) {
      // 504 SETTLEMENT_TIMEOUT included: it may still land; the same bytes are re-sent
      lastProblem = what;
      if (++unclear > maxResends) break;
      pause = resendDelayMs;
      continue;
    }
    if (sentBefore && saysAlreadyUsed(body)) {
      // a re-send of a payment that settled on an earlier attempt (of this top-up or an earlier one) whose answer was lost
      return settled(ctx, res, body, pending, sends - 1, listener);
    }
    if (sentBefore || saysAlreadyUsed(body)) {
      // these bytes went out before, so the refusal is not the whole story: they may have settled
      lastProblem = `${what} on a re-send`;
      break;
    }
    // a definite refusal of a payment the service had never seen: it will not be settled
    dropped(ctx, pending);
    const reason = `top-up refused: ${what}`;
    await ctx.emit(listener, "payment.failed", decision, { reason });
    if (res.status === 400 && code) throw new TopUpRejectedError(reason, { status: res.status, code, body });
    throw new PaymentFailedError(reason, { status: res.status, code, body });
  }
  // unclear: the wallet's transactions tell whether it settled
  if ((await reconcile(ctx, send, pending)) === "settled") return settled(ctx, undefined, undefined, pending, sends - 1, listener, true);
  // keep `pending`: the next top-up re-sends these bytes instead of signing anew
  const reason = `top-up outcome unknown (${lastProblem}); the same signed payment will be re-sent, never re-signed, until it expires`;
  await ctx.emit(listener, "payment.failed", decision, { reason, resends: sends - 1 });
  throw new PaymentFailedError(reason);
}

/**
 * Whether a payment answered 409 was credited already: the balance is up by its amount on the credit before it (or,
 * that credit unknown, the transactions show it). Undefined when not (or when it cannot be read).
 */
async function creditedSince(ctx: PaymentContext, send: FetchLike, pending: PendingPayment): Promise<{ balanceUsd?: number } | undefined> {
  const before = pending.balanceBeforeUsd;
  if (before === undefined) return (await reconcile(ctx, send, pending)) === "settled" ? {} : undefined;
  const base = pending.topUpUrl.replace(/\/x402\/top-up$/, "");
  // the route's own 429 is waited out only while the payment could still settle
  const balance = await readBalance(ctx, send, base, Math.min(pending.expiresAt, Date.now() + MAX_SETTLING_WAIT_MS));
  if (balance && balance.balanceUsd >= before + pending.decision.amountUsd - 1e-6) return { balanceUsd: balance.balanceUsd };
  // Not up by the amount: still settling, or credited and spent at once by calls charged meanwhile (the wallet's
  // other requests in flight). The transactions tell: read as the balance alone, a spent credit kept the payment
  // "settling" until its signature expired, and every 402 of the wallet waited on it (the money model, seed 608621565)
  return (await reconcile(ctx, send, pending)) === "settled" ? { balanceUsd: balance?.balanceUsd } : undefined;
}

/** The payment settled: the epoch moves on, credit is known to be there, and the outcome is reported. */
export async function settled(
  ctx: PaymentContext,
  res: Response | undefined,
  body: unknown,
  pending: PendingPayment,
  resends: number,
  listener: PaymentEventListener | undefined,
  reconciled = false,
): Promise<TopUpResult> {
  const s = ctx.state;
  if (s.pending === pending) s.pending = undefined;
  outcomeKnown(ctx, pending, true);
  s.epoch++;
  s.creditOk = true;
  const data = ((body as { data?: Record<string, unknown> } | undefined)?.data ?? {}) as Record<string, unknown>;
  const receipt = res ? decodeBase64Json<Record<string, unknown>>(res.headers.get(PAYMENT_RESPONSE_HEADER)) : undefined;
  // what is reported as spent is what was signed: the server's figure is its claim, carried beside it
  const signedUsd = pending.decision.amountUsd;
  const credited = typeof data.amountCredited === "number" && Number.isFinite(data.amountCredited) ? data.amountCredited : undefined;
  const newBalance = typeof data.newBalance === "number" && Number.isFinite(data.newBalance) ? data.newBalance : undefined;
  if (newBalance !== undefined) s.balance.learn(newBalance);
  else s.balance.markStale(); // credit was added, by how much the service did not say
  const result: TopUpResult = {
    amountUsd: signedUsd,
    creditedUsd: credited,
    newBalanceUsd: newBalance,
    transaction: typeof receipt?.transaction === "string" ? receipt.transaction : undefined,
    network: typeof receipt?.network === "string" ? receipt.network : pending.decision.network,
    payer: typeof receipt?.payer === "string" ? receipt.payer : ctx.wallet.address,
    paymentId: typeof data.paymentId === "string" ? data.paymentId : undefined,
    resends,
    ...(reconciled ? { reconciled } : {}),
  };
  await ctx.emit(listener, "payment.settled", pending.decision, {
    amountUsd: signedUsd,
    nonce: nonceOf(pending.signed),
    creditedUsd: credited,
    transaction: result.transaction,
    balanceUsd: newBalance,
    resends,
  });
  if (credited !== undefined && Math.abs(credited - signedUsd) > 1e-6) {
    await ctx.emit(listener, "payment.warning", pending.decision, {
      amountUsd: signedUsd,
      creditedUsd: credited,
      reason: `the service reports $${credited} credited for a payment of $${signedUsd}`,
    });
  }
  return result;
}

/**
 * Looks for a pending payment's settlement in the wallet's transactions: a top-up of the signed amount made
 * after it was signed. "unknown" when the service cannot be read.
 */
export async function reconcile(ctx: PaymentContext, send: FetchLike, pending: PendingPayment): Promise<"settled" | "absent" | "unknown"> {
  const base = pending.topUpUrl.replace(/\/x402\/top-up$/, "");
  const timeoutMs = ctx.options.topUpTimeoutMs ?? 60_000;
  try {
    const res = await sendWaitingOut429(
      send,
      `${base}/x402/transactions/${ctx.wallet.address}?limit=50`,
      {
        method: "GET",
        headers: { accept: "application/json" },
        signal: AbortSignal.timeout(timeoutMs),
        service: { retry: false, throwOnError: false },
      },
      Date.now() + timeoutMs,
    );
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
      return (
        tx.type === "TOP_UP" && typeof tx.amount === "number" && Math.abs(tx.amount - pending.decision.amountUsd) < 1e-6 && at >= since
      );
    });
    return hit ? "settled" : "absent";
  } catch {
    return "unknown";
  }
}
