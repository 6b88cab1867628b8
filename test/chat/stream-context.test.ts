/**
 * `ChatService.stream()` is core's: the first chunk is awaited before `stream()` returns (a refused request
 * throws there), the call's budget sees the stream's request, a run's `configurable.budget` reaches the model
 * inside it, and a signal ends a read. Against the emulator over loopback.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunnableLambda } from "@langchain/core/runnables";
// core's async context for runs on Node (langgraph, and this package's root entry through the agents, load it too)
import "@langchain/core/context";
import { ChatService } from "../../src/chat/index.js";
import { SpendBudget } from "../../src/spend/budget.js";
import { ModelNotFoundError } from "../../src/http/errors.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: [{ key: "k", usd: 100 }] });
});
afterAll(async () => {
  await emu?.close();
});

const model = (name = "emu-m") => new ChatService({ model: name, apiKey: "k", baseUrl: emu.url, maxTokens: 64 });
const PROMPT = "[[emu:tokens=60]] Tell me a long story about receipts and ledgers.";

describe("ChatService.stream()", () => {
  it("the call's budget still sees the stream's request and settles its cost", async () => {
    const budget = new SpendBudget({ maxUsd: 1, name: "stream" });
    let chunks = 0;
    for await (const _ of await model().stream(PROMPT, { budget })) chunks++;
    expect(chunks).toBeGreaterThan(5);
    expect(budget.spentUsd).toBeGreaterThan(0);
    expect(budget.reservedUsd).toBe(0);
  });

  it("a budget in the run's configurable (a chain step around the call) is charged, as the budget option is", async () => {
    const budget = new SpendBudget({ maxUsd: 1, name: "configurable" });
    const step = RunnableLambda.from((prompt: string) => model().invoke(prompt));
    await step.invoke(PROMPT, { configurable: { budget } });
    expect(budget.spentUsd).toBeGreaterThan(0);
    expect(budget.reservedUsd).toBe(0);
  });

  it("a refused request throws from stream() itself, before any chunk", async () => {
    await expect(model("emu-no-such-model").stream("hi")).rejects.toBeInstanceOf(ModelNotFoundError);
  });

  it("an aborted signal ends the stream at the next read", async () => {
    const controller = new AbortController();
    const reason = new Error("enough");
    let chunks = 0;
    const reading = (async () => {
      for await (const _ of await model().stream(PROMPT, { signal: controller.signal })) {
        if (++chunks === 3) controller.abort(reason);
      }
    })();
    await expect(reading).rejects.toBeDefined();
    expect(chunks).toBe(3);
  });
});
