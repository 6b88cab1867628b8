/**
 * A run's receipts against the service's ledger. The ledger (`GET /x402/transactions/{wallet}`, newest first,
 * paged) has one or more `CHARGE` rows per request (the model, and add-ons such as web search, under one
 * `requestId`), `REFUND` rows that give a failed job's charges back, and a `TOP_UP` row per payment. Charges are
 * summed per request on both sides and compared; top-ups are paired by amount. A charge never takes the balance
 * below 0: one that met an empty balance collects what was left, less than the answer's cost, and is told apart.
 */
import type { ChargeRecord, PaymentRecord, SpendRecord } from "./receipts.js";

/** What `reconcile` needs of a client: the wallet's ledger, a page at a time (`ServiceClient` has it). */
export interface LedgerReader {
  getX402Transactions(options: { limit?: number; offset?: number; signal?: AbortSignal }): Promise<{
    transactions: {
      amount: number;
      type: string;
      createdAt: string;
      balanceAfter?: number;
      requestId?: string | null;
      modelId?: string | null;
    }[];
    pagination: { hasMore: boolean };
  }>;
}

export interface LedgerCharge {
  requestId: string;
  usd: number;
  modelIds: string[];
  createdAt: string;
}

export interface Reconciliation {
  /** true when nothing differs */
  ok: boolean;
  /** the service charged these requests, and the run never saw them */
  unseenCharges: LedgerCharge[];
  /** the run saw these charges, and the ledger has none */
  missingFromLedger: ChargeRecord[];
  /** both have the request, with amounts more than a millionth of a dollar apart (`runUsd` undefined: the run never learned it) */
  amountMismatches: { requestId: string; ledgerUsd: number; runUsd?: number }[];
  /**
   * the balance ran out on these requests: the service collected what was left (`ledgerUsd`), less than the answer's
   * cost (`runUsd`); the ledger is what was paid. Not a difference: `ok` stays true
   */
  collectedWhatWasLeft: { requestId: string; ledgerUsd: number; runUsd: number }[];
  /** top-ups in the ledger the run did not pay */
  unseenTopUps: { usd: number; createdAt: string }[];
  /** payments the run made that the ledger does not show */
  missingTopUps: PaymentRecord[];
  ledger: { chargedUsd: number; refundedUsd: number; toppedUpUsd: number; rows: number };
  run: { chargedUsd: number; paidUsd: number; charges: number; payments: number };
}

const TOLERANCE_USD = 1e-6;
const nano = (usd: number) => Math.round(usd * 1e9);

export async function reconcileLog(
  records: readonly SpendRecord[],
  startedAt: number,
  client: LedgerReader,
  options: { marginMs?: number; signal?: AbortSignal } = {},
): Promise<Reconciliation> {
  const from = startedAt - (options.marginMs ?? 5_000);
  // every page back to the run's start (the ledger is newest first)
  const rows: Awaited<ReturnType<LedgerReader["getX402Transactions"]>>["transactions"] = [];
  for (let offset = 0; ; ) {
    const page = await client.getX402Transactions({ limit: 100, offset, signal: options.signal });
    rows.push(...page.transactions);
    offset += page.transactions.length;
    const oldest = page.transactions.at(-1);
    if (!page.pagination.hasMore || page.transactions.length === 0 || (oldest && Date.parse(oldest.createdAt) < from)) break;
  }
  const inRun = rows.filter((r) => Date.parse(r.createdAt) >= from);

  // the ledger's charges per request (refunds taken off)
  const ledger = new Map<string, { nano: number; modelIds: Set<string>; createdAt: string; drained: boolean }>();
  let chargedNano = 0;
  let refundedNano = 0;
  let toppedUpNano = 0;
  const topUps: { usd: number; createdAt: string }[] = [];
  for (const r of inRun) {
    if (r.type === "TOP_UP") {
      toppedUpNano += nano(r.amount);
      topUps.push({ usd: r.amount, createdAt: r.createdAt });
      continue;
    }
    if (r.type !== "CHARGE" && r.type !== "REFUND") continue;
    const id = r.requestId ?? `(no request id) ${r.createdAt}`;
    const entry = ledger.get(id) ?? { nano: 0, modelIds: new Set<string>(), createdAt: r.createdAt, drained: false };
    // a CHARGE row is negative, a REFUND positive: what the request cost is minus their sum
    entry.nano -= nano(r.amount);
    if (r.type === "CHARGE" && r.balanceAfter !== undefined && Math.abs(r.balanceAfter) <= TOLERANCE_USD) entry.drained = true;
    if (r.type === "CHARGE") chargedNano -= nano(r.amount);
    else refundedNano += nano(r.amount);
    if (r.modelId) entry.modelIds.add(r.modelId);
    ledger.set(id, entry);
  }

  // the run's charges per request
  const charges = records.filter((r): r is ChargeRecord => r.type === "charge");
  const run = new Map<string, { nano?: number; records: ChargeRecord[] }>();
  const noId: ChargeRecord[] = [];
  for (const c of charges) {
    if (!c.requestId) {
      noId.push(c);
      continue;
    }
    const entry = run.get(c.requestId) ?? { nano: 0, records: [] };
    entry.records.push(c);
    entry.nano = c.costUsd === undefined || entry.nano === undefined ? undefined : entry.nano + nano(c.costUsd + (c.costDiem ?? 0));
    run.set(c.requestId, entry);
  }

  const unseenCharges: LedgerCharge[] = [];
  const amountMismatches: Reconciliation["amountMismatches"] = [];
  const collectedWhatWasLeft: Reconciliation["collectedWhatWasLeft"] = [];
  for (const [requestId, l] of ledger) {
    const mine = run.get(requestId);
    if (!mine) {
      // a charge the run saw without an id (a route that names none) pairs with an equal ledger charge
      const i = noId.findIndex(
        (c) => c.costUsd !== undefined && Math.abs(nano(c.costUsd + (c.costDiem ?? 0)) - l.nano) <= nano(TOLERANCE_USD),
      );
      if (i >= 0) noId.splice(i, 1);
      else unseenCharges.push({ requestId, usd: l.nano / 1e9, modelIds: [...l.modelIds], createdAt: l.createdAt });
      continue;
    }
    if (mine.nano !== undefined && l.drained && l.nano < mine.nano) {
      collectedWhatWasLeft.push({ requestId, ledgerUsd: l.nano / 1e9, runUsd: mine.nano / 1e9 });
    } else if (mine.nano === undefined || Math.abs(mine.nano - l.nano) > nano(TOLERANCE_USD)) {
      amountMismatches.push({ requestId, ledgerUsd: l.nano / 1e9, runUsd: mine.nano === undefined ? undefined : mine.nano / 1e9 });
    }
  }
  const missingFromLedger = [
    ...[...run]
      .filter(([id, r]) => !ledger.has(id) && (r.nano === undefined || r.nano > nano(TOLERANCE_USD)))
      .flatMap(([, r]) => r.records),
    ...noId.filter((c) => c.costUsd === undefined || c.costUsd + (c.costDiem ?? 0) > TOLERANCE_USD),
  ];

  // top-ups: each payment of the run takes one ledger top-up of its amount (credited, else signed)
  const payments = records.filter((r): r is PaymentRecord => r.type === "payment");
  const unpaired = [...topUps];
  const missingTopUps: PaymentRecord[] = [];
  for (const p of payments) {
    const amount = p.creditedUsd ?? p.amountUsd;
    const i = unpaired.findIndex((t) => Math.abs(t.usd - amount) <= TOLERANCE_USD);
    if (i >= 0) unpaired.splice(i, 1);
    else missingTopUps.push(p);
  }

  let runNano = 0;
  for (const c of charges) runNano += nano((c.costUsd ?? 0) + (c.costDiem ?? 0));
  const paidUsd = payments.reduce((s, p) => s + p.amountUsd, 0);
  return {
    ok: unseenCharges.length + missingFromLedger.length + amountMismatches.length + unpaired.length + missingTopUps.length === 0,
    unseenCharges,
    missingFromLedger,
    amountMismatches,
    collectedWhatWasLeft,
    unseenTopUps: unpaired,
    missingTopUps,
    ledger: { chargedUsd: chargedNano / 1e9, refundedUsd: refundedNano / 1e9, toppedUpUsd: toppedUpNano / 1e9, rows: inRun.length },
    run: { chargedUsd: runNano / 1e9, paidUsd, charges: charges.length, payments: payments.length },
  };
}
