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

export interface PaymentStore extends TopUpCoordinator, Partial<BudgetStore> {
  /** true for a store that lives in this process (its answers need no I/O, nor a timeout) */
  readonly processLocal?: boolean;
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

// ---- top-up single flight --------------------------------------------------------------------------------

/**
 * A signed payment whose outcome is not known yet. It is kept in the store (not only in the process that signed
 * it) so that no process of the fleet signs another payment from the wallet before this one's outcome is known:
 * the next lease holder re-sends these bytes (idempotent by their nonce) or reconciles them.
 */
export interface PendingPaymentRecord {
  /** unique per signed payment */
  id: string;
  /** ms since epoch after which it can no longer settle */
  expiresAt: number;
  /** what the payment layer needs to re-send or reconcile it (opaque to the store) */
  data: string;
}

export interface TopUpState {
  /** completed top-ups of the wallet (any process); changes when one completes */
  epoch: number;
  /** a process holds the wallet's top-up lease */
  leased: boolean;
  pending?: PendingPaymentRecord;
}

export type LeaseOutcome =
  /**
   * the lease is this caller's: `token` fences every later write. `resolved`: ids of the latest pending payments
   * whose outcome a holder reported (cleared): a process still holding one in memory must not re-send it as new
   */
  | ({ token: number; resolved?: string[] } & TopUpState)
  /** another holder has it */
  | ({ token?: undefined } & TopUpState);

/** How a top-up under a lease ended. */
export interface TopUpEnd {
  /** it completed (credit was added): the epoch moves on and waiting processes retry without paying */
  settled: boolean;
  /** the pending payment whose outcome is now known (cleared when it is still the stored one) */
  clearPending?: string;
}

/**
 * Single flight of top-ups across processes: one lease per wallet, with an expiry (a process killed while
 * paying blocks the fleet for at most `ttlMs`) and a fencing token (a holder whose lease lapsed can no longer
 * write). A store without it coordinates nothing beyond the process.
 */
export interface TopUpCoordinator {
  /** Takes the wallet's lease when free or expired (a new, larger token); else reports who is there. */
  acquireTopUpLease(wallet: string, ttlMs: number): Promise<LeaseOutcome>;
  /** Extends the lease while it is still `token`'s; false when it was lost. */
  renewTopUpLease(wallet: string, token: number, ttlMs: number): Promise<boolean>;
  /** Records a signed payment under the lease; false (nothing written) when the lease is no longer `token`'s. */
  putPendingPayment(wallet: string, token: number, record: PendingPaymentRecord): Promise<boolean>;
  /** Ends a top-up: clears the named pending payment, moves the epoch on if settled, releases the lease if `token`'s. */
  endTopUp(wallet: string, token: number, end: TopUpEnd): Promise<TopUpState>;
  /** The wallet's epoch, lease and pending payment, as they are now. */
  topUpState(wallet: string): Promise<TopUpState>;
}

/**
 * Pacing windows and abuse-guard failure windows shared by a fleet (issue 12, part 3 and 4). The interface is
 * declared beside the layers that use it (`src/http/shared-limits.ts`, so that `src/http/` imports no store
 * module); `MemoryStore` and `RedisStore` implement it.
 */
export type {
  LimitStore,
  PaceRequest,
  PaceGrant,
  PaceObservation,
  PaceWindow,
  GuardRequest,
  GuardGrant,
  GuardRelease,
} from "../http/shared-limits.js";

// ---- spend budgets (credit spent, not top-ups) ------------------------------------------------------------

/** A budget's figures in nano-dollars (1e-9 USD): integers, so sums of settled costs are exact. */
export interface BudgetFigures {
  spentNano: number;
  reservedNano: number;
}

export interface BudgetReserveRequest {
  /** the budget's cap, nano-dollars */
  limitNano: number;
  /** the worst case of the request, nano-dollars */
  amountNano: number;
  /** unique per reservation */
  reservation: string;
  /** how long the budget's record is kept after its last use, ms */
  ttlMs: number;
}

/**
 * Spend budgets shared by a fleet: reserve a request's worst case against the cap, then settle it to the real
 * cost (or release it). Each method is one atomic step of the store. A reservation whose process died is never
 * settled: it stays counted at its worst case (a budget errs on the safe side).
 */
export interface BudgetStore {
  /** Reserves `amountNano` when spent + reserved + amount fits the limit; the figures after (or as they stand). */
  budgetReserve(key: string, request: BudgetReserveRequest): Promise<BudgetFigures & { ok: boolean }>;
  /** Settles a reservation at `actualNano` (undefined: released, nothing spent); unknown reservations change nothing. */
  budgetSettle(key: string, reservation: string, actualNano: number | undefined, ttlMs: number): Promise<BudgetFigures>;
  budgetFigures(key: string): Promise<BudgetFigures>;
}
