/**
 * The store contract as one call: `describeStoreContract(name, makeStore, options)` runs every case of the
 * shared-state interface (payments and pins, the top-up lease, spend budgets, pacing and guard windows, slots)
 * against a factory, so any implementation (MemoryStore, RedisStore, the HTTP store of `http-store.ts`, yours)
 * is held to the same outcomes and the same words. See docs/store.md.
 *
 * It lives with the tests, not in the package: it imports vitest, which no client entry should load, and a
 * store author copies this folder (four files, no other dependency than the package's types) into their suite.
 *
 * `makeStore` is called once per case and must give a store with fresh state (a new prefix, a new object, an
 * emptied server); cases use real time only for top-up leases (200 ms to 1 s, on the store's clock), every other
 * clock is the `now` passed: a store whose round trip is not well under 100 ms (a remote one) will see the 200 ms
 * lease cases lapse early; run it near its backend (a local emulator of it) for the contract.
 */
import type { LimitStore } from "../../src/http/shared-limits.js";
import type { BudgetStore, PaymentStore } from "../../src/store/types.js";
import { describeBudgetContract } from "./contract/budgets.js";
import { describeLimitContract, describeSlotContract } from "./contract/limits.js";
import { describePaymentContract, describeTopUpContract } from "./contract/payments.js";

export { describeBudgetContract, describeLimitContract, describePaymentContract, describeSlotContract, describeTopUpContract };

/** A store with every part of the interface (the optional ones included). */
export type FullStore = PaymentStore & BudgetStore & LimitStore;

export type ContractPart = "payments" | "topUps" | "budgets" | "limits" | "slots";
export const ALL_PARTS: readonly ContractPart[] = ["payments", "topUps", "budgets", "limits", "slots"];

export interface ContractOptions {
  /** false: every case is reported as skipped (e.g. no server here); default true */
  available?: boolean;
  /** the parts your store implements (default all: payments and lease are required of any PaymentStore) */
  parts?: readonly ContractPart[];
}

export function describeStoreContract(name: string, makeStore: () => FullStore, options: ContractOptions = {}): void {
  const available = options.available ?? true;
  const parts = new Set(options.parts ?? ALL_PARTS);
  if (parts.has("payments")) describePaymentContract(name, makeStore, available);
  if (parts.has("topUps")) describeTopUpContract(name, makeStore, available);
  if (parts.has("budgets")) describeBudgetContract(name, makeStore, available);
  if (parts.has("limits")) describeLimitContract(name, makeStore, available);
  if (parts.has("slots")) describeSlotContract(name, makeStore, available);
}
