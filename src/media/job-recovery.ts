/**
 * Finding a job again from the ledger. A queue request whose answer never arrived may have queued (and charged)
 * the job; queueing again could pay twice. The charge the queue made carries the job's id as its `requestId`
 * ("requestId / modelId link back to the call"), so the job is found as the one charge of its model, made since
 * the queue was sent, whose id this process has never seen. A wallet reads its own `/x402/transactions`; an
 * API key reads `/billing/usage-history` (an ADMIN key; an inference key cannot, and then the job is unknown).
 * The same ledger shows a failed job's `REFUND` row.
 */
import type { ServiceError } from "../http/errors.js";
import { sleep } from "../http/retry.js";
import type { ServiceApi } from "../api/request.js";
import { modelOfSku, usageHistoryPage } from "../account/billing.js";
import { JobOutcomeUnknownError, type JobKind, type JobRefund } from "./errors.js";
import { seenQueueId } from "./jobs.js";

/** ledger rows are stamped on the service's clock, which `Date` tells to the second: a margin either side */
const CLOCK_SLACK_MS = 5_000;

interface LedgerRow {
  type: "CHARGE" | "REFUND" | "OTHER";
  requestId?: string;
  model?: string;
  amountUsd: number;
  createdAt: string;
  id?: string;
}

/** The caller's recent ledger rows since `sinceMs` (service clock), newest first. */
async function recentRows(
  client: ServiceApi,
  sinceMs: number,
  model: string,
  signal?: AbortSignal,
): Promise<{ rows: LedgerRow[]; source: JobRefund["source"] }> {
  if (client.wallet) {
    const { getX402Transactions } = await import("../x402/client.js");
    const page = await getX402Transactions(client, { wallet: client.wallet, limit: 100, signal });
    const rows = page.transactions
      .filter((t) => Date.parse(t.createdAt) >= sinceMs - CLOCK_SLACK_MS)
      .map(
        (t): LedgerRow => ({
          type: t.type === "CHARGE" || t.type === "REFUND" ? t.type : "OTHER",
          requestId: t.requestId ?? undefined,
          model: t.modelId ?? undefined,
          amountUsd: t.amount,
          createdAt: t.createdAt,
          id: t.id,
        }),
      );
    return { rows, source: "x402-transactions" };
  }
  const page = await usageHistoryPage(client, { startTimestamp: new Date(sinceMs - CLOCK_SLACK_MS).toISOString(), pageSize: 1000 }, signal);
  const rows = page.rows
    .map(
      (r): LedgerRow => ({
        type: r.amount < 0 ? "CHARGE" : r.amount > 0 ? "REFUND" : "OTHER",
        requestId: r.inferenceDetails?.requestId ?? undefined,
        model: modelOfSku(r.sku, [model]),
        amountUsd: r.amount,
        createdAt: typeof r.timestamp === "number" ? new Date(r.timestamp).toISOString() : r.timestamp,
      }),
    )
    .reverse();
  return { rows, source: "billing-usage" };
}

export interface FindJobArgs {
  kind: JobKind;
  model: string;
  /** when the queue request was sent, on the service's clock (ms) */
  sinceMs: number;
  /** how long to keep looking (the charge lands when the provider accepts the job) */
  withinMs: number;
  signal?: AbortSignal;
  /** each look at the ledger */
  onLook?: (attempt: number) => void;
}

/**
 * The queue id of the job a lost answer left behind: exactly one unseen charge of `model` since `sinceMs`.
 * Undefined when none appeared within `withinMs`; `JobOutcomeUnknownError` when several did, or when the ledger
 * cannot be read (an inference key; the service unreachable).
 */
export async function findQueuedJob(client: ServiceApi, args: FindJobArgs): Promise<string | undefined> {
  const started = Date.now();
  let lastError: unknown;
  for (let attempt = 1; ; attempt++) {
    args.onLook?.(attempt);
    try {
      const { rows } = await recentRows(client, args.sinceMs, args.model, args.signal);
      const ids = new Set(
        rows
          .filter((r) => r.type === "CHARGE" && r.model === args.model && r.requestId && !seenQueueId(client.fetch, r.requestId))
          .map((r) => r.requestId!),
      );
      if (ids.size === 1) return [...ids][0]!;
      if (ids.size > 1) {
        throw new JobOutcomeUnknownError(
          `the ${args.kind} queue answer was lost and ${ids.size} unseen charges of ${args.model} appeared since: not guessing which is this job (nothing was queued again)`,
          { kind: args.kind, model: args.model, candidates: [...ids] },
        );
      }
      lastError = undefined;
    } catch (err) {
      if (err instanceof JobOutcomeUnknownError || args.signal?.aborted) throw err;
      const status = (err as ServiceError).status;
      if (status === 401 || status === 403) {
        throw new JobOutcomeUnknownError(
          `the ${args.kind} queue answer was lost and this caller cannot read its ledger to find the job (${status}: /billing needs an ADMIN key); nothing was queued again`,
          { kind: args.kind, model: args.model, cause: err, status },
        );
      }
      lastError = err;
    }
    const waited = Date.now() - started;
    if (waited >= args.withinMs) {
      if (lastError) {
        throw new JobOutcomeUnknownError(
          `the ${args.kind} queue answer was lost and the ledger could not be read to find the job; nothing was queued again`,
          {
            kind: args.kind,
            model: args.model,
            cause: lastError,
          },
        );
      }
      return undefined;
    }
    // the transactions route allows 20 reads a minute per wallet: look every few seconds, never faster
    await sleep(Math.min(args.withinMs - waited, Math.min(3_000 * attempt, 10_000)), args.signal);
  }
}

/** The REFUND row that gave `queueId`'s charges back, if the caller's ledger shows one (read errors: undefined). */
export async function findRefund(
  client: ServiceApi,
  queueId: string,
  model: string,
  sinceMs: number,
  signal?: AbortSignal,
): Promise<JobRefund | undefined> {
  try {
    const { rows, source } = await recentRows(client, sinceMs, model, signal);
    const refunds = rows.filter((r) => r.type === "REFUND" && r.requestId === queueId);
    if (refunds.length === 0) return undefined;
    const amountUsd = Math.round(refunds.reduce((s, r) => s + r.amountUsd, 0) * 1e6) / 1e6;
    return { amountUsd, ...(refunds[0]!.id ? { id: refunds[0]!.id } : {}), createdAt: refunds[0]!.createdAt, source };
  } catch {
    return undefined;
  }
}
