/**
 * The state that must be shared by everything paying from one wallet (budgets, payee pins), behind one small
 * interface: `MemoryStore` keeps it per process (the default); a distributed store keeps it for a fleet.
 *
 * Every method is one atomic step of the store: a reservation checks the pins, checks every budget, records the
 * spend and sets the pins with nothing in between (no `await` in the memory store, one script in Redis), so two
 * concurrent first payments naming different payees can never both be signed.
 */

/** One budget a payment draws on: a wallet's, or a policy object's. */
export interface SpendScope {
  /** e.g. `wallet:eip155:0xabc…` or `policy:<id>` */
  key: string;
  /** the rolling cap of this scope, in USD */
  capUsd: number;
  /** the rolling period in ms */
  periodMs: number;
  /** check and set this scope's payee pin (trust on first use, one payee per network) */
  pin: boolean;
}

/** A payment the policy allows, before pins and budgets. */
export interface SpendCandidate {
  network: string;
  /** normalized payee (EVM addresses lower-case) */
  payTo: string;
  amountUsd: number;
}

export interface SpendRequest {
  scopes: SpendScope[];
  /** in order of preference: the first whose payee every pinning scope accepts is taken */
  candidates: SpendCandidate[];
  /** ms since epoch */
  now: number;
  /** check everything, reserve nothing */
  dryRun?: boolean;
}

export type SpendOutcome =
  | { ok: true; index: number; reservation: string }
  | { ok: false; rule: "payee" | "maxPerPeriod" | "dryRun"; detail: string; index?: number };

export interface PaymentStore {
  /** Atomically: pins -> budgets -> record the spend in every scope and set missing pins. */
  reserveSpend(request: SpendRequest): Promise<SpendOutcome>;
  /** Undoes a reservation whose payment was never signed: its spend records, and the pins it set. */
  releaseSpend(reservation: string): Promise<void>;
  /** The payment was signed: the reservation can no longer be undone (it stays spent). */
  commitSpend(reservation: string): Promise<void>;
  /** USD recorded in a scope within the period ending now. */
  spentUsd(scope: string, periodMs: number, now: number): Promise<number>;
  /** network -> pinned payee of a scope */
  pins(scope: string): Promise<Record<string, string>>;
}
