/**
 * The spend-budget contract (`BudgetStore`), run against `MemoryStore` and against `RedisStore` on a real
 * redis-server: the same calls give the same figures, in integer nano-dollars. Then a budget shared by name
 * across two Redis clients (as two processes of a fleet hold it): concurrent reservations never overshoot the cap.
 */
import { describe, expect, it } from "vitest";
import { BudgetExceededError } from "../../src/http/errors.js";
import { SpendBudget } from "../../src/spend/budget.js";
import { MemoryStore } from "../../src/store/memory.js";
import { describeBudgetContract } from "./contract-kit.js";
import { keysUnder, redisAvailable } from "./redis-server.js";
import { redisStores } from "./redis-stores.js";

const { server, store: redisStore } = redisStores();

// the budget contract, the same cases for every store (test/store/contract-kit.ts)
describeBudgetContract("MemoryStore", () => new MemoryStore());
describeBudgetContract("RedisStore", () => redisStore(), redisAvailable);

describe("a budget shared by a fleet (RedisStore)", () => {
  it.runIf(redisAvailable)("two processes' budgets of one name: 40 concurrent $0.10 holds against $1.00 -> exactly 10 fit", async () => {
    const prefix = server().prefix();
    const a = new SpendBudget({ maxUsd: 1, name: "run-42", store: redisStore({ prefix }) });
    const b = new SpendBudget({ maxUsd: 1, name: "run-42", store: redisStore({ prefix }) }); // another client, as another process
    const outcomes = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).reserve(0.1)));
    const held = outcomes.filter((o): o is PromiseFulfilledResult<Awaited<ReturnType<SpendBudget["reserve"]>>> => o.status === "fulfilled");
    expect(held).toHaveLength(10);
    for (const o of outcomes) if (o.status === "rejected") expect(o.reason).toBeInstanceOf(BudgetExceededError);
    // settled at real costs on either side, read back the same from both
    await Promise.all(held.map((h, i) => h.value.settle(i < 5 ? 0.001154 : 0.002)));
    expect(await a.refresh()).toEqual({ spentUsd: 0.01577, reservedUsd: 0, remainingUsd: 0.98423 });
    expect((await b.refresh()).spentUsd).toBe(0.01577);
    expect(await keysUnder(server().admin, prefix)).toEqual([`${prefix}budget:run-42`]);
  });
});
