/**
 * The middleware counts what this package's faces spend, whatever model runs the agent: a `ChatOpenAI` agent
 * (pointed at the emulator's OpenAI-compatible endpoint; its own calls are not this package's) that uses the
 * crypto tools is capped too. The tools find the run's budget where the middleware put it: none is wired to them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "langchain";
import { ChatOpenAI } from "@langchain/openai";
import { AIMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { BudgetExceededError, SpendBudget } from "../../src/index.js";
import { spendLimitMiddleware, SPEND_LIMIT_KEY } from "../../src/agents/index.js";
import { ADDRESSES, KEY, QUESTION, RUN, balanceTools } from "./helpers.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ chain: true, apiKeys: [KEY] });
});
afterAll(async () => {
  await emu?.close();
});

describe("spendLimitMiddleware with any chat model", () => {
  it("a ChatOpenAI agent's crypto tool calls draw from the run's budget; the call that does not fit is not sent, and the run ends with the budget's final message", async () => {
    const model = new ChatOpenAI({ model: "emu-m", apiKey: KEY, configuration: { baseURL: emu.url }, maxRetries: 0, maxTokens: 64 });
    // one balance read costs $0.000014 and reserves $0.000021 at worst: the first fits, the ones beside it do not
    const budget = new SpendBudget({ maxUsd: 0.00003 });
    const agent = createAgent({ model, tools: balanceTools(emu), middleware: [spendLimitMiddleware({ budget })] });
    const result = (await agent.invoke({ messages: [QUESTION] }, RUN)) as {
      messages: BaseMessage[];
      spend: { spentUsd: number; limitUsd: number };
    };
    const toolMessages = result.messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));
    expect(toolMessages).toHaveLength(ADDRESSES.length);
    expect(toolMessages.filter((m) => m.status !== "error")).toHaveLength(1);
    const refused = toolMessages.filter((m) => m.status === "error");
    expect(refused.map((m) => String(m.content))).toEqual(
      refused.map(() => expect.stringMatching(/^Not run: the run's spend budget is spent/)),
    );
    const final = result.messages.at(-1)!;
    expect(AIMessage.isInstance(final)).toBe(true);
    expect(String(final.content)).toMatch(
      /^Stopped: the spend budget is spent \(\$0\.000014 of \$0\.00003; the next step needed up to \$0\.000021\)/,
    );
    expect(final.additional_kwargs[SPEND_LIMIT_KEY]).toMatchObject({ exhausted: true });
    await budget.refresh();
    expect(budget.spentUsd).toBeCloseTo(0.000014, 9);
    expect(result.spend).toMatchObject({ spentUsd: budget.spentUsd, limitUsd: 0.00003 });
  });

  it('"error": a tool call the budget refused is thrown by the next model step as one BudgetExceededError (not one per refused call)', async () => {
    const model = new ChatOpenAI({ model: "emu-m", apiKey: KEY, configuration: { baseURL: emu.url }, maxRetries: 0, maxTokens: 64 });
    const budget = new SpendBudget({ maxUsd: 0.00003 });
    const agent = createAgent({ model, tools: balanceTools(emu), middleware: [spendLimitMiddleware({ budget, onExhausted: "error" })] });
    const err = await agent.invoke({ messages: [QUESTION] }, RUN).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(BudgetExceededError);
    expect(err).toMatchObject({ limitUsd: 0.00003, estimateUsd: 0.000021 });
    await budget.refresh();
    expect(budget.spentUsd).toBeCloseTo(0.000014, 9);
  });
});
