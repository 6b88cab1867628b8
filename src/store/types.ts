/**
 * The state that must be shared by everything paying from one wallet (budgets, payee pins), behind one small
 * interface: `MemoryStore` keeps it per process (the default); a distributed store keeps it for a fleet.
 *
 * Every method is one atomic step of the store: a reservation checks the pins, checks every budget, records the
 * spend and sets the pins with nothing in between (no `await` in the memory store, one script in Redis), so two
 * concurrent first payments naming different payees can never both be signed.
 *
 * Writing your own store (a Durable Object, an HTTP Redis): docs/store.md says how each method is met by
 * `MemoryStore` and `RedisStore`, and test/store/contract-kit.ts runs the same contract cases against yours.
 * Rules every method keeps:
 * - Atomic: no other call on the same keys sees a half-done step, whichever process made it.
 * - Fail closed: a shared store that cannot answer (unreachable, an error, no answer within its timeout)
 *   rejects, best with a `StoreUnavailableError` naming the method; it never answers a guess. The payment
 *   layer then signs nothing. Errors and `toJSON()` never carry a credential of the store.
 * - Clocks: budgets and pins run on the caller's `now` (passed in); leases and TTLs of the top-up coordinator
 *   and of budgets run on the store's own clock (one clock for the whole fleet).
 * - Keep state only as long as it matters (a TTL per key): a budget's records for its longest period, pins for
 *   a long while (RedisStore: 30 days from the last payment), a pending payment past its expiry.
 * - Strings are opaque: scope keys, wallet keys, reservation ids and `data` are stored as given (they never
 *   hold a secret); a store may prefix them, never parse them.
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
  /**
   * true only for a store that lives in this process (its answers need no I/O, nor a timeout): the layers
   * then keep their in-process limiters and single flight. A store shared by processes leaves it unset.
   */
  readonly processLocal?: boolean;
  /**
   * Atomically, in one step over every scope of the request: for each candidate in order, check every pinning
   * scope's pin for the candidate's network (a scope with no pin there accepts it); the first candidate every
   * pinning scope accepts is taken. Then check every scope's budget: the USD recorded in the scope with
   * `at > now - periodMs`, plus `amountUsd`, must not exceed `capUsd` (sums rounded to 6 decimals, so ten
   * $0.1 fill a $1 cap exactly). Then record the spend `{ reservation, now, amountUsd }` in every scope and set
   * each pinning scope's missing pin for the network to the candidate's payee.
   *
   * Returns `{ ok: true, index, reservation }` (a new id, unique in the store) or `{ ok: false, rule, detail,
   * index? }`: `payee` when no candidate passes the pins (no index), `maxPerPeriod` naming the first scope
   * over its cap (index of the candidate), `dryRun` when `dryRun` was set and everything passed (nothing is
   * written, not even a pin). The `detail` words are the shared ones of `details.ts` (the contract compares
   * them). Not safe to retry blindly after a lost answer: a retry reserves again (a lost reservation costs only
   * budget until it is released or its lease ends, never money).
   */
  reserveSpend(request: SpendRequest): Promise<SpendOutcome>;
  /**
   * Undoes a reservation whose payment was never signed: its spend records in every scope, and the pins it set
   * (only where the pin is still the one it set). Unknown, already released or committed: nothing happens.
   * Idempotent: safe to retry.
   */
  releaseSpend(reservation: string): Promise<void>;
  /**
   * The payment is about to be sent: the reservation can no longer be undone (it stays spent; a later release
   * changes nothing). A store that undoes abandoned reservations after a lease (RedisStore: `leaseMs`, on its
   * clock) must reject here once that lease has passed: the client sends the signed payment only after this
   * resolves, so every payment that can reach the service is counted. Idempotent while it succeeds.
   */
  commitSpend(reservation: string): Promise<void>;
  /** USD recorded in a scope with `at > now - periodMs` (rounded to 6 decimals); 0 for an unknown scope. Read only. */
  spentUsd(scope: string, periodMs: number, now: number): Promise<number>;
  /** network -> pinned payee of a scope (`{}` when none). Read only. */
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
  /**
   * Atomically: when the wallet's lease is free or past its deadline (on the store's clock), it becomes the
   * caller's until now + `ttlMs`, under a new token larger than any token this wallet was ever given (tokens
   * only grow, even across a restart of the store: RedisStore floors them at its clock in ms). Returns the state
   * with `token` (and `resolved`: the latest ids, RedisStore and MemoryStore keep 16, whose pending payment was
   * cleared by `endTopUp`), or, while another holder's lease runs, the state without a token. The state's
   * `pending` is returned either way (the new holder re-sends or reconciles it). A lost answer may leave a lease
   * nobody holds: it lapses after `ttlMs`, so a retry is safe.
   */
  acquireTopUpLease(wallet: string, ttlMs: number): Promise<LeaseOutcome>;
  /** Atomically: extends the lease to now + `ttlMs` while it is still `token`'s and not lapsed; false otherwise (it is not taken back). */
  renewTopUpLease(wallet: string, token: number, ttlMs: number): Promise<boolean>;
  /**
   * Atomically: records a signed payment while the lease is still `token`'s and not lapsed (replacing any pending
   * one); false, nothing written, otherwise. The record outlives the lease: it is kept until `endTopUp` clears it
   * or until `expiresAt` plus a grace for clock skew (10 min) has passed. Idempotent for the same record.
   */
  putPendingPayment(wallet: string, token: number, record: PendingPaymentRecord): Promise<boolean>;
  /**
   * Atomically, whoever holds the lease (the outcome of a payment is a fact, fencing applies to writes of a
   * holder only): clears the pending payment when its id is `clearPending` (and remembers that id as resolved),
   * moves the epoch on by one when `settled`, then frees the lease when it is still `token`'s. Returns the state
   * after. Retrying a settled end would move the epoch twice: harmless (waiting processes only compare it).
   */
  endTopUp(wallet: string, token: number, end: TopUpEnd): Promise<TopUpState>;
  /** The wallet's epoch (0 when unknown), whether a lease runs now, and the pending payment. Read only. */
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
  /**
   * Atomically: reserves `amountNano` under `reservation` when spent + reserved + amount <= `limitNano` (exactly
   * the cap fits); returns `ok` and the figures after, or `ok: false` and the figures as they stand. Keeps the
   * budget `ttlMs` after this use (store's clock); a budget past its TTL starts again at zero. Not idempotent:
   * a retry after a lost answer holds twice (errs on the safe side until the TTL).
   */
  budgetReserve(key: string, request: BudgetReserveRequest): Promise<BudgetFigures & { ok: boolean }>;
  /**
   * Atomically: moves the reservation's hold off `reserved` and adds `actualNano` to `spent` (`undefined`:
   * released, nothing spent; over HTTP, where JSON has no undefined, it travels as `null`). Once per
   * reservation: an unknown or already settled one changes nothing, so a retry is safe. Returns the figures after.
   */
  budgetSettle(key: string, reservation: string, actualNano: number | undefined, ttlMs: number): Promise<BudgetFigures>;
  /** The budget's figures (zeros when unknown or expired). Read only. */
  budgetFigures(key: string): Promise<BudgetFigures>;
}
