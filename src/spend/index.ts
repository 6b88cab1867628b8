/** Spend governance over the one fetch stack: budgets on credit spent, and receipts that reconcile with the ledger. */
export { SpendBudget, DEFAULT_FEES, type SpendBudgetOptions, type SpendFees, type BudgetReservation } from "./budget.js";
export { SpendLog, type ChargeRecord, type PaymentRecord, type SpendRecord } from "./log.js";
export type { Reconciliation, LedgerCharge, LedgerReader } from "./reconcile.js";
export type { MeteredKind } from "./estimate.js";
export { spendOf, type SpendCallOptions } from "./call-options.js";
