/**
 * What one LangChain call adds to a face's own budget and log: a `budget` call option
 * (`model.invoke(x, { budget })`), a budget in the run's `configurable` (`{ configurable: { budget } }`: it reaches
 * every model and tool of an agent run), and every `SpendLog` among the run's callbacks. A face passes what its
 * call says on the request as `service.spend`; what the run around a request says (the async context of a graph
 * node or chain step: a tool inside an agent) the spend layer reads itself (`runSpend`).
 */
import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";
import { SpendBudget } from "./budget.js";
import { SpendLog } from "./log.js";

export interface SpendCallOptions {
  /** a budget for this call (one agent run can carry its own), beside the face's `budget` */
  budget?: SpendBudget;
}

/** Handlers as a LangChain run manager holds them (its inheritable ones are among them). */
interface HandlersLike {
  handlers?: readonly unknown[];
}

/** The call's budgets and logs for `service.spend`, or undefined when the call adds none (no allocation then). */
export function spendOf(
  options: { budget?: unknown; configurable?: Record<string, unknown> } | undefined,
  runManager?: HandlersLike,
): { budgets?: SpendBudget[]; logs?: SpendLog[] } | undefined {
  let budgets: SpendBudget[] | undefined;
  for (const b of [options?.budget, options?.configurable?.budget]) {
    if (b instanceof SpendBudget && !budgets?.includes(b)) (budgets ??= []).push(b);
  }
  const logs = logsAmong(runManager?.handlers);
  return budgets || logs ? { budgets, logs } : undefined;
}

/**
 * The call's options with a budget named in its own `configurable` (`model.invoke(x, { configurable: { budget } })`)
 * as its `budget`: LangChain strips `configurable` from a model's call options, and a direct call outside a run has
 * no run context to find it in. Unchanged (the same object) when there is none to move.
 */
export function withConfigurableBudget<T extends { budget?: unknown; configurable?: Record<string, unknown> }>(options: T | undefined): T | undefined {
  const budget = options?.configurable?.budget;
  return budget instanceof SpendBudget && options!.budget === undefined ? { ...options!, budget } : options;
}

/**
 * The budget and logs of the run a request is made in (LangChain's async context: a graph node, a chain step, a
 * tool inside an agent), or undefined outside one or when it has none. LangChain strips `configurable` from a
 * model's call options; the run's config is here instead.
 */
export function runSpend(): { budgets?: SpendBudget[]; logs?: SpendLog[] } | undefined {
  const config = AsyncLocalStorageProviderSingleton.getRunnableConfig() as { configurable?: Record<string, unknown>; callbacks?: unknown } | undefined;
  if (!config) return undefined;
  const budget = config.configurable?.budget;
  const callbacks = config.callbacks;
  const logs = logsAmong(Array.isArray(callbacks) ? callbacks : (callbacks as HandlersLike | undefined)?.handlers);
  return budget instanceof SpendBudget || logs ? { budgets: budget instanceof SpendBudget ? [budget] : undefined, logs } : undefined;
}

/** The SpendLogs among callback handlers, each once; undefined when there are none (no allocation then). */
function logsAmong(handlers: readonly unknown[] | undefined): SpendLog[] | undefined {
  let logs: SpendLog[] | undefined;
  for (const h of handlers ?? []) if (h instanceof SpendLog && !logs?.includes(h)) (logs ??= []).push(h);
  return logs;
}
