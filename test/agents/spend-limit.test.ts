/**
 * `spendLimitMiddleware` in a real `createAgent` loop against the live emulator (real HTTP over loopback, a local
 * chain behind the crypto RPC proxy): a looping tool agent on a small budget ends with a final message, pauses and
 * resumes with a raised limit, throws when asked to, refuses a tool over its own cap with a tool message, and warns
 * once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AIMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { Command, MemorySaver } from "@langchain/langgraph";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { BudgetExceededError, ConfigurationError, SpendBudget } from "../../src/index.js";
import { spendLimitMiddleware, SPEND_LIMIT_KEY, SPEND_WARNING_EVENT } from "../../src/agents/index.js";
import { KEY, QUESTION, RUN, loopingAgent } from "./helpers.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ chain: true, apiKeys: [KEY] });
});
afterAll(async () => {
  await emu?.close();
});

const tools = (messages: BaseMessage[]) => messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));
const balances = (messages: BaseMessage[]) => tools(messages).filter((m) => m.status !== "error");
const marker = (m: BaseMessage | undefined) => m?.additional_kwargs?.[SPEND_LIMIT_KEY] as Record<string, number | boolean> | undefined;

describe("spendLimitMiddleware: a looping tool agent on a small budget", () => {
  it('"end" (the default): the run ends normally with a final message, spending at most the limit; the state carries spend, in the result and the stream', async () => {
    const budget = new SpendBudget({ maxUsd: 0.0012 });
    const agent = loopingAgent(emu, [spendLimitMiddleware({ budget })]);
    const states: { spend?: { spentUsd: number; limitUsd: number; calls: number } }[] = [];
    let result: { messages: BaseMessage[]; spend?: { spentUsd: number; limitUsd: number; calls: number } } | undefined;
    for await (const state of await agent.stream({ messages: [QUESTION] }, { ...RUN, streamMode: "values" })) {
      states.push(state as never);
      result = state as never;
    }
    const final = result!.messages.at(-1)!;
    expect(AIMessage.isInstance(final)).toBe(true);
    expect((final as AIMessage).tool_calls ?? []).toHaveLength(0);
    expect(String(final.content)).toMatch(
      /^Stopped: the spend budget is spent \(\$0\.000\d+ of \$0\.0012; the next step needed up to \$0\.000\d+\)\. Nothing more was sent\./,
    );
    expect(marker(final)).toMatchObject({ exhausted: true, limitUsd: 0.0012 });
    // it stopped before the work was done, and never went over
    expect(balances(result!.messages).length).toBeGreaterThan(0);
    expect(balances(result!.messages).length).toBeLessThan(6);
    await budget.refresh();
    expect(budget.spentUsd).toBeGreaterThan(0);
    expect(budget.spentUsd).toBeLessThanOrEqual(0.0012);
    expect(result!.spend).toEqual({ spentUsd: budget.spentUsd, limitUsd: 0.0012, calls: 2 * balances(result!.messages).length });
    // the stream showed it grow, step by step
    const seen = states.map((s) => s.spend?.spentUsd).filter((v): v is number => v !== undefined);
    expect(new Set(seen).size).toBeGreaterThan(2);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
  });

  it('"interrupt": pauses with { spentUsd, limitUsd, neededUsd }, goes on within a raised limit, and ends as "end" does when answered false', async () => {
    const agent = loopingAgent(emu, [spendLimitMiddleware({ maxUsd: 0.0009, onExhausted: "interrupt" })], new MemorySaver());
    const config = { ...RUN, configurable: { thread_id: "raise-me" } };
    const first = (await agent.invoke({ messages: [QUESTION] }, config)) as {
      messages: BaseMessage[];
      __interrupt__?: { value: Record<string, unknown> }[];
    };
    const asked = first.__interrupt__?.[0]?.value;
    expect(asked).toMatchObject({ type: "spend_limit", limitUsd: 0.0009 });
    expect(asked!.spentUsd as number).toBeLessThanOrEqual(0.0009);
    expect((asked!.spentUsd as number) + (asked!.neededUsd as number)).toBeGreaterThan(0.0009);
    const before = balances(first.messages).length;

    const second = (await agent.invoke(new Command({ resume: { raiseToUsd: 0.0016 } }), config)) as typeof first & {
      spend: { spentUsd: number; limitUsd: number };
    };
    expect(balances(second.messages).length).toBeGreaterThan(before);
    const again = second.__interrupt__?.[0]?.value;
    expect(again).toMatchObject({ type: "spend_limit", limitUsd: 0.0016 });
    expect(again!.spentUsd as number).toBeLessThanOrEqual(0.0016);

    const third = (await agent.invoke(new Command({ resume: false }), config)) as typeof second;
    expect(third.__interrupt__ ?? []).toHaveLength(0);
    const final = third.messages.at(-1)!;
    expect(String(final.content)).toMatch(/^Stopped: the spend budget is spent .*More was not allowed; nothing more was sent\.$/);
    expect(third.spend.limitUsd).toBe(0.0016);
    expect(third.spend.spentUsd).toBeLessThanOrEqual(0.0016);
    expect(third.spend.spentUsd).toBeGreaterThan(0.0009);
  });

  it('"error": BudgetExceededError, as the transport throws it, before the call is sent', async () => {
    const budget = new SpendBudget({ maxUsd: 0.0005 });
    const agent = loopingAgent(emu, [spendLimitMiddleware({ budget, onExhausted: "error" })]);
    const err = await agent.invoke({ messages: [QUESTION] }, RUN).then(
      () => undefined,
      (e: unknown) => e,
    );
    // the error itself, not langchain's MiddlewareError around it
    expect(err).toBeInstanceOf(BudgetExceededError);
    expect((err as BudgetExceededError).limitUsd).toBe(0.0005);
    expect((err as BudgetExceededError).spentUsd + (err as BudgetExceededError).estimateUsd).toBeGreaterThan(0.0005);
    expect((err as Error).message).toMatch(/refused the next step: its worst case \$0\.000\d+ does not fit .*; nothing was sent$/);
    await budget.refresh();
    expect(budget.spentUsd).toBeLessThanOrEqual(0.0005);
  });

  it("a tool over its own limit is answered by a tool message the model sees; the run goes on and ends with its own answer", async () => {
    // one balance read is $0.000014; the next one's worst case ($0.000021) would pass $0.00003
    const agent = loopingAgent(emu, [spendLimitMiddleware({ maxUsd: 1, toolLimitsUsd: { native_balance: 0.00003 } })]);
    const result = (await agent.invoke({ messages: [QUESTION] }, RUN)) as { messages: BaseMessage[] };
    expect(balances(result.messages)).toHaveLength(1);
    const refused = tools(result.messages).filter((m) => m.status === "error");
    expect(refused.length).toBeGreaterThan(0);
    expect(String(refused[0]!.content)).toMatch(
      /^Not run: native_balance would pass its own spend limit of \$0\.00003 for this run \(\$0\.000014 spent by it; this call needs up to \$0\.000021\)/,
    );
    expect(marker(refused[0])).toMatchObject({ tool: "native_balance", limitUsd: 0.00003 });
    // the model was called after the refusal, and the run ended with its answer, not the budget's
    const afterRefusal = result.messages.slice(result.messages.indexOf(refused[0]!) + 1);
    expect(afterRefusal.some((m) => AIMessage.isInstance(m))).toBe(true);
    const final = result.messages.at(-1)!;
    expect(AIMessage.isInstance(final) && marker(final) === undefined).toBe(true);
  });

  it("the warning: one spend.warning event once the threshold is crossed, and a wrap-up note in the model's system prompt (off with warnModel: false)", async () => {
    const run = async (warnModel: boolean) => {
      const events: unknown[] = [];
      const systems: string[] = [];
      const handler = {
        handleCustomEvent: (name: string, data: unknown) => void (name === SPEND_WARNING_EVENT && events.push(data)),
        handleChatModelStart: (_llm: unknown, batches: BaseMessage[][]) =>
          void systems.push(batches[0]?.find((m) => m.getType() === "system")?.text ?? ""),
      };
      const agent = loopingAgent(emu, [spendLimitMiddleware({ maxUsd: 1, warnAtUsd: 0.0005, warnModel })]);
      await agent.invoke({ messages: [QUESTION] }, { ...RUN, callbacks: [handler] });
      return { events, systems };
    };
    const on = await run(true);
    expect(on.events).toHaveLength(1);
    expect(on.events[0]).toMatchObject({ limitUsd: 1, warnAtUsd: 0.0005 });
    expect((on.events[0] as { spentUsd: number }).spentUsd).toBeGreaterThanOrEqual(0.0005);
    expect(on.systems[0]).toBe("");
    expect(on.systems.at(-1)).toMatch(/^Budget note: \$0\.00\d+ of \$1 is spent\. Wrap up/);
    const off = await run(false);
    expect(off.events).toHaveLength(1);
    expect(off.systems.every((s) => s === "")).toBe(true);
  });

  it("bad options are a ConfigurationError when the middleware is made", () => {
    expect(() => spendLimitMiddleware({} as never)).toThrow(ConfigurationError);
    expect(() => spendLimitMiddleware({ maxUsd: -1 })).toThrow(ConfigurationError);
    expect(() => spendLimitMiddleware({ maxUsd: 1, budget: new SpendBudget({ maxUsd: 1 }) })).toThrow(ConfigurationError);
    expect(() => spendLimitMiddleware({ maxUsd: 1, onExhausted: "stop" as never })).toThrow(ConfigurationError);
    expect(() => spendLimitMiddleware({ maxUsd: 1, warnAtFraction: 2 })).toThrow(ConfigurationError);
    expect(() => spendLimitMiddleware({ maxUsd: 1, toolLimitsUsd: { generate_video: Number.NaN } })).toThrow(ConfigurationError);
  });
});
