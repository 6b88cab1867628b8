/**
 * What one LangChain call adds to a face's own budget and log: a `budget` call option
 * (`model.invoke(x, { budget })`), a budget in the run's `configurable` (`{ configurable: { budget } }`: it reaches
 * every model and tool of an agent run, chain or graph), and every `SpendLog` among the run's callbacks. A face
 * passes what its call says on the request as `service.spend`; what the run around a request says (a graph node,
 * a chain step, a tool inside an agent) the spend layer reads itself (`runSpend`), as core's own
 * `dispatchCustomEvent` finds its run: `ensureConfig()` with no argument is the run's config.
 */
import { ensureConfig } from "@langchain/core/runnables";
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
 * The budget and logs of the run a request is made in (a graph node, a chain step, a tool inside an agent), or
 * undefined outside one or when it has none. LangChain strips `configurable` from a model's call options; the
 * run's config is here instead.
 */
export function runSpend(): { budgets?: SpendBudget[]; logs?: SpendLog[] } | undefined {
  const config = ensureConfig();
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
