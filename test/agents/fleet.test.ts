/**
 * A fleet of two agent processes shares one budget through Redis: each builds `SpendBudget({ name, store })` on
 * the same RedisStore and runs the looping tool agent under `spendLimitMiddleware({ budget })` against one
 * emulator, at the same moment. Together they spend at most the limit, and each ends with the budget's final
 * message, having seen what the other spent.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { RedisStore } from "../../src/store/redis.js";
import { SpendBudget } from "../../src/spend/budget.js";
import { fleet } from "../store/processes.js";
import { redisAvailable, startRedis, type TestRedis } from "../store/redis-server.js";
import { ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { spendLimitMiddleware } from "../../src/agents/index.js";
import { KEY, QUESTION, RUN, loopingAgent } from "./helpers.js";

const CHILD = fileURLToPath(new URL("./fleet-agent.ts", import.meta.url));
let emu: Emulator;
let redis: TestRedis | undefined;
beforeAll(async () => {
  emu = await startEmulator({ chain: true, apiKeys: [KEY] });
  if (redisAvailable) redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
  await emu?.close();
});

describe.skipIf(!redisAvailable)("a fleet of two agent processes on one Redis budget", () => {
  it("spends at most the limit between them, and both runs end with the budget's final message", async () => {
    const prefix = redis!.prefix();
    const job = { url: emu.url, redis: redis!.url, prefix, name: "agent-fleet", maxUsd: 0.0015 };
    type Out = { reads: number; final: string; spend: { spentUsd: number; limitUsd: number } };
    const outs = await fleet<Out>(CHILD, [job, job], 60_000);
    const store = new RedisStore({ url: redis!.url, prefix });
    try {
      const shared = new SpendBudget({ maxUsd: 0.0015, name: "agent-fleet", store });
      await shared.refresh();
      expect(shared.spentUsd).toBeGreaterThan(0);
      expect(shared.spentUsd).toBeLessThanOrEqual(0.0015);
      for (const out of outs) {
        expect(out.final).toMatch(/^Stopped: the spend budget is spent/);
        expect(out.spend.limitUsd).toBe(0.0015);
        expect(out.spend.spentUsd).toBeLessThanOrEqual(shared.spentUsd);
      }
      // what one run alone reads on such a budget: two budgets of their own would read twice that
      const alone = (await loopingAgent(emu, [spendLimitMiddleware({ maxUsd: 0.0015 })]).invoke({ messages: [QUESTION] }, RUN)) as {
        messages: BaseMessage[];
      };
      const aloneReads = alone.messages.filter((m) => ToolMessage.isInstance(m) && m.status !== "error").length;
      expect(aloneReads).toBeGreaterThan(1);
      expect(outs[0]!.reads + outs[1]!.reads).toBeLessThan(2 * aloneReads);
      expect(Math.max(...outs.map((o) => o.spend.spentUsd))).toBe(shared.spentUsd);
    } finally {
      await store.close();
    }
  }, 90_000);
});
