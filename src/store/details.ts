/**
 * The words of a refused reservation, shared by every store so that a refusal reads the same whichever store
 * made it (the contract tests compare them).
 */
import type { SpendCandidate, SpendScope } from "./types.js";

export const round6 = (n: number) => Math.round(n * 1e6) / 1e6;

/** `wallet` or `policy`: whose budget or pin it was. */
const owner = (scope: SpendScope) => scope.key.split(":")[0];

export function payeeDetail(candidate: SpendCandidate, pinned: string, scope: SpendScope): string {
  return `payee ${candidate.payTo} differs from ${pinned}, the payee ${owner(scope)} paid before on ${candidate.network}; list it in allowedPayees if the service really changed it`;
}

export function capDetail(candidate: SpendCandidate, spentUsd: number, scope: SpendScope): string {
  return `$${candidate.amountUsd} would bring top-ups to $${round6(spentUsd + candidate.amountUsd)} within the period, over the $${scope.capUsd} cap (${owner(scope)})`;
}

export function dryRunDetail(candidate: SpendCandidate): string {
  return `would pay $${candidate.amountUsd} on ${candidate.network} to ${candidate.payTo}`;
}
