/**
 * One long-running job from price to bytes, as a wallet-paid agent must run it:
 *
 *   quote -> check the quote (the caller's `maxQuoteUsd`; a wallet's policy caps, topping up first when its credit
 *   is short) -> queue ONCE (a wallet's plain 402, its credit spent since it was read: top up within the policy and
 *   queue once more; that 402 queued nothing) -> (answer lost: find the job in the ledger, never queue again) -> poll with backoff,
 *   within the route's rate limit, reporting progress -> the media (deleted from the service as it is delivered)
 *
 * A job that fails after it was charged is a `JobFailedError` carrying the ledger's `REFUND` row; a cancelled run
 * is a `JobCancelledError` carrying the queue id (the service has no cancel: the job runs on, charged).
 */
import { awaitShared } from "../http/shared-wait.js";
import {
  NetworkError,
  ResponseFormatError,
  ServerError,
  ServiceError,
  TimeoutError,
  RateLimitError,
  abortErrorOf,
} from "../http/errors.js";
import { stackContext } from "../http/context.js";
import { responseHeaders } from "../http/fetch-stack.js";
import { readResponseBytes } from "../http/body.js";
import { assertPublicHttpUrl } from "../tools/url-guard.js";
import { sleep } from "../http/retry.js";
import type { ServiceResponseHeaders } from "../http/headers.js";
import type { ServiceApi } from "../api/request.js";
import {
  CreditBelowQuoteError,
  JobCancelledError,
  JobFailedError,
  JobOutcomeUnknownError,
  QuoteRefusedError,
  type JobKind,
  type JobRefund,
} from "./errors.js";
import {
  completeJob,
  jobBody,
  queueJob,
  quoteJob,
  rememberQueueId,
  retrieveJob,
  type AudioJobParameters,
  type QueuedJob,
  type VideoJobParameters,
} from "./jobs.js";
import { findQueuedJob, findRefund } from "./job-recovery.js";
import { runSpend } from "../spend/call-options.js";

/**
 * The shortest wait between two polls of a kind's retrieve route, from its published rate limit: audio's
 * retrieve takes 120 a minute per user; video's is not published, and its requests count against the video
 * type's 40 a minute (spec part 8), so 1.5 s.
 */
export const POLL_FLOOR_MS: Readonly<Record<JobKind, number>> = { video: 1_500, audio: 500 };

/** Poll answers that say nothing about the job (a rate limit, a gateway, a busy queue): polled again, up to a point. */
const TRANSIENT_POLL_STATUSES = new Set([429, 502, 503, 504]);
const MAX_TRANSIENT_POLLS = 5;

export interface JobProgress {
  kind: JobKind;
  model: string;
  phase: "quoted" | "queued" | "recovering" | "recovered" | "processing" | "completed" | "failed";
  quoteUsd?: number;
  queueId?: string;
  /** ms since the queue request was sent */
  elapsedMs: number;
  /** the service's own figures of the last poll: time since queued, and its P80 estimate of the whole run (ms) */
  executionDurationMs?: number;
  averageExecutionTimeMs?: number;
  /** 0–0.99 while processing (the service's elapsed over its estimate), 1 when completed */
  fraction?: number;
  polls: number;
}

export interface RunJobOptions {
  signal?: AbortSignal;
  /** each step: quoted, queued (or recovering / recovered), every poll, completed or failed */
  onProgress?: (progress: JobProgress) => void | Promise<void>;
  /** refuse (QuoteRefusedError, nothing queued) a quote above this many USD */
  maxQuoteUsd?: number;
  /** the first wait after queueing and the longest between polls, in ms (never under the route's floor) */
  pollIntervalMs?: { initial?: number; max?: number };
  /** how long a lost queue answer is looked for in the ledger (default 60 s) */
  recoverWithinMs?: number;
  /** give up waiting after this long (default 30 min): a JobCancelledError with the queue id */
  timeoutMs?: number;
  /** keep the media stored on the service after it is delivered (default: deleted on delivery) */
  keepMedia?: boolean;
}

export interface JobResult {
  kind: JobKind;
  model: string;
  queueId: string;
  quoteUsd: number;
  bytes: Uint8Array;
  /** the media's content type as the service sent it (`video/mp4`, `audio/wav`, …) */
  contentType: string;
  polls: number;
  elapsedMs: number;
  /** true when the queue answer was lost and the job was found again in the ledger */
  recovered: boolean;
  headers: ServiceResponseHeaders;
}

/** An error after which the queue request may have reached the service (no answer, a gateway's, a cut body). */
function answerLost(err: unknown): boolean {
  return err instanceof NetworkError || err instanceof TimeoutError || err instanceof ResponseFormatError || err instanceof ServerError;
}

/** The error refusing a job's quote under one of the caller's rules (nothing was queued). */
function quoteRefusal(kind: JobKind, model: string, quoteUsd: number) {
  return (rule: "maxQuoteUsd" | "maxPerTopUp" | "maxPerPeriod", limitUsd: number, why: string) =>
    new QuoteRefusedError(`the ${kind} job costs $${quoteUsd} (quote), ${why}: nothing was queued`, {
      rule,
      kind,
      model,
      quoteUsd,
      limitUsd,
    });
}

/**
 * The quote against the caller's limit and the wallet's payment policy (before anything is queued). A wallet whose
 * credit is short of the quote is topped up first, within its caps: the live service answers a queue over the
 * wallet's credit (but above its $0.10 floor) with a plain 402 that no automatic top-up follows.
 */
async function checkQuote(client: ServiceApi, kind: JobKind, model: string, quoteUsd: number, options: RunJobOptions): Promise<void> {
  const refuse = quoteRefusal(kind, model, quoteUsd);
  if (options.maxQuoteUsd !== undefined && quoteUsd > options.maxQuoteUsd)
    throw refuse("maxQuoteUsd", options.maxQuoteUsd, `over the limit of $${options.maxQuoteUsd} per job`);
  // The spend budgets in play (the stack's, the run's) must fit the quote before any top-up for it: each holds
  // the quote for real as the queue request leaves (the spend layer), this only keeps money from moving first.
  for (const budget of new Set([client.fetch.budget, ...(runSpend()?.budgets ?? [])])) {
    if (budget) await budget.check(quoteUsd, `the ${kind} job (${model})`);
  }
  await topUpForQuote(client, kind, model, quoteUsd, options.signal);
}

/**
 * A wallet whose credit is short of a quote is topped up, within its policy's caps (QuoteRefusedError when they do
 * not allow it), by what is missing (at least the policy's amount). Nothing happens for a key, or when the credit
 * cannot be read. True when a top-up was made.
 */
async function topUpForQuote(client: ServiceApi, kind: JobKind, model: string, quoteUsd: number, signal?: AbortSignal): Promise<boolean> {
  const refuse = quoteRefusal(kind, model, quoteUsd);
  const controller = await client.fetch.paymentController();
  if (!controller || !client.wallet) return false;
  const balance = await awaitShared(controller.currentBalanceUsd(), signal);
  if (balance === undefined || quoteUsd <= balance) return false;
  const policy = controller.policy;
  const amount = Math.max(policy.amountUsd ?? 5, Math.ceil((quoteUsd - balance) * 100) / 100);
  if (amount > policy.maxPerTopUpUsd)
    throw refuse(
      "maxPerTopUp",
      balance + policy.maxPerTopUpUsd,
      `more than the wallet's credit ($${balance}) and one top-up (at most $${policy.maxPerTopUpUsd}) can cover`,
    );
  const spent = await policy.spentUsd({ address: client.wallet.address }, controller.store);
  const room = Math.max(0, policy.maxPerPeriodUsd - spent);
  if (amount > room)
    throw refuse(
      "maxPerPeriod",
      balance + room,
      `more than the wallet's credit ($${balance}) and what its policy may still top up this period ($${room}) can cover`,
    );
  await controller.explicitTopUp(client.fetch, client.fetch.url("/x402/top-up"), amount, undefined, signal);
  return true;
}

/** The next wait between polls: growing from `initial` to `max`, nearer the service's own estimate, never under the floor. */
function nextDelay(polls: number, floor: number, initial: number, max: number, remainingEstimateMs: number | undefined): number {
  const backoff = Math.min(max, initial * 1.5 ** polls);
  const target = remainingEstimateMs !== undefined && remainingEstimateMs > 0 ? Math.min(backoff, remainingEstimateMs) : backoff;
  return Math.max(floor, Math.round(target));
}

/** Runs one job (see the module's comment). `parameters` are the kind's queue parameters. */
export async function runJob(
  client: ServiceApi,
  kind: JobKind,
  parameters: VideoJobParameters | AudioJobParameters,
  options: RunJobOptions = {},
): Promise<JobResult> {
  jobBody(kind, parameters); // a ValidationError now, before the quote
  const model = parameters.model;
  const signal = options.signal;
  const floor = POLL_FLOOR_MS[kind];
  const initial = Math.max(floor, options.pollIntervalMs?.initial ?? floor * 2);
  const max = Math.max(initial, options.pollIntervalMs?.max ?? (kind === "video" ? 10_000 : 5_000));
  const deadline = Date.now() + (options.timeoutMs ?? 30 * 60_000);
  let queueId: string | undefined;
  let quoteUsd = 0;
  let polls = 0;
  let sentAt = Date.now();
  const progress = async (p: Omit<JobProgress, "kind" | "model" | "elapsedMs" | "polls" | "quoteUsd" | "queueId">) => {
    try {
      await options.onProgress?.({ kind, model, quoteUsd, ...(queueId ? { queueId } : {}), elapsedMs: Date.now() - sentAt, polls, ...p });
    } catch {
      // an observer's failure does not change the job
    }
  };
  const cancelled = (err: unknown, why = "the run was cancelled") =>
    new JobCancelledError(
      `${why} while its ${kind} job was out${queueId ? ` (queue id ${queueId}: the job runs on, charged; retrieve it later)` : ""}`,
      {
        kind,
        model,
        queueId,
        cause: err,
      },
    );
  const guard = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (err) {
      if (signal?.aborted) throw cancelled(abortErrorOf(signal.reason));
      throw err;
    }
  };

  // 1. price, and the owner's limits on it
  quoteUsd = (await guard(() => quoteJob(client, kind, parameters, { signal }))).quoteUsd;
  await progress({ phase: "quoted" });
  await guard(() => checkQuote(client, kind, model, quoteUsd, options));

  // 2. queue once (a 429 queued nothing: wait and ask again)
  let queued: QueuedJob | undefined;
  let recovered = false;
  let toppedUpFor402 = false;
  sentAt = Date.now();
  const sentAtService = stackContext(client.fetch).clock.now(client.fetch.url("/"));
  for (let limited = 0; !queued; limited++) {
    try {
      queued = await guard(() => queueJob(client, kind, parameters, { signal, quoteUsd }));
    } catch (err) {
      if (err instanceof RateLimitError && limited < 3) {
        const wait = err.resetAt ? Math.max(0, err.resetAt.getTime() - Date.now()) : 2_000 * (limited + 1);
        await guard(() => sleep(Math.min(wait, 60_000), signal));
        continue;
      }
      // the wallet's credit was short of the quote after all (spent since it was read, or unreadable then): the
      // plain 402 queued nothing, so top up within the policy, as for a quote known short, and queue once more
      if (err instanceof CreditBelowQuoteError && !toppedUpFor402) {
        toppedUpFor402 = true;
        if (await guard(() => topUpForQuote(client, kind, model, quoteUsd, signal))) continue;
      }
      if (!answerLost(err)) throw err;
      // the answer was lost: the job may exist (and be charged). Find it in the ledger; never queue again.
      await progress({ phase: "recovering" });
      const withinMs =
        err instanceof ServerError ? Math.min(options.recoverWithinMs ?? 60_000, 5_000) : (options.recoverWithinMs ?? 60_000);
      const found = await guard(() => findQueuedJob(client, { kind, model, sinceMs: sentAtService, withinMs, signal }));
      if (!found) {
        // a service error whose ledger shows no job queued nothing: the caller may try again
        if (err instanceof ServerError) throw err;
        throw new JobOutcomeUnknownError(
          `the ${kind} queue answer was lost (${(err as Error).message}) and no charge of ${model} appeared within ${withinMs} ms; nothing was queued again`,
          { kind, model, cause: err },
        );
      }
      rememberQueueId(client.fetch, found);
      queued = { kind, model, queueId: found, headers: (err as ServiceError).headers ?? {} };
      recovered = true;
    }
  }
  queueId = queued.queueId;
  await progress({ phase: recovered ? "recovered" : "queued" });

  // 3. poll with backoff until the media comes (or the job's error)
  let remaining: number | undefined;
  let transientErrors = 0;
  for (;;) {
    const wait = nextDelay(polls, floor, initial, max, remaining);
    if (Date.now() + wait > deadline) throw cancelled(undefined, `the deadline (${options.timeoutMs ?? 1_800_000} ms) passed`);
    await guard(() => sleep(wait, signal));
    polls++;
    let status;
    try {
      // one attempt per poll: a failed job answers its error on every retrieve, so the stack's re-sends would only
      // repeat it; what is passing (a busy queue's 503, a gateway, a lost poll) waits for the next poll instead
      status = await guard(() =>
        retrieveJob(client, kind, { model, queueId: queueId!, deleteMediaOnCompletion: !options.keepMedia }, { signal, retry: false }),
      );
      transientErrors = 0;
    } catch (err) {
      if (err instanceof JobCancelledError) throw err;
      const status = (err as ServiceError).status;
      const passing =
        err instanceof NetworkError || err instanceof TimeoutError || (status !== undefined && TRANSIENT_POLL_STATUSES.has(status));
      if (passing && ++transientErrors <= MAX_TRANSIENT_POLLS) continue;
      const refund = await findRefund(client, queueId, model, sentAtService, signal);
      await progress({ phase: "failed" });
      throw new JobFailedError(
        `the ${kind} job ${queueId} failed: ${(err as Error).message}${refund ? ` (refunded $${refund.amountUsd})` : ""}`,
        {
          kind,
          model,
          queueId,
          quoteUsd,
          refund,
          cause: err,
          status: (err as ServiceError).status,
          code: (err as ServiceError).code,
          body: (err as ServiceError).body,
        },
      );
    }
    if (status.status === "PROCESSING") {
      const avg = status.averageExecutionTimeMs;
      const done = status.executionDurationMs;
      remaining = avg !== undefined && done !== undefined ? avg - done : undefined;
      const fraction = avg && done !== undefined ? Math.min(0.99, Math.max(0, done / avg)) : undefined;
      await progress({
        phase: "processing",
        executionDurationMs: done,
        averageExecutionTimeMs: avg,
        ...(fraction !== undefined ? { fraction } : {}),
      });
      continue;
    }
    let bytes = status.bytes;
    let contentType = status.contentType;
    let headers = status.headers;
    if (!bytes) {
      if (!queued.downloadUrl)
        throw new ResponseFormatError(`${kind} job ${queueId} is COMPLETED but the service sent no media and no download URL`, { headers });
      ({ bytes, contentType, headers } = await guard(() => download(client, queued!.downloadUrl!, signal)));
    }
    // retrieve deleted what it delivered (delete_media_on_completion); an audio file fetched from its URL is deleted
    // here. A video never is: the service refuses /video/complete for every queue id (retrieve asked it to delete).
    if (queued.downloadUrl && !options.keepMedia && kind !== "video")
      await completeJob(client, kind, { model, queueId }, { signal }).catch(() => false);
    await progress({ phase: "completed", fraction: 1 });
    return {
      kind,
      model,
      queueId,
      quoteUsd,
      bytes,
      contentType: contentType ?? "application/octet-stream",
      polls,
      elapsedMs: Date.now() - sentAt,
      recovered,
      headers,
    };
  }
}

/**
 * The finished file of a privately hosted model, from the queue's `download_url`: on the service's origin (through
 * the stack) or a public https host (no credentials).
 */
async function download(
  client: ServiceApi,
  url: string,
  signal?: AbortSignal,
): Promise<{ bytes: Uint8Array; contentType?: string; headers: ServiceResponseHeaders }> {
  const own = new URL(url).origin === new URL(client.baseUrl).origin;
  if (!own) assertPublicHttpUrl(url);
  const response = await client.fetch(url, { method: "GET", signal, service: { auth: own, retry: true } });
  const headers = responseHeaders(response, client.brand);
  const bytes = await readResponseBytes(response, { what: "the job's download URL", signal, headers });
  if (bytes.length === 0) throw new ServiceError("the job's download URL answered an empty body", { headers });
  return { bytes, contentType: response.headers.get("content-type")?.split(";")[0]?.trim(), headers };
}

export type { JobRefund };
