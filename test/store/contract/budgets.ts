/**
 * The spend-budget side of the store contract (`BudgetStore`): the same calls give the same figures, in integer
 * nano-dollars, whichever store answers.
 */
import { describe, expect, it } from "vitest";
import type { BudgetStore } from "../../../src/store/types.js";

const DAY = 24 * 60 * 60_000;

export function describeBudgetContract(name: string, make: () => BudgetStore, available = true): void {
  describe(`the budget contract: ${name}`, () => {
    it.runIf(available)("reserve fits or refuses; settle moves the hold to spent at the real amount; release frees it", async () => {
      const s = make();
      const r = (reservation: string, amountNano: number) =>
        s.budgetReserve("b", { limitNano: 1_000, amountNano, reservation, ttlMs: DAY });
      expect(await r("a", 600)).toEqual({ ok: true, spentNano: 0, reservedNano: 600 });
      expect(await r("b", 500)).toEqual({ ok: false, spentNano: 0, reservedNano: 600 }); // 600 + 500 > 1000
      expect(await r("c", 400)).toEqual({ ok: true, spentNano: 0, reservedNano: 1000 }); // exactly the cap fits
      expect(await s.budgetSettle("b", "a", 123, DAY)).toEqual({ spentNano: 123, reservedNano: 400 });
      expect(await s.budgetSettle("b", "a", 999, DAY)).toEqual({ spentNano: 123, reservedNano: 400 }); // settled once
      expect(await s.budgetSettle("b", "c", undefined, DAY)).toEqual({ spentNano: 123, reservedNano: 0 }); // released
      expect(await s.budgetFigures("b")).toEqual({ spentNano: 123, reservedNano: 0 });
      expect(await s.budgetFigures("other")).toEqual({ spentNano: 0, reservedNano: 0 });
    });

    it.runIf(available)("sums stay exact over many small settlements (integers, never floats)", async () => {
      const s = make();
      for (let i = 0; i < 1000; i++) {
        await s.budgetReserve("exact", { limitNano: 1e12, amountNano: 10_000, reservation: `r${i}`, ttlMs: DAY });
        await s.budgetSettle("exact", `r${i}`, 1_154, DAY); // $0.000001154 each
      }
      expect(await s.budgetFigures("exact")).toEqual({ spentNano: 1_154_000, reservedNano: 0 });
    });
  });
}
