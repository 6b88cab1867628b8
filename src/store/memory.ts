/**
 * The per-process store (the default). Each method runs start to end without an `await`, so on Node's single
 * thread it is atomic.
 */
import type { PaymentStore, SpendOutcome, SpendRequest } from "./types.js";
import { capDetail, dryRunDetail, payeeDetail, round6 } from "./details.js";

interface ScopeState {
  records: { id: string; at: number; usd: number }[];
  pins: Map<string, string>;
  /** the longest period any caller asked about: older records can go */
  keepMs: number;
}

export class MemoryStore implements PaymentStore {
  readonly #scopes = new Map<string, ScopeState>();
  readonly #reservations = new Map<string, { scopes: string[]; pins: [scope: string, network: string, payTo: string][] }>();
  #next = 1;

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
}

let processStore: MemoryStore | undefined;
/** The store every stack of this process uses unless given another. */
export function defaultStore(): MemoryStore {
  return (processStore ??= new MemoryStore());
}
