/**
 * The per-process store (the default). Each method runs start to end without an `await`, so on Node's single
 * thread it is atomic.
 */
import type {
  BudgetFigures,
  BudgetReserveRequest,
  LeaseOutcome,
  PaymentStore,
  PendingPaymentRecord,
  SpendOutcome,
  SpendRequest,
  TopUpEnd,
  TopUpState,
} from "./types.js";
import { MemoryBudgets } from "./memory-budgets.js";
import { capDetail, dryRunDetail, payeeDetail, round6 } from "./details.js";
import { MemoryLimits } from "./memory-limits.js";
import type {
  GuardGrant,
  GuardRelease,
  GuardRequest,
  PaceGrant,
  PaceObservation,
  PaceRequest,
  SlotGrant,
  SlotRequest,
} from "../http/shared-limits.js";

interface WalletTopUps {
  epoch: number;
  /** the last token handed out (tokens only grow) */
  fence: number;
  lease?: { token: number; until: number };
  pending?: PendingPaymentRecord;
  /** the latest pending payments whose outcome was reported (see LeaseOutcome.resolved) */
  resolved?: string[];
}

/** how many resolved pending ids a wallet's top-up record remembers */
export const RESOLVED_KEPT = 16;

interface ScopeState {
  records: { id: string; at: number; usd: number }[];
  pins: Map<string, string>;
  /** the longest period any caller asked about: older records can go */
  keepMs: number;
}

/** a pending payment is kept this long past its expiry (clock skew), then forgotten */
export const PENDING_GRACE_MS = 10 * 60_000;

export class MemoryStore implements PaymentStore {
  readonly #scopes = new Map<string, ScopeState>();
  readonly #reservations = new Map<string, { scopes: string[]; pins: [scope: string, network: string, payTo: string][] }>();
  #next = 1;
  /** only wallets that ever took a lease are here: as many as paid from this process */
  readonly #topUps = new Map<string, WalletTopUps>();

  #scope(key: string, periodMs = 0): ScopeState {
    let s = this.#scopes.get(key);
    if (!s) this.#scopes.set(key, (s = { records: [], pins: new Map(), keepMs: periodMs }));
    if (periodMs > s.keepMs) s.keepMs = periodMs;
    return s;
  }

  #spent(s: ScopeState, periodMs: number, now: number): number {
    const keepFrom = now - s.keepMs;
    if (s.records.length && s.records[0]!.at <= keepFrom) s.records = s.records.filter((r) => r.at > keepFrom);
    const from = now - periodMs;
    let sum = 0;
    for (const r of s.records) if (r.at > from) sum += r.usd;
    return round6(sum);
  }

  async reserveSpend(request: SpendRequest): Promise<SpendOutcome> {
    return this.reserveSpendNow(request);
  }

  /** The same, synchronously (for callers that must not yield). */
  reserveSpendNow({ scopes, candidates, now, dryRun }: SpendRequest): SpendOutcome {
    const states = scopes.map((sc) => this.#scope(sc.key, sc.periodMs));
    let index = -1;
    let detail = "";
    for (let i = 0; i < candidates.length && index < 0; i++) {
      const c = candidates[i]!;
      const clash = scopes.findIndex((sc, j) => sc.pin && states[j]!.pins.has(c.network) && states[j]!.pins.get(c.network) !== c.payTo);
      if (clash < 0) index = i;
      else detail ||= payeeDetail(c, states[clash]!.pins.get(c.network)!, scopes[clash]!);
    }
    if (index < 0) return { ok: false, rule: "payee", detail };
    const c = candidates[index]!;
    for (let j = 0; j < scopes.length; j++) {
      const spent = this.#spent(states[j]!, scopes[j]!.periodMs, now);
      if (spent + c.amountUsd > scopes[j]!.capUsd + 1e-9) {
        return { ok: false, rule: "maxPerPeriod", index, detail: capDetail(c, spent, scopes[j]!) };
      }
    }
    if (dryRun) return { ok: false, rule: "dryRun", index, detail: dryRunDetail(c) };
    const id = `r${this.#next++}`;
    const pins: [string, string, string][] = [];
    scopes.forEach((sc, j) => {
      states[j]!.records.push({ id, at: now, usd: c.amountUsd });
      if (sc.pin && !states[j]!.pins.has(c.network)) {
        states[j]!.pins.set(c.network, c.payTo);
        pins.push([sc.key, c.network, c.payTo]);
      }
    });
    this.#reservations.set(id, { scopes: scopes.map((s) => s.key), pins });
    return { ok: true, index, reservation: id };
  }

  async releaseSpend(reservation: string): Promise<void> {
    const r = this.#reservations.get(reservation);
    if (!r) return;
    this.#reservations.delete(reservation);
    for (const key of r.scopes) {
      const s = this.#scopes.get(key);
      if (s) s.records = s.records.filter((x) => x.id !== reservation);
    }
    // nothing was signed: nothing to trust yet
    for (const [key, network, payTo] of r.pins) {
      const s = this.#scopes.get(key);
      if (s?.pins.get(network) === payTo) s.pins.delete(network);
    }
  }

  async commitSpend(reservation: string): Promise<void> {
    this.#reservations.delete(reservation);
  }

  async spentUsd(scope: string, periodMs: number, now: number): Promise<number> {
    const s = this.#scopes.get(scope);
    return s ? this.#spent(s, periodMs, now) : 0;
  }

  async pins(scope: string): Promise<Record<string, string>> {
    return Object.fromEntries(this.#scopes.get(scope)?.pins ?? []);
  }

  // ---- top-up single flight (in one process the payment layer's own single flight comes first) ----

  #topUpState(w: WalletTopUps | undefined, now = Date.now()): TopUpState {
    if (w?.pending && w.pending.expiresAt + PENDING_GRACE_MS <= now) w.pending = undefined;
    return { epoch: w?.epoch ?? 0, leased: w?.lease !== undefined && w.lease.until > now, ...(w?.pending ? { pending: w.pending } : {}) };
  }

  async acquireTopUpLease(wallet: string, ttlMs: number): Promise<LeaseOutcome> {
    let w = this.#topUps.get(wallet);
    if (!w) this.#topUps.set(wallet, (w = { epoch: 0, fence: 0 }));
    const now = Date.now();
    const state = this.#topUpState(w, now);
    if (state.leased) return state;
    w.lease = { token: ++w.fence, until: now + ttlMs };
    return { ...state, leased: true, token: w.lease.token, ...(w.resolved?.length ? { resolved: [...w.resolved] } : {}) };
  }

  async renewTopUpLease(wallet: string, token: number, ttlMs: number): Promise<boolean> {
    const lease = this.#topUps.get(wallet)?.lease;
    if (lease?.token !== token || lease.until <= Date.now()) return false;
    lease.until = Date.now() + ttlMs;
    return true;
  }

  async putPendingPayment(wallet: string, token: number, record: PendingPaymentRecord): Promise<boolean> {
    const w = this.#topUps.get(wallet);
    if (!w?.lease || w.lease.token !== token || w.lease.until <= Date.now()) return false;
    w.pending = record;
    return true;
  }

  async endTopUp(wallet: string, token: number, end: TopUpEnd): Promise<TopUpState> {
    const w = this.#topUps.get(wallet);
    if (!w) return this.#topUpState(undefined);
    if (end.clearPending !== undefined && w.pending?.id === end.clearPending) {
      w.pending = undefined;
      // remembered, so that a process whose memory still holds it learns its outcome is known
      w.resolved = [...(w.resolved ?? []), end.clearPending].slice(-RESOLVED_KEPT);
    }
    if (end.settled) w.epoch++;
    if (w.lease?.token === token) w.lease = undefined;
    return this.#topUpState(w);
  }

  async topUpState(wallet: string): Promise<TopUpState> {
    return this.#topUpState(this.#topUps.get(wallet));
  }

  // ---- pacing and guard ----
  // The same operations as RedisStore's (memory-limits.ts). `processLocal`: the fetch stack keeps its own
  // in-process limiters with this store (already shared by the whole process), exactly as without a store.
  readonly processLocal = true;
  readonly #limits = new MemoryLimits();

  async acquirePace(key: string, request: PaceRequest): Promise<PaceGrant> {
    return this.#limits.acquirePaceNow(key, request);
  }

  async observePace(key: string, observation: PaceObservation): Promise<void> {
    this.#limits.observePaceNow(key, observation);
  }

  async acquireGuard(key: string, request: GuardRequest): Promise<GuardGrant> {
    return this.#limits.acquireGuardNow(key, request);
  }

  async releaseGuard(key: string, release: GuardRelease): Promise<void> {
    this.#limits.releaseGuardNow(key, release);
  }

  async acquireSlot(key: string, request: SlotRequest): Promise<SlotGrant> {
    return this.#limits.acquireSlotNow(key, request);
  }

  async renewSlot(key: string, renewal: { now: number; id: string; leaseMs: number }): Promise<boolean> {
    return this.#limits.renewSlotNow(key, renewal);
  }

  async releaseSlot(key: string, id: string): Promise<void> {
    this.#limits.releaseSlotNow(key, id);
  }

  // ---- spend budgets (memory-budgets.ts; redis-budgets.ts for a fleet) ----
  readonly #budgets = new MemoryBudgets();

  async budgetReserve(key: string, request: BudgetReserveRequest): Promise<BudgetFigures & { ok: boolean }> {
    return this.#budgets.reserve(key, request);
  }

  async budgetSettle(key: string, reservation: string, actualNano: number | undefined, ttlMs: number): Promise<BudgetFigures> {
    return this.#budgets.settle(key, reservation, actualNano, ttlMs);
  }

  async budgetFigures(key: string): Promise<BudgetFigures> {
    return this.#budgets.figures(key);
  }

  /** The budget operations, synchronously: a budget in this process settles as the answer ends, with no tick between. */
  readonly budgetsNow: MemoryBudgets = this.#budgets;
}

let processStore: MemoryStore | undefined;
/** The store every stack of this process uses unless given another. */
export function defaultStore(): MemoryStore {
  return (processStore ??= new MemoryStore());
}
