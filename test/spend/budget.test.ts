/**
 * `SpendBudget` over the one stack, against the emulator (API keys with credit): worst cases reserved before
 * sending and refused with nothing sent, settled to the real cost after; one budget shared by a chat model and an
 * embeddings model; a budget per call and per agent run; streams settled on their usage chunk, or at the reserve
 * when cut off; crypto RPC settled to its cost header.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "langchain";
import { HumanMessage } from "@langchain/core/messages";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ChatService, ServiceClient, ServiceEmbeddings, WebSearchTool, costOf } from "../../src/index.js";
import { BudgetExceededError, ConfigurationError } from "../../src/http/errors.js";
import { SpendBudget } from "../../src/spend/budget.js";

let emu: Emulator;
/** every request the emulator received, by path */
const seen: string[] = [];
const KEYS = ["budget-1", "budget-2", "budget-3", "budget-4", "budget-5", "budget-6", "budget-7"];

beforeAll(async () => {
  emu = await startEmulator({ apiKeys: KEYS.map((key) => ({ key, usd: 50 })), rateLimits: { enabled: false } });
});
afterAll(async () => {
  await emu?.close();
});

/** a fetch that notes what reached the service (below every layer of the stack) */
const recording = (input: string | URL | Request, init?: RequestInit) => {
  seen.push(new URL(String(input)).pathname);
  return globalThis.fetch(input, init);
};
const charged = (key: string) => (emu.account(key)?.entries ?? []).filter((e) => e.type === "CHARGE").reduce((s, e) => s - e.amount, 0);
const nanoSum = (xs: number[]) => xs.reduce((s, x) => s + Math.round(x * 1e9), 0) / 1e9;

describe("SpendBudget: reserve the worst case, settle the real cost", () => {
  it("one budget shared by a chat model and an embeddings model: spent is the exact sum of their costs", async () => {
    const budget = new SpendBudget({ maxUsd: 0.5, name: "shared" });
    const chat = new ChatService({ baseUrl: emu.url, apiKey: KEYS[0], model: "emu-m", budget, maxTokens: 64 });
    const embeddings = new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEYS[0], budget });
    const a = await chat.invoke("what is a budget?");
    const b = await chat.invoke("and a ledger?");
    await embeddings.embedDocuments(["one document", "another document, longer than the first"]);
    const chatUsd = [a, b].map((m) => costOf(m)!.usd + costOf(m)!.diem);
    expect(chatUsd.every((c) => c > 0)).toBe(true);
    const embeddingUsd = budget.spentUsd - nanoSum(chatUsd);
    expect(embeddingUsd).toBeGreaterThan(0);
    expect(budget.reservedUsd).toBe(0);
    expect(budget.spentUsd).toBe(nanoSum([...chatUsd, embeddingUsd]));
    expect(budget.remainingUsd).toBe(+(0.5 - budget.spentUsd).toFixed(9));
    // the service's own ledger says the same, to its six decimals
    expect(Math.abs(charged(KEYS[0]!) - budget.spentUsd)).toBeLessThan(3e-6);
  });

  it("refuses a request whose worst case does not fit: BudgetExceededError with the figures, nothing sent", async () => {
    const budget = new SpendBudget({ maxUsd: 0.0005, name: "tight" });
    const model = new ChatService({ baseUrl: emu.url, apiKey: KEYS[1], model: "emu-l", budget, fetch: recording });
    seen.length = 0;
    const err = await model.invoke("hello").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BudgetExceededError);
    const e = err as BudgetExceededError;
    expect(e).toMatchObject({ budget: "tight", spentUsd: 0, reservedUsd: 0, limitUsd: 0.0005 });
    expect(e.estimateUsd).toBeGreaterThan(0.0005);
    expect(e.message).toMatch(
      /budget tight refused POST \/api\/v1\/chat\/completions: its worst case \$[\d.e-]+ does not fit.*nothing was sent/,
    );
    expect(seen.filter((p) => p.endsWith("/chat/completions"))).toEqual([]); // only the public /models read went out
    expect(charged(KEYS[1]!)).toBe(0);
    // the worst case follows maxTokens (else the model's output cap): a short answer fits the same budget
    const bounded = new ChatService({ baseUrl: emu.url, apiKey: KEYS[1], model: "emu-l", budget, maxTokens: 8 });
    expect((await bounded.invoke("hello")).content).toBeTruthy();
    expect(budget.spentUsd).toBeGreaterThan(0);
  });

  it("a budget per call (invoke options): charged beside the model's own, and only for that call", async () => {
    const own = new SpendBudget({ maxUsd: 1, name: "model" });
    const run = new SpendBudget({ maxUsd: 1, name: "run" });
    const model = new ChatService({ baseUrl: emu.url, apiKey: KEYS[2], model: "emu-s", budget: own, maxTokens: 32 });
    const first = await model.invoke("first", { budget: run });
    await model.invoke("second");
    const firstUsd = costOf(first)!.usd + costOf(first)!.diem;
    expect(run.spentUsd).toBe(firstUsd);
    expect(own.spentUsd).toBeGreaterThan(firstUsd);
    // a call's budget that cannot fit refuses that call only
    const broke = new SpendBudget({ maxUsd: 0, name: "broke" });
    await expect(model.invoke("third", { budget: broke })).rejects.toBeInstanceOf(BudgetExceededError);
    expect((await model.invoke("fourth")).content).toBeTruthy();
  });

  it("a budget per agent run (configurable.budget): every model call and tool call of the run, nothing of another run", async () => {
    const client = new ServiceClient({ baseUrl: emu.url, apiKey: KEYS[3] });
    const model = new ChatService({ baseUrl: emu.url, apiKey: KEYS[3], model: "emu-m", maxTokens: 64 });
    const agent = createAgent({ model, tools: [new WebSearchTool({ client })] });
    const run = new SpendBudget({ maxUsd: 1, name: "agent-run", fees: { augmentSearchUsd: 0.004 } });
    const before = charged(KEYS[3]!);
    await agent.invoke(
      { messages: [new HumanMessage('[[emu:tool=web_search {"query":"x402 payments"}]] look it up')] },
      { configurable: { budget: run } },
    );
    const runCharged = charged(KEYS[3]!) - before;
    // two model calls and one search, each settled: the emulator's $0.004 search fee set as the budget's fee
    expect(Math.abs(run.spentUsd - runCharged)).toBeLessThan(3e-6);
    expect(run.spentUsd).toBeGreaterThan(0.004);
    const other = new SpendBudget({ maxUsd: 1, name: "other-run" });
    await agent.invoke({ messages: [new HumanMessage("hi")] });
    expect(other.spentUsd).toBe(0);
    expect(run.spentUsd).toBeCloseTo(runCharged, 5); // the second run did not touch the first's budget
  });

  it("a stream settles on its usage chunk; a stream cut off settles at its reserve", async () => {
    const budget = new SpendBudget({ maxUsd: 1, name: "streams" });
    const model = new ChatService({ baseUrl: emu.url, apiKey: KEYS[4], model: "emu-s", budget, maxTokens: 40, maxRetries: 0 });
    let merged;
    for await (const chunk of await model.stream("[[emu:tokens=30]] go")) merged = merged ? merged.concat(chunk) : chunk;
    const cost = costOf(merged!)!;
    expect(budget.spentUsd).toBe(nanoSum([cost.usd, cost.diem]));
    const afterFirst = budget.spentUsd;

    emu.setFaults({ streamCutAfter: 3, paths: ["/chat/completions"] });
    try {
      const cut = await (async () => {
        for await (const _ of await model.stream("[[emu:tokens=30]] again")) void _;
      })().catch((e: unknown) => e);
      expect(cut).toBeInstanceOf(Error);
    } finally {
      emu.setFaults({});
    }
    // nothing told its cost: the worst case stays spent (never less than what the service could have charged)
    expect(budget.reservedUsd).toBe(0);
    expect(budget.spentUsd - afterFirst).toBeGreaterThan(cost.usd + cost.diem);
  });

  it("a request for a model /models does not list is refused unless unpricedUsd says what to hold", async () => {
    const strict = new SpendBudget({ maxUsd: 1, name: "strict" });
    const model = new ChatService({ baseUrl: emu.url, apiKey: KEYS[5], model: "no-such-model", budget: strict, maxRetries: 0 });
    const err = await model.invoke("hi").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BudgetExceededError);
    expect((err as BudgetExceededError).estimateUsd).toBe(Infinity);
    expect((err as Error).message).toMatch(/cannot be priced/);
    const lenient = new SpendBudget({ maxUsd: 1, name: "lenient", unpricedUsd: 0.01 });
    const other = new ChatService({ baseUrl: emu.url, apiKey: KEYS[5], model: "no-such-model", budget: lenient, maxRetries: 0 });
    await expect(other.invoke("hi")).rejects.toMatchObject({ status: 404 }); // sent, refused by the service: released
    expect(lenient.spentUsd).toBe(0);
    expect(lenient.reservedUsd).toBe(0);
  });

  it("bad options are ConfigurationErrors before anything is sent", () => {
    expect(() => new SpendBudget({ maxUsd: -1 })).toThrow(ConfigurationError);
    expect(() => new SpendBudget({ maxUsd: Number.NaN })).toThrow(ConfigurationError);
    expect(() => new SpendBudget({ maxUsd: 1, name: "has spaces" })).toThrow(ConfigurationError);
    expect(() => new SpendBudget({ maxUsd: 1, fees: { webSearch: 1 } as never })).toThrow(/unknown fee/);
    expect(() => new ChatService({ baseUrl: emu.url, apiKey: KEYS[6], model: "emu-s", budget: { maxUsd: 1 } as never })).toThrow(
      /budget must be a SpendBudget/,
    );
    expect(new SpendBudget({ maxUsd: 2, name: "json" }).toJSON()).toEqual({
      name: "json",
      maxUsd: 2,
      spentUsd: 0,
      reservedUsd: 0,
      remainingUsd: 2,
    });
  });
});

describe("SpendBudget.withLimit: the same budget under another cap", () => {
  it("shares the figures (both ways) and the name; only the cap differs, and a bad cap is a ConfigurationError", async () => {
    const budget = new SpendBudget({ maxUsd: 0.01 });
    const hold = await budget.reserve(0.008);
    await hold.settle(0.008);
    await expect(budget.reserve(0.005)).rejects.toBeInstanceOf(BudgetExceededError);
    const raised = budget.withLimit(0.02);
    expect(raised.name).toBe(budget.name);
    expect(raised.maxUsd).toBe(0.02);
    expect(raised.spentUsd).toBe(0.008);
    await (await raised.reserve(0.005)).settle(0.005);
    await budget.refresh();
    expect(budget.spentUsd).toBeCloseTo(0.013, 12);
    expect(budget.maxUsd).toBe(0.01);
    expect(() => budget.withLimit(-1)).toThrow(ConfigurationError);
  });
});
