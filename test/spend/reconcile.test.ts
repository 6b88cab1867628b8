/**
 * `reconcileLog` over ledger pages as `/x402/transactions` gives them (a pure function of its records and the
 * rows it reads): a request's several CHARGE rows (the model and a web search add-on) are one charge; a charge
 * that met an empty balance collected what was left and is told apart from an amount that differs.
 */
import { describe, expect, it } from "vitest";
import { reconcileLog, type LedgerReader } from "../../src/spend/reconcile.js";
import type { ChargeRecord } from "../../src/spend/receipts.js";

const at = new Date().toISOString();
const charge = (requestId: string, costUsd: number): ChargeRecord => ({
  type: "charge",
  at,
  requestId,
  path: "/api/v1/chat/completions",
  kind: "chat",
  costUsd,
  source: "reported",
});
type Row = Awaited<ReturnType<LedgerReader["getX402Transactions"]>>["transactions"][number];
const ledger = (rows: Row[]): LedgerReader => ({
  getX402Transactions: async () => ({ transactions: rows, pagination: { hasMore: false } }),
});
const row = (requestId: string, amount: number, balanceAfter: number): Row => ({
  type: "CHARGE",
  amount,
  balanceAfter,
  createdAt: at,
  requestId,
  modelId: "emu-m",
});

describe("reconcileLog", () => {
  it("sums a request's CHARGE rows (the model and its web search) before comparing", async () => {
    const report = await reconcileLog(
      [charge("req-search", 0.011)],
      Date.now(),
      ledger([row("req-search", -0.001, 4.989), row("req-search", -0.01, 4.979)]),
    );
    expect(report).toMatchObject({ ok: true, amountMismatches: [], collectedWhatWasLeft: [], unseenCharges: [], missingFromLedger: [] });
    expect(report.ledger.chargedUsd).toBeCloseTo(0.011, 9);
  });

  it("a charge that emptied the balance collected what was left: told apart, not a difference", async () => {
    const report = await reconcileLog(
      [charge("req-drained", 0.002), charge("req-off", 0.002)],
      Date.now(),
      ledger([row("req-drained", -0.0012, 0), row("req-off", -0.0012, 3.5)]),
    );
    expect(report.collectedWhatWasLeft).toEqual([{ requestId: "req-drained", ledgerUsd: 0.0012, runUsd: 0.002 }]);
    // the same shortfall with credit left is a real difference
    expect(report.amountMismatches).toEqual([{ requestId: "req-off", ledgerUsd: 0.0012, runUsd: 0.002 }]);
    expect(report.ok).toBe(false);
    const drainedOnly = await reconcileLog([charge("req-drained", 0.002)], Date.now(), ledger([row("req-drained", -0.0012, 0)]));
    expect(drainedOnly.ok).toBe(true);
  });
});
