/**
 * `npm run example:budgeted-agent`: a looping crypto agent under `spendLimitMiddleware` (warn at half, ask a
 * person when spent), against the embedded emulator and its local chain. The person raises the limit once and
 * then stops: the run warns once, pauses twice, and ends with the budget's final message within the raised limit;
 * stopping at the first pause ends within the first limit.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../examples/budgeted-agent.js";
import type { SpendLimitInterrupt } from "../../src/agents/index.js";

const ENV = ["SERVICE_BASE_URL", "SERVICE_API_KEY", "SERVICE_MODEL", "RAISE"];
const saved: Record<string, string | undefined> = {};
beforeAll(() => {
  for (const name of ENV) {
    saved[name] = process.env[name];
    delete process.env[name];
  }
});
afterAll(() => {
  for (const name of ENV) if (saved[name] !== undefined) process.env[name] = saved[name];
});

describe("example: budgeted-agent", () => {
  it("raise once, then stop: one warning, two pauses, a final message within the raised limit", async () => {
    const lines: string[] = [];
    const asked: SpendLimitInterrupt[] = [];
    const result = await main({ raiser: (q) => (asked.push(q), asked.length === 1 ? 0.0018 : false), log: (l) => lines.push(l) });
    expect(result.warnings).toHaveLength(1);
    expect(result.warnings[0]).toMatchObject({ limitUsd: 0.0012, warnAtUsd: 0.0006 });
    expect(result.pauses).toEqual(asked);
    expect(asked.map((q) => q.limitUsd)).toEqual([0.0012, 0.0018]);
    for (const q of asked) expect(q.spentUsd + q.neededUsd).toBeGreaterThan(q.limitUsd);
    expect(result.finalMessage).toMatch(/^Stopped: the spend budget is spent .*More was not allowed; nothing more was sent\.$/);
    expect(result.spend.limitUsd).toBe(0.0018);
    expect(result.spend.spentUsd).toBeGreaterThan(asked[0]!.spentUsd);
    expect(result.spend.spentUsd).toBeLessThanOrEqual(0.0018);
    expect(result.reads).toBeGreaterThan(0);
    expect(result.reads).toBeLessThan(6);
    expect(lines.join("\n")).toMatch(
      /\[warning\][\s\S]*\[paused\][\s\S]*\[person\] raise the limit to \$0\.0018[\s\S]*\[paused\][\s\S]*\[person\] stop here/,
    );
  });

  it("stop at the first pause: the run ends within the first limit", async () => {
    const result = await main({ raiser: () => false, log: () => {} });
    expect(result.pauses).toHaveLength(1);
    expect(result.spend).toMatchObject({ limitUsd: 0.0012 });
    expect(result.spend.spentUsd).toBeLessThanOrEqual(0.0012);
    expect(result.finalMessage).toMatch(/^Stopped: the spend budget is spent/);
  });
});
