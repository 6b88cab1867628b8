/**
 * The typed errors of long-running jobs (video, asynchronous audio): a quote the owner's limits refuse (nothing
 * queued), a job that failed after it was charged (with the refund the ledger shows), a queue answer that was
 * lost and could not be found again (never queued twice), and a run cancelled while its job was out.
 */
import { AbortError, InsufficientBalanceError, PaymentPolicyError, ServiceError, type ServiceErrorInit } from "../http/errors.js";

export type JobKind = "video" | "audio";

/** A `REFUND` row of the ledger that gave a failed job's charges back. */
export interface JobRefund {
  /** USD returned (the sum of the job's charges) */
  amountUsd: number;
  /** the ledger row's id */
  id?: string;
  /** ISO time of the row */
  createdAt?: string;
  /** where it was read: the wallet's `/x402/transactions`, or the account's `/billing/usage-history` */
  source: "x402-transactions" | "billing-usage";
}

/**
 * A job's quote refused before anything was queued: above the caller's `maxQuoteUsd`, or beyond what the wallet's
 * `PaymentPolicy` could still top up (`maxPerTopUp`, `maxPerPeriod`). Nothing was signed, queued or charged.
 */
export class QuoteRefusedError extends PaymentPolicyError {
  override name = "QuoteRefusedError";
  readonly kind: JobKind;
  readonly model: string;
  readonly quoteUsd: number;
  /** the limit the quote exceeded, in USD */
  readonly limitUsd: number;
  constructor(
    message: string,
    init: ServiceErrorInit & {
      rule: "maxQuoteUsd" | "maxPerTopUp" | "maxPerPeriod";
      kind: JobKind;
      model: string;
      quoteUsd: number;
      limitUsd: number;
    },
  ) {
    super(message, init);
    this.kind = init.kind;
    this.model = init.model;
    this.quoteUsd = init.quoteUsd;
    this.limitUsd = init.limitUsd;
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), rule: this.rule, kind: this.kind, model: this.model, quoteUsd: this.quoteUsd, limitUsd: this.limitUsd };
  }
}

/**
 * A wallet's job queue refused with the service's plain 402 ("Insufficient USD or Diem balance…", no code): the
 * wallet's credit is above the $0.10 it needs to be served but below the job's quote. Nothing was queued or charged.
 * No automatic top-up follows such a 402; `runJob` (and `generate`) top up within the policy and queue again.
 */
export class CreditBelowQuoteError extends InsufficientBalanceError {
  override name = "CreditBelowQuoteError";
  readonly kind: JobKind;
  readonly model: string;
  /** the job's quote, when known */
  readonly quoteUsd?: number;
  constructor(message: string, init: ServiceErrorInit & { kind: JobKind; model: string; quoteUsd?: number }) {
    super(message, init);
    this.kind = init.kind;
    this.model = init.model;
    this.quoteUsd = init.quoteUsd;
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), kind: this.kind, model: this.model, quoteUsd: this.quoteUsd };
  }
}

/**
 * A queued job that failed (its retrieve answered an error: a content policy, a provider failure, its media gone).
 * The service refunds a failed job's charge; `refund` is the ledger's `REFUND` row when it could be read (a
 * wallet's transactions, an admin key's usage), else undefined. `cause` is the retrieve's own typed error.
 */
export class JobFailedError extends ServiceError {
  override name = "JobFailedError";
  readonly kind: JobKind;
  readonly model: string;
  readonly queueId: string;
  readonly quoteUsd?: number;
  readonly refund?: JobRefund;
  constructor(
    message: string,
    init: ServiceErrorInit & { kind: JobKind; model: string; queueId: string; quoteUsd?: number; refund?: JobRefund },
  ) {
    super(message, init);
    this.kind = init.kind;
    this.model = init.model;
    this.queueId = init.queueId;
    this.quoteUsd = init.quoteUsd;
    this.refund = init.refund;
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), kind: this.kind, model: this.model, queueId: this.queueId, quoteUsd: this.quoteUsd, refund: this.refund };
  }
}

/**
 * The queue answer was lost (the connection broke, a gateway error, a cut body) and the job could not be found in
 * the ledger within the time allowed: no charge of this model appeared, or more than one did. It was NOT queued
 * again (that could pay twice); `candidates` are the queue ids the ledger offered, if several.
 */
export class JobOutcomeUnknownError extends ServiceError {
  override name = "JobOutcomeUnknownError";
  readonly kind: JobKind;
  readonly model: string;
  readonly candidates: string[];
  constructor(message: string, init: ServiceErrorInit & { kind: JobKind; model: string; candidates?: string[] }) {
    super(message, init);
    this.kind = init.kind;
    this.model = init.model;
    this.candidates = init.candidates ?? [];
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), kind: this.kind, model: this.model, candidates: this.candidates };
  }
}

/**
 * The run was cancelled (its signal) while its job was out. The service has no cancel: a queued job runs on and
 * stays charged; `queueId` (when it was known) lets the caller retrieve it later.
 */
export class JobCancelledError extends AbortError {
  override name = "JobCancelledError";
  readonly kind: JobKind;
  readonly model: string;
  readonly queueId?: string;
  constructor(message: string, init: ServiceErrorInit & { kind: JobKind; model: string; queueId?: string }) {
    super(message, init);
    this.kind = init.kind;
    this.model = init.model;
    this.queueId = init.queueId;
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), kind: this.kind, model: this.model, queueId: this.queueId };
  }
}
