/**
 * What the agent middleware hands the package's faces, and what it asks before a model call:
 * - `withRunConfigurable`: runs a model or tool call as a child run whose `configurable` has keys added. Every
 *   face finds a run's budget there (`runSpend`), so no tool needs wiring;
 * - `CappedBudget`: a run's budget with one tool's own cap in front (both hold each request; either refuses it);
 * - `modelCallWorstCaseUsd`: what the next model call may cost at worst, as the spend layer will reserve it.
 */
import type { BaseMessage } from "@langchain/core/messages";
import { ensureConfig, RunnableLambda } from "@langchain/core/runnables";
import { ChatService } from "../chat/chat-model.js";
import { toWireMessages } from "../chat/convert.js";
import { modelRecordsFor } from "../models/records.js";
import { SpendBudget, type BudgetReservation } from "../spend/budget.js";
import { requestShape, worstCaseUsd } from "../spend/estimate.js";

/** tags of the child run: LangSmith and LangGraph's message stream leave a hidden run out */
const HIDDEN = ["langsmith:hidden"];

/**
 * Runs `fn` as a child run of the current one (a `RunnableLambda`: LangChain's public way to give code below a
 * run's config, which is what core's `ensureConfig()` then reads there) with `patch` added to its `configurable`.
 * The result rides in a box: a lambda would invoke a returned Runnable or drain a returned iterable.
 */
export async function withRunConfigurable<T>(name: string, patch: Record<string, unknown>, fn: () => T | Promise<T>): Promise<T> {
  const config = ensureConfig();
  const run = RunnableLambda.from(async () => ({ value: await fn() }));
  const { value } = await run.invoke(undefined, {
    ...config,
    runName: name,
    tags: [...(config.tags ?? []), ...HIDDEN],
    configurable: { ...config.configurable, ...patch },
  });
  return value;
}

/** The current run's `configurable` (as core's `ensureConfig()` reads the run), or undefined outside a run. */
export function runConfigurable(): Record<string, unknown> | undefined {
  return ensureConfig().configurable;
}

/**
 * A run's budget with a tool's own cap in front: a request is held on the cap first, then on the run's budget;
 * a refusal by either is the `BudgetExceededError` of the one that refused (its `budget` names it), and nothing
 * is held or sent. Settled costs count on both.
 */
export class CappedBudget extends SpendBudget {
  readonly run: SpendBudget;
  readonly cap: SpendBudget;

  constructor(run: SpendBudget, cap: SpendBudget) {
    // figures and store are the run's and the cap's: this object's own are never used
    super({ maxUsd: run.maxUsd, name: run.name, fees: run.fees, unpricedUsd: run.unpricedUsd });
    this.run = run;
    this.cap = cap;
  }

  override get spentUsd(): number {
    return this.run.spentUsd;
  }
  override get reservedUsd(): number {
    return this.run.reservedUsd;
  }
  override get remainingUsd(): number {
    return Math.min(this.run.remainingUsd, this.cap.remainingUsd);
  }

  override refresh() {
    return this.cap.refresh().then(() => this.run.refresh());
  }

  override async check(estimateUsd: number, what?: string): Promise<void> {
    await this.cap.check(estimateUsd, what);
    await this.run.check(estimateUsd, what);
  }

  override async reserve(estimateUsd: number, what?: string): Promise<BudgetReservation> {
    const first = await this.cap.reserve(estimateUsd, what);
    let second: BudgetReservation;
    try {
      second = await this.run.reserve(estimateUsd, what);
    } catch (err) {
      await first.release();
      throw err;
    }
    return {
      budget: this,
      reservedUsd: second.reservedUsd,
      settle: async (usd) => void (await Promise.all([first.settle(usd), second.settle(usd)])),
      release: async () => void (await Promise.all([first.release(), second.release()])),
    };
  }

  override toJSON() {
    return { ...this.run.toJSON(), cap: this.cap.toJSON() };
  }
}

/** The parts of a model request the estimate reads (langchain's `ModelRequest`). */
export interface ModelCallShape {
  model: unknown;
  messages: readonly BaseMessage[];
  systemMessage?: BaseMessage;
  tools?: readonly unknown[];
}

/**
 * The worst case of the next model call, USD, as the spend layer will reserve it: the wire body a `ChatService`
 * sends (its parameters, the tools, the messages with the system prompt), priced from the model's `/models`
 * record. 0 for a model that does not send through this package (its calls are not the budget's); Infinity when
 * the record cannot be read or priced (the layer would refuse the call too, unless the budget's `unpricedUsd`).
 */
export async function modelCallWorstCaseUsd(request: ModelCallShape, budget: SpendBudget, signal?: AbortSignal): Promise<number> {
  const model = request.model;
  if (!(model instanceof ChatService)) return 0;
  const record = await modelRecordsFor(model.serviceFetch)
    .resolve(model.model, { signal })
    .catch(() => undefined);
  const messages =
    request.systemMessage && String(request.systemMessage.content ?? "") !== ""
      ? [request.systemMessage, ...request.messages]
      : [...request.messages];
  let body: Record<string, unknown>;
  try {
    const tools = request.tools?.length ? request.tools : undefined;
    body = { ...model.invocationParams({ tools } as never), messages: toWireMessages(messages, model.model) };
  } catch {
    return 0; // a request the model itself refuses: its own typed error says why, nothing is sent
  }
  const text = JSON.stringify(body);
  const shape = requestShape("/chat/completions", body, text.length)!;
  const worst = worstCaseUsd(shape, record, budget.fees, model.brand);
  return Number.isFinite(worst) ? worst : (budget.unpricedUsd ?? Infinity);
}
