/**
 * Spend budgets in one process: the same semantics as the Lua scripts of `redis-budgets.ts` (the contract tests
 * run both), each method one synchronous step (no `await`), so atomic on Node's one thread.
 */
import type { BudgetFigures, BudgetReserveRequest } from "./types.js";

interface Budget {
  spent: number;
  reserved: number;
  reservations: Map<string, number>;
  expires: number;
}

export class MemoryBudgets {
  readonly #budgets = new Map<string, Budget>();

  #budget(key: string, ttlMs: number, now = Date.now()): Budget {
    let b = this.#budgets.get(key);
    if (!b || b.expires <= now) this.#budgets.set(key, (b = { spent: 0, reserved: 0, reservations: new Map(), expires: 0 }));
    b.expires = Math.max(b.expires, now + ttlMs);
    return b;
  }

  reserve(key: string, r: BudgetReserveRequest): BudgetFigures & { ok: boolean } {
    const b = this.#budget(key, r.ttlMs);
    const ok = b.spent + b.reserved + r.amountNano <= r.limitNano;
    if (ok) {
      b.reserved += r.amountNano;
      b.reservations.set(r.reservation, r.amountNano);
    }
    return { ok, spentNano: b.spent, reservedNano: b.reserved };
  }

  settle(key: string, reservation: string, actualNano: number | undefined, ttlMs: number): BudgetFigures {
    const b = this.#budget(key, ttlMs);
    const held = b.reservations.get(reservation);
    if (held !== undefined) {
      b.reservations.delete(reservation);
      b.reserved -= held;
      b.spent += actualNano ?? 0;
    }
    return { spentNano: b.spent, reservedNano: b.reserved };
  }

  figures(key: string): BudgetFigures {
    const b = this.#budgets.get(key);
    return b && b.expires > Date.now() ? { spentNano: b.spent, reservedNano: b.reserved } : { spentNano: 0, reservedNano: 0 };
  }
}
