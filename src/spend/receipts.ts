/** The records of a `SpendLog` (./log.ts): what a run paid and what it was charged, as plain objects. */
import type { MeteredKind } from "./estimate.js";

/** A top-up the run paid: what was signed and what the service said of it. */
export interface PaymentRecord {
  type: "payment";
  /** ISO time the record was made (the top-up settled) */
  at: string;
  /** USD signed (what left the wallet) */
  amountUsd: number;
  /** USD the service says it credited */
  creditedUsd?: number;
  payTo?: string;
  network?: string;
  asset?: string;
  /** the signed authorization's nonce (EVM) */
  nonce?: string;
  /** the settlement transaction, from `PAYMENT-RESPONSE` */
  transaction?: string;
  /** the paying wallet */
  wallet?: string;
}

/** One request the service charged for, as the run saw it. */
export interface ChargeRecord {
  type: "charge";
  at: string;
  /** the service's request id (a completion's `id`, else `X-Request-ID`, else CF-RAY) */
  requestId?: string;
  /** the route, e.g. `/api/v1/chat/completions` */
  path: string;
  kind: MeteredKind;
  model?: string;
  /**
   * USD charged: what the answer reported (`reported`), priced from `/models` (`priced`), the budget's fee estimate
   * (`estimated`), nothing for a stream that ended in an in-band error (`failed`: 0, the service never charges or
   * refunds it), or not known (`unknown`: a cut-off answer)
   */
  costUsd?: number;
  /** the staking-token part of a reported cost */
  costDiem?: number;
  source: "reported" | "priced" | "estimated" | "failed" | "unknown";
  tokens?: { input?: number; output?: number; cached?: number; reasoning?: number };
  rpcCredits?: number;
  /** an idempotent replay of a crypto RPC call: not billed (cost and credits 0; the original's record has them) */
  replayed?: true;
  /** the budgets it was charged to, by name */
  budgets?: string[];
}

export type SpendRecord = PaymentRecord | ChargeRecord;
