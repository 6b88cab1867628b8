/**
 * `spendLimitMiddleware`: a spend budget inside a `createAgent` loop. The transport's budget refuses a call that
 * does not fit by throwing from inside the model or tool call, which kills the run half-way through a step; this
 * middleware looks first, and lets the owner decide: end with a final message, throw, or ask a person.
 *
 * - The run's budget (`budget`, shared through its store; or `maxUsd`, one per run) is put in the run's
 *   `configurable` around each model and tool call: every face of this package draws from it, whatever model runs
 *   the agent.
 * - Before each model call the call's worst case (the spend layer's own estimate) is checked; a tool call the
 *   run's budget refused is the same signal. `onExhausted` then decides.
 * - `warnAtUsd` / `warnAtFraction`: one `spend.warning` custom event, and a system note asking the model to wrap up.
 * - `toolLimitsUsd`: a tool's own cap per run; a call that would pass it is answered by a tool message.
 * - State: `spend: { spentUsd, limitUsd, calls }` after each step.
 */
import type { AgentMiddleware, WrapModelCallHook, WrapToolCallHook } from "langchain";
import { AIMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { dispatchCustomEvent } from "@langchain/core/callbacks/dispatch/web";
import { Command, interrupt } from "@langchain/langgraph";
import { currentRunConfig } from "../runtime/run-context.js";
import { z } from "zod";
import { BudgetExceededError, ConfigurationError, ValidationError } from "../http/errors.js";
import { SpendBudget } from "../spend/budget.js";
import type { PaymentStore } from "../store/types.js";
import { SPEND_LIMIT_KEY, SPEND_WARNING_EVENT } from "./keys.js";
import { CappedBudget, modelCallWorstCaseUsd, withRunConfigurable } from "./run-budget.js";

export type SpendExhaustedBehavior = "end" | "error" | "interrupt";

export interface SpendLimitOptions {
  /** the budget every run draws from (a fleet's, through its store); or give `maxUsd` */
  budget?: SpendBudget;
  /** a fresh budget of this many USD for each run (on `store`, default this process's) */
  maxUsd?: number;
  /** where `maxUsd` budgets keep their figures (a RedisStore lets another process resume the run) */
  store?: PaymentStore;
  /** what happens when the next step does not fit (default "end") */
  onExhausted?: SpendExhaustedBehavior;
  /** warn once the budget's spent USD reach this */
  warnAtUsd?: number;
  /** or once they reach this fraction of the limit (0..1) */
  warnAtFraction?: number;
  /** tell the model to wrap up once warned (default true) */
  warnModel?: boolean;
  /** per tool, USD its calls may spend in one run: `{ generate_video: 2 }` */
  toolLimitsUsd?: Record<string, number>;
}

/** What `interrupt()` carries when the budget is spent; resume with `{ raiseToUsd }` or `false`. */
export interface SpendLimitInterrupt {
  type: "spend_limit";
  budget: string;
  spentUsd: number;
  limitUsd: number;
  neededUsd: number;
}

export type SpendLimitResume = { raiseToUsd: number } | false;

/** The custom event's payload (`spend.warning`). */
export interface SpendWarning {
  budget: string;
  spentUsd: number;
  limitUsd: number;
  warnAtUsd: number;
}

export { SPEND_LIMIT_KEY, SPEND_WARNING_EVENT };

const spendSchema = z.object({ spentUsd: z.number(), limitUsd: z.number(), calls: z.number() });
const runSchema = z.object({ id: z.string(), limitUsd: z.number(), warned: z.boolean(), start: z.number() });
type RunState = z.infer<typeof runSchema>;
/** the state the middleware adds: `spend` for the caller, `spendRun` its own bookkeeping */
const stateSchema = z.object({ spend: spendSchema.optional(), spendRun: runSchema.optional() });
export type SpendLimitMiddleware = AgentMiddleware<typeof stateSchema>;

const usd = (v: number) => (v >= 0.01 ? `$${+v.toFixed(4)}` : `$${+v.toPrecision(3)}`);
const isUsd = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;
const marker = (m: BaseMessage) => (m.additional_kwargs as Record<string, unknown> | undefined)?.[SPEND_LIMIT_KEY];
const marked = (m: BaseMessage) => marker(m) !== undefined;

function validate(o: SpendLimitOptions): void {
  if (!o || typeof o !== "object") throw new ConfigurationError("spendLimitMiddleware needs { budget } or { maxUsd }");
  if ((o.budget === undefined) === (o.maxUsd === undefined))
    throw new ConfigurationError("spendLimitMiddleware needs exactly one of budget (a SpendBudget) and maxUsd");
  if (o.budget !== undefined && !(o.budget instanceof SpendBudget))
    throw new ConfigurationError("spendLimitMiddleware.budget must be a SpendBudget");
  if (o.maxUsd !== undefined && !isUsd(o.maxUsd))
    throw new ConfigurationError("spendLimitMiddleware.maxUsd must be a non-negative number of USD");
  if (o.onExhausted !== undefined && !["end", "error", "interrupt"].includes(o.onExhausted))
    throw new ConfigurationError('spendLimitMiddleware.onExhausted must be "end", "error" or "interrupt"');
  if (o.warnAtUsd !== undefined && o.warnAtFraction !== undefined)
    throw new ConfigurationError("spendLimitMiddleware takes warnAtUsd or warnAtFraction, not both");
  if (o.warnAtUsd !== undefined && !isUsd(o.warnAtUsd))
    throw new ConfigurationError("spendLimitMiddleware.warnAtUsd must be a non-negative number of USD");
  if (o.warnAtFraction !== undefined && !(isUsd(o.warnAtFraction) && o.warnAtFraction <= 1))
    throw new ConfigurationError("spendLimitMiddleware.warnAtFraction must be between 0 and 1");
  for (const [name, limit] of Object.entries(o.toolLimitsUsd ?? {})) {
    if (!isUsd(limit)) throw new ConfigurationError(`spendLimitMiddleware.toolLimitsUsd.${name} must be a non-negative number of USD`);
  }
}

export function spendLimitMiddleware(options: SpendLimitOptions): SpendLimitMiddleware {
  validate(options);
  const onExhausted = options.onExhausted ?? "end";
  const toolLimits = new Map(Object.entries(options.toolLimitsUsd ?? {}));
  const shared = options.budget;

  /** The run's budget under its current limit (a person may have raised it). */
  const budgetOf = (run: RunState): SpendBudget => {
    if (shared) return run.limitUsd === shared.maxUsd ? shared : shared.withLimit(run.limitUsd);
    return new SpendBudget({ maxUsd: run.limitUsd, name: `agent.${run.id}`, store: options.store });
  };
  const warnAt = (limit: number) =>
    options.warnAtUsd ?? (options.warnAtFraction !== undefined ? options.warnAtFraction * limit : undefined);

  /** `spend` as the state shows it: the budget's figures and the calls made under it in this run. */
  const figures = async (state: { messages: BaseMessage[] }, run: RunState) => {
    const budget = budgetOf(run);
    await budget.refresh();
    const calls = state.messages
      .slice(run.start)
      .filter((m) => (AIMessage.isInstance(m) || ToolMessage.isInstance(m)) && !marked(m)).length;
    return { spentUsd: budget.spentUsd, limitUsd: run.limitUsd, calls };
  };

  const finalMessage = (budget: SpendBudget, neededUsd: number, why: string) =>
    new AIMessage({
      content:
        `Stopped: the spend budget is spent (${usd(budget.spentUsd)} of ${usd(budget.maxUsd)}; the next step needed ` +
        `${Number.isFinite(neededUsd) ? `up to ${usd(neededUsd)}` : "a price the budget cannot tell"}). ${why}`,
      additional_kwargs: { [SPEND_LIMIT_KEY]: { exhausted: true, spentUsd: budget.spentUsd, limitUsd: budget.maxUsd, neededUsd } },
    });

  /**
   * "error": langchain wraps what a wrapModelCall throws (MiddlewareError), so the refusal rides out of the model
   * step on a message and is thrown as it is by afterModel, whose errors reach the caller unwrapped.
   */
  const errorMessage = (refusal: BudgetExceededError) =>
    new AIMessage({
      content: refusal.message,
      additional_kwargs: {
        [SPEND_LIMIT_KEY]: {
          exhausted: true,
          error: {
            budget: refusal.budget,
            spentUsd: refusal.spentUsd,
            reservedUsd: refusal.reservedUsd,
            limitUsd: refusal.limitUsd,
            estimateUsd: refusal.estimateUsd,
          },
        },
      },
    });
  const rethrow = (state: { messages: BaseMessage[] }) => {
    const last = state.messages.at(-1);
    const error =
      last && AIMessage.isInstance(last)
        ? (marker(last) as { error?: Omit<ConstructorParameters<typeof BudgetExceededError>[1], "cause"> } | undefined)?.error
        : undefined;
    if (error) throw new BudgetExceededError(String(last!.content), { ...error, estimateUsd: error.estimateUsd ?? Infinity });
  };

  /**
   * The next model call does not fit: what `onExhausted` says. Returns the budget to go on with (a raised one),
   * or a final message.
   */
  const exhausted = async (budget: SpendBudget, neededUsd: number, refusal: BudgetExceededError): Promise<SpendBudget | AIMessage> => {
    if (onExhausted === "error") return errorMessage(refusal);
    if (onExhausted === "end") return finalMessage(budget, neededUsd, "Nothing more was sent.");
    for (;;) {
      await budget.refresh();
      const question: SpendLimitInterrupt = {
        type: "spend_limit",
        budget: budget.name,
        spentUsd: budget.spentUsd,
        limitUsd: budget.maxUsd,
        neededUsd,
      };
      const answer = interrupt<SpendLimitInterrupt, unknown>(question);
      if (answer === false) return finalMessage(budget, neededUsd, "More was not allowed; nothing more was sent.");
      const raise = (answer as { raiseToUsd?: unknown } | null)?.raiseToUsd;
      if (!isUsd(raise) || raise <= budget.maxUsd) {
        throw new ValidationError(
          `resume the spend limit with { raiseToUsd } above the limit of ${usd(budget.maxUsd)}, or false (got ${JSON.stringify(answer)})`,
        );
      }
      budget = shared ? shared.withLimit(raise) : budget.withLimit(raise);
      if (await fits(budget, neededUsd)) return budget;
    }
  };

  const fits = (budget: SpendBudget, neededUsd: number) =>
    budget.check(neededUsd, "the next model call").then(
      () => true,
      (err) => (err instanceof BudgetExceededError ? false : Promise.reject(err)),
    );

  return {
    // the shape `createMiddleware` makes (langchain's MIDDLEWARE_BRAND), built here so that the package's main
    // entry loads without langchain installed
    [Symbol.for("AgentMiddleware")]: true,
    name: "SpendLimitMiddleware",
    stateSchema,

    beforeAgent: async (state: { messages: BaseMessage[] }) => {
      const run: RunState = {
        id: globalThis.crypto.randomUUID().slice(0, 18),
        limitUsd: shared?.maxUsd ?? options.maxUsd!,
        warned: false,
        start: state.messages.length,
      };
      return { spendRun: run, spend: await figures(state, run) };
    },

    beforeModel: async (state: { messages: BaseMessage[]; spendRun?: RunState }, runtime: { writer?: (chunk: unknown) => void }) => {
      const run = state.spendRun;
      if (!run) return undefined;
      const spend = await figures(state, run);
      const threshold = warnAt(run.limitUsd);
      if (run.warned || threshold === undefined || spend.spentUsd < threshold) return { spend };
      const warning: SpendWarning = { budget: budgetOf(run).name, spentUsd: spend.spentUsd, limitUsd: run.limitUsd, warnAtUsd: threshold };
      const config = currentRunConfig();
      if (config) await dispatchCustomEvent(SPEND_WARNING_EVENT, warning, config).catch(() => undefined);
      runtime?.writer?.({ type: SPEND_WARNING_EVENT, ...warning });
      return { spend, spendRun: { ...run, warned: true } };
    },

    wrapModelCall: (async (request, handler) => {
      const run: RunState | undefined = request.state?.spendRun;
      if (!run) return handler(request);
      let budget = budgetOf(run);
      await budget.refresh();
      if (run.warned && options.warnModel !== false) {
        const note = `Budget note: ${usd(budget.spentUsd)} of ${usd(run.limitUsd)} is spent. Wrap up: answer with what you have, and call tools only if they are essential.`;
        request = { ...request, systemPrompt: request.systemPrompt ? `${request.systemPrompt}\n\n${note}` : note };
      }
      // a tool call the run's budget refused in the last step: the run cannot go on as it is
      const refused = [...request.messages]
        .reverse()
        .find(
          (m: BaseMessage) => ToolMessage.isInstance(m) && (m.additional_kwargs?.[SPEND_LIMIT_KEY] as { exhausted?: boolean })?.exhausted,
        );
      const lastAi = [...request.messages].reverse().find((m: BaseMessage) => AIMessage.isInstance(m));
      const refusedNow = refused && request.messages.indexOf(refused) > (lastAi ? request.messages.indexOf(lastAi) : -1);
      const neededUsd = refusedNow
        ? (refused.additional_kwargs[SPEND_LIMIT_KEY] as { neededUsd: number }).neededUsd
        : await modelCallWorstCaseUsd(request, budget, request.runtime?.signal);
      let raised = false;
      const stop = async (refusal: BudgetExceededError): Promise<AIMessage | undefined> => {
        const next = await exhausted(budget, neededUsd, refusal);
        if (AIMessage.isInstance(next)) return next;
        budget = next as SpendBudget;
        raised = true;
        return undefined;
      };
      if (refusedNow || !(await fits(budget, neededUsd))) {
        await budget.refresh();
        const refusal = new BudgetExceededError(
          `budget ${budget.name} refused the next step: its worst case ${usd(neededUsd)} does not fit (${usd(budget.spentUsd)} spent of ${usd(budget.maxUsd)}); nothing was sent`,
          {
            budget: budget.name,
            spentUsd: budget.spentUsd,
            reservedUsd: budget.reservedUsd,
            limitUsd: budget.maxUsd,
            estimateUsd: neededUsd,
          },
        );
        const final = await stop(refusal);
        if (final) return final;
      }
      let response;
      try {
        response = await withRunConfigurable("SpendLimitMiddleware.budget", { budget }, () => handler(request));
      } catch (err) {
        // the transport refused the call after all (a fleet spent the room in between): nothing was sent; the run
        // ends as under "end" (no person to ask about a call already refused), or throws under "error"
        if (!(err instanceof BudgetExceededError && err.budget === budget.name)) throw err;
        if (onExhausted === "error") return errorMessage(err);
        return finalMessage(budget, err.estimateUsd, "The call was refused before anything was sent.");
      }
      if (!raised) return response;
      return new Command({ update: { spendRun: { ...run, limitUsd: budget.maxUsd } } });
    }) satisfies WrapModelCallHook<typeof stateSchema>,

    afterModel: async (state: { messages: BaseMessage[]; spendRun?: RunState }) => {
      rethrow(state);
      return state.spendRun ? { spend: await figures(state, state.spendRun) } : undefined;
    },
    afterAgent: async (state: { messages: BaseMessage[]; spendRun?: RunState }) =>
      state.spendRun ? { spend: await figures(state, state.spendRun) } : undefined,

    wrapToolCall: (async (request, handler) => {
      const run: RunState | undefined = request.state?.spendRun;
      if (!run) return handler(request);
      const runBudget = budgetOf(run);
      const name: string = request.toolCall.name;
      const limit = toolLimits.get(name);
      const cap =
        limit === undefined
          ? undefined
          : new SpendBudget({
              maxUsd: limit,
              name: `agent.${run.id}.tool.${name.replace(/[^\w.:-]/g, "_").slice(0, 64)}`,
              fees: runBudget.fees,
            });
      const budget = cap ? new CappedBudget(runBudget, cap) : runBudget;
      try {
        return await withRunConfigurable("SpendLimitMiddleware.budget", { budget }, () => handler(request));
      } catch (err) {
        if (!(err instanceof BudgetExceededError)) throw err;
        const refusal = (content: string, detail: Record<string, unknown>) =>
          new ToolMessage({
            content,
            tool_call_id: request.toolCall.id ?? "",
            name,
            status: "error",
            additional_kwargs: { [SPEND_LIMIT_KEY]: detail },
          });
        if (cap && err.budget === cap.name) {
          return refusal(
            `Not run: ${name} would pass its own spend limit of ${usd(limit!)} for this run (${usd(err.spentUsd)} spent by it; this call needs up to ${usd(err.estimateUsd)}). Do not call ${name} again; go on without it.`,
            { tool: name, limitUsd: limit, spentUsd: err.spentUsd, neededUsd: err.estimateUsd },
          );
        }
        if (err.budget !== runBudget.name) throw err; // "error" too: thrown by the next model step, as one error
        return refusal(
          `Not run: the run's spend budget is spent (${usd(err.spentUsd)} of ${usd(err.limitUsd)}; this call needs up to ${usd(err.estimateUsd)}).`,
          {
            exhausted: true,
            spentUsd: err.spentUsd,
            limitUsd: err.limitUsd,
            neededUsd: err.estimateUsd,
          },
        );
      }
    }) satisfies WrapToolCallHook<typeof stateSchema>,
  } as unknown as SpendLimitMiddleware;
}
