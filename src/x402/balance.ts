/**
 * The wallet's credit without `X-Balance-Remaining`: the live service documents that header but never sends it,
 * so the credit is read from `GET /x402/balance/{wallet}` (`balanceUsd`, `canConsume`, and `diemBalanceUsd` for
 * a wallet linked to an account with staking-token credit). The header is still used when a deployment sends it.
 *
 * The figure is kept per wallet in the process (every client of the wallet shares it) and read only when someone
 * asks for it and it is stale, never on the request path (a request pays nothing for it). What "stale" means: a
 * figure learned from the service (a balance read, a top-up answer's `newBalance`, the header) is fresh while
 * nothing this process knows of could have moved it, for at most BALANCE_MAX_AGE_MS (another process, or another
 * program, may spend or top up the same wallet); once a credit-bearing request of the wallet was served after it
 * (its charge moved the credit by an amount not told), or a 402 came, it is stale.
 * Reads are single flight (concurrent askers share one) and go through the stack's pacing, which keeps every
 * client of the wallet in the process within the route's 30 reads a minute (a fleet store: the fleet's); a read
 * that fails answers the last figure.
 *
 * Before a second top-up, the balance also says whether paying would help (`notCurable`): the guide's rule is to
 * check `GET /x402/balance` before topping up again.
 */
import { PaymentNotCurableError } from "../http/errors.js";
import { readBody, type FetchLike } from "../http/fetch-stack.js";
import { sendWaitingOut429 } from "./retry-429.js";
import type { PaymentContext } from "./wallet-state.js";
import { MINIMUM_BALANCE_USD, X402BalanceSchema, type X402Balance } from "./balance-figure.js";

export { BALANCE_MAX_AGE_MS, MINIMUM_BALANCE_USD, X402BalanceSchema, type X402Balance } from "./balance-figure.js";

/**
 * Reads `GET {base}/x402/balance/{wallet}` (its route's 429s waited out until `untilMs`); undefined when the answer
 * is not a balance (an error status, a body of another shape, no answer). The figure is updated from it.
 */
export function readBalance(ctx: PaymentContext, send: FetchLike, baseUrl: string, untilMs: number): Promise<X402Balance | undefined> {
  const figure = ctx.state.balance;
  figure.reading ??= (async () => {
    try {
      const timeout = ctx.options.topUpTimeoutMs ?? 60_000;
      const res = await sendWaitingOut429(
        send,
        `${baseUrl}/x402/balance/${ctx.wallet.address}`,
        { method: "GET", headers: { accept: "application/json" }, service: { retry: false, throwOnError: false, timeout } },
        untilMs,
      );
      const { body } = await readBody(res);
      const parsed = res.ok ? X402BalanceSchema.safeParse(body) : undefined;
      if (!parsed?.success) return undefined;
      const { balanceUsd, diemBalanceUsd } = parsed.data.data;
      figure.learn(balanceUsd, Date.now(), diemBalanceUsd);
      return parsed.data.data;
    } catch {
      return undefined;
    } finally {
      figure.reading = undefined;
    }
  })();
  return figure.reading;
}

/** The wallet's credit now: the figure while fresh, else read (a failed read answers the last figure, if any). */
export async function currentBalanceUsd(
  ctx: PaymentContext,
  send: FetchLike | undefined,
  baseUrl: string | undefined,
): Promise<number | undefined> {
  const figure = ctx.state.balance;
  if (figure.fresh() || !send || !baseUrl) return figure.usd;
  // asked in passing: a 429 is not waited out, the last figure does
  await readBalance(ctx, send, baseUrl, 0);
  return figure.usd;
}

/**
 * Before a second top-up: reads the balance and says why a payment would not cure the 402, if it would not. The
 * wallet's credit is already at or above the minimum (`minimumUsd`, what the 402 said, else $0.10): the 402 is
 * for another reason. Or the wallet is linked to an account whose staking-token credit (`diemBalanceUsd`) is
 * billed first: the request is billed to that account, and wallet credit does not change that. An unreadable
 * balance says nothing: the payment goes ahead, within the policy's caps.
 */
export async function notCurable(
  ctx: PaymentContext,
  send: FetchLike,
  baseUrl: string,
  minimumUsd: number | undefined,
  untilMs: number,
): Promise<PaymentNotCurableError | undefined> {
  const balance = await readBalance(ctx, send, baseUrl, untilMs);
  if (!balance) return undefined;
  const { balanceUsd, diemBalanceUsd } = balance;
  const minimum = minimumUsd ?? MINIMUM_BALANCE_USD;
  if (diemBalanceUsd !== undefined && diemBalanceUsd > 0) {
    return new PaymentNotCurableError(
      `not paying: the wallet is linked to an account whose staking-token credit ($${diemBalanceUsd}) is billed first, so a top-up would not cure this 402 ` +
        "(wait for the next epoch or fund the linked account)",
      { status: 402, reason: "linked_account", balanceUsd, diemBalanceUsd },
    );
  }
  if (balanceUsd >= minimum) {
    return new PaymentNotCurableError(
      `not paying: the wallet already has $${balanceUsd} of credit (the minimum is $${minimum}), so this 402 is not for want of credit`,
      {
        status: 402,
        reason: "credit_sufficient",
        balanceUsd,
      },
    );
  }
  return undefined;
}

/** The minimum credit a 402 names (`minimumBalanceUsd`), when it names a usable one. */
export function minimumBalanceOf(body: unknown): number | undefined {
  const v = body && typeof body === "object" ? (body as { minimumBalanceUsd?: unknown }).minimumBalanceUsd : undefined;
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? v : undefined;
}
