/**
 * The emulator's long-running jobs (video, asynchronous audio), over the one ledger: a job is charged its quote
 * when it is queued (the charge's `requestId` is the queue id, as the live ledger's ids "link back to the call"),
 * runs for a configurable time (`jobs.processingMs`), then either has its media or fails. A failure (the
 * `jobs.failures` knob, or `[[emu:fail]]` / `[[emu:fail=STATUS]]` in the prompt) writes a `REFUND` row the moment
 * it happens (a timer, and on every look) and is answered by retrieve with its error. Media is made when first
 * delivered, kept until delivered with `delete_media_on_completion`, completed, or `jobs.retentionMs` has passed.
 */
import { randomUUID } from "node:crypto";
import type { MediaModel } from "../models/catalog.js";
import { EmulatorHttpError, type Account, type Caller, type EmulatorContext, type JobEmulatorOptions } from "../types.js";

export type JobKind = "video" | "audio";

/** how often a running job looks at the emulator's clock (an injected one jumps; Date.now does not) */
const JOB_CLOCK_CHECK_MS = 50;

export const DEFAULT_PROCESSING_MS: Readonly<Record<JobKind, number>> = { video: 2_000, audio: 1_000 };

export interface EmulatedJob {
  id: string;
  kind: JobKind;
  model: MediaModel;
  account: Account;
  queuedAt: number;
  durationMs: number;
  quoteUsd: number;
  /** what the job fails with when its time is up (refunded then) */
  failure?: { status: number; body: Record<string, unknown> };
  refunded: boolean;
  /** makes the media, once */
  render: () => { bytes: Buffer; contentType: string; headers?: Record<string, string> };
  media?: { bytes: Buffer; contentType: string; headers?: Record<string, string> };
  deleted: boolean;
  /** privately hosted models: the token of the download URL */
  downloadToken?: string;
}

const FAILURE_BODIES: Record<number, (kind: JobKind) => Record<string, unknown>> = {
  400: (kind) => ({ error: `The ${kind} provider rejected the request's parameters; the charge was refunded.` }),
  422: () => ({
    error: "Your prompt violates the content policy of the provider; the charge was refunded.",
    suggested_prompt: "A calm landscape at dawn",
  }),
  500: (kind) => ({ error: `Inference failed: the emulated ${kind} provider could not finish the job; the charge was refunded.` }),
};

/** The options in force, checked (a ConfigurationError names the bad one at start). */
export function jobOptions(
  options: JobEmulatorOptions | undefined,
): Required<Pick<JobEmulatorOptions, "retentionMs">> & JobEmulatorOptions {
  const o = options ?? {};
  const ms = o.processingMs;
  const values = typeof ms === "object" ? Object.values(ms) : ms === undefined ? [] : [ms];
  for (const v of values)
    if (!(typeof v === "number" && Number.isFinite(v) && v >= 0))
      throw new RangeError(`jobs.processingMs must be non-negative numbers of ms (got ${String(v)})`);
  const f = o.failures;
  if (f?.status !== undefined && !(f.status in FAILURE_BODIES))
    throw new RangeError(`jobs.failures.status must be one of ${Object.keys(FAILURE_BODIES).join(", ")}`);
  if (f?.rate !== undefined && !(f.rate >= 0 && f.rate <= 1)) throw new RangeError("jobs.failures.rate must be within 0..1");
  return { ...o, retentionMs: o.retentionMs ?? 24 * 3_600_000 };
}

export class JobStore {
  readonly #jobs = new Map<string, EmulatedJob>();
  readonly #byToken = new Map<string, EmulatedJob>();
  #queued = 0;

  constructor(readonly ctx: EmulatorContext) {}

  get #options() {
    return jobOptions(this.ctx.options.jobs);
  }

  /** Queues a job (the caller has charged nothing yet): charges the quote under the queue id, schedules its end. */
  queue(args: {
    kind: JobKind;
    model: MediaModel;
    account: Account;
    quoteUsd: number;
    prompt: string;
    render: EmulatedJob["render"];
  }): EmulatedJob {
    const o = this.#options;
    const id = randomUUID();
    const ms = typeof o.processingMs === "object" ? o.processingMs[args.kind] : o.processingMs;
    const durationMs = ms ?? DEFAULT_PROCESSING_MS[args.kind];
    const directive = /\[\[emu:fail(?:=(\d{3}))?\]\]/.exec(args.prompt);
    const nth = this.#queued++;
    const f = o.failures;
    const fails = directive !== null || (f?.first !== undefined && nth < f.first) || (f?.rate !== undefined && Math.random() < f.rate);
    const status = directive?.[1] ? Number(directive[1]) : (f?.status ?? 500);
    const job: EmulatedJob = {
      id,
      kind: args.kind,
      model: args.model,
      account: args.account,
      queuedAt: this.ctx.now(),
      durationMs,
      quoteUsd: args.quoteUsd,
      ...(fails ? { failure: { status, body: (FAILURE_BODIES[status] ?? FAILURE_BODIES[500]!)(args.kind) } } : {}),
      refunded: false,
      render: args.render,
      deleted: false,
      ...(args.model.video?.privateDownload ? { downloadToken: randomUUID().replace(/-/g, "") } : {}),
    };
    this.ctx.ledger.charge(args.account, args.quoteUsd, {
      kind: args.kind === "video" ? "video" : "audio-job",
      modelId: args.model.id,
      requestId: id,
    });
    this.#jobs.set(id, job);
    if (job.downloadToken) this.#byToken.set(job.downloadToken, job);
    // the failure's refund lands when the job ends, whether or not anyone looks
    this.#watch(job);
    return job;
  }

  /**
   * Advances `job` when it ends on the emulator's clock (`ctx.now()`). An injected clock may be moved on at any
   * moment, so a job still running is looked at again within JOB_CLOCK_CHECK_MS, never later than its end.
   */
  #watch(job: EmulatedJob): void {
    const left = Math.max(0, job.queuedAt + job.durationMs - this.ctx.now());
    setTimeout(
      () => {
        if (this.advance(job) === "processing") this.#watch(job);
      },
      Math.min(left + 5, JOB_CLOCK_CHECK_MS),
    ).unref();
  }

  /** Where a job is now: running, done (media ready), or failed (refunded, once). */
  advance(job: EmulatedJob): "processing" | "done" | "failed" {
    if (this.ctx.now() - job.queuedAt < job.durationMs) return "processing";
    if (job.failure) {
      if (!job.refunded) {
        job.refunded = true;
        this.ctx.ledger.refund(job.account, job.id);
      }
      return "failed";
    }
    return "done";
  }

  /** The caller's job `id` of `kind` and model (the live answer to any other id: 400 "Request ID is invalid."). */
  /** The caller's own job of that kind and model (an anonymous caller's: one queued without an account). */
  find(id: unknown, kind: JobKind, modelId: string, caller: Caller): EmulatedJob {
    const account = caller.kind === "anonymous" ? undefined : caller.account;
    const job = typeof id === "string" ? this.#jobs.get(id) : undefined;
    if (!job || job.kind !== kind || job.account !== account || job.model.id !== modelId) {
      throw new EmulatorHttpError(400, { error: "Request ID is invalid." });
    }
    return job;
  }

  /** The media of a finished job, made once; 404 once deleted or past retention. */
  media(job: EmulatedJob): NonNullable<EmulatedJob["media"]> {
    if (job.deleted || this.ctx.now() - job.queuedAt > this.#options.retentionMs) {
      throw new EmulatorHttpError(404, { error: "Media not found: it was deleted or has expired." });
    }
    job.media ??= job.render();
    return job.media;
  }

  delete(job: EmulatedJob): void {
    job.deleted = true;
    job.media = undefined;
    if (job.downloadToken) this.#byToken.delete(job.downloadToken);
  }

  byToken(token: string): EmulatedJob | undefined {
    return this.#byToken.get(token);
  }

  /** `{status: "PROCESSING", average_execution_time, execution_duration}` (ms): the estimate is the P80, above the run. */
  processing(job: EmulatedJob): Record<string, unknown> {
    return {
      status: "PROCESSING",
      average_execution_time: Math.round(job.durationMs * 1.25) + 100,
      execution_duration: Math.max(0, this.ctx.now() - job.queuedAt),
    };
  }
}

const stores = new WeakMap<EmulatorContext, JobStore>();
export function jobStore(ctx: EmulatorContext): JobStore {
  let store = stores.get(ctx);
  if (!store) stores.set(ctx, (store = new JobStore(ctx)));
  return store;
}

/** Funds a queue may draw on: a wallet's credit (and a linked account's DIEM), an API key's USD and DIEM. */
export function fundsOf(ctx: EmulatorContext, account: Account): number {
  const linked = ctx.ledger.linkedAccount(account);
  return account.kind === "wallet" ? account.usd + (linked?.diemUsd ?? 0) : ctx.ledger.available(account);
}

/**
 * The answer to a queue whose quote is more than the caller's funds (nothing queued, nothing charged). Live: the
 * plain `{error: "Insufficient USD or Diem balance…"}` with no code, to keys and to wallets above the $0.10 floor
 * alike (a top-up is the caller's to make). Seed: `INSUFFICIENT_BALANCE` to a key, the insufficient-credit 402 to
 * a wallet.
 */
export function shortOfQuote(
  ctx: EmulatorContext,
  req: import("../types.js").EmulatorRequest,
  account: Account,
  quoteUsd: number,
): EmulatorHttpError {
  const live = ctx.options.mode !== "seed";
  if (live || account.kind === "apiKey") {
    const message = `Insufficient USD or Diem balance to complete request: this job costs $${quoteUsd}. Add credits to your account.`;
    return new EmulatorHttpError(402, live ? { error: message } : { error: message, code: "INSUFFICIENT_BALANCE" });
  }
  const r = ctx.x402.insufficientCredit402(req, ctx, account);
  return new EmulatorHttpError(r.status, r.body, r.headers);
}
