/**
 * Issue 35: a model-based money test. Random schedules (schedule.ts) of 1-30 concurrent calls of one fresh wallet
 * (chat invoke and stream, some aborted; embeddings; crypto reads through the client and the tools; an image), a
 * random PaymentPolicy, sometimes a SpendBudget and a SpendLog, and random faults from the emulator's knobs, run
 * against one emulator and its local chain; after each, the money invariants are checked from the chain, the ledger
 * and the signatures counted at the signer (run.ts).
 *
 * `npm run test:money -- --seed N` replays a seed (MONEY_SEED; MONEY_PATH for a shrunk case); MONEY_RUNS sets how
 * many schedules; MONEY_LONG=1 runs batches of seeds on to the end and prints the count of schedules and failures.
 */
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Emulator } from "langchain-service-emulator";
import type { X402EmulatorOptions } from "../../packages/langchain-service-emulator/src/x402/index.js";
import { startPaidEmulator } from "../x402/helpers.js";
import { MIN_BALANCE_USD, MIN_TOP_UP_USD, moneyEnv, runSchedule, type MoneyEnv } from "./run.js";
import { scheduleArb, type Schedule } from "./schedule.js";

// about a minute on a 2-core machine (npm test); the long run takes thousands
const RUNS = Number(process.env.MONEY_RUNS ?? 30);
const SEED = process.env.MONEY_SEED !== undefined ? Number(process.env.MONEY_SEED) : Date.now() % 2_147_483_647;
const PATH = process.env.MONEY_PATH;
const LONG = process.env.MONEY_LONG === "1";
/** handles (sockets, timers) a schedule may leave beyond the first one's: keep-alive connections come and go */
const HANDLE_SLACK = 30;

let emu: Emulator;
let env: MoneyEnv;
/** read by the emulator on each request: each schedule sets its knobs here. The service's $5 minimum would make one
 * top-up last every schedule: at $0.05 a schedule pays several times */
const x402: X402EmulatorOptions = { minimumTopUpUsd: MIN_TOP_UP_USD, minimumBalanceUsd: MIN_BALANCE_USD };
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

beforeAll(async () => {
  process.on("unhandledRejection", onUnhandled);
  emu = await startPaidEmulator({
    chain: { accounts: 3 },
    x402: x402 as Record<string, unknown>,
  });
  env = await moneyEnv(emu, x402, unhandled);
});
afterAll(async () => {
  process.off("unhandledRejection", onUnhandled);
  env?.provider.destroy();
  await emu?.close();
});

interface Stats {
  schedules: number;
  payments: number;
  signatures: number;
  failures: number;
  /** open handles after the first schedule, and the most seen after any */
  baseline?: number;
  maxHandles?: number;
}
const newStats = (): Stats => ({ schedules: 0, payments: 0, signatures: 0, failures: 0 });

function handles(): number {
  return process.getActiveResourcesInfo().filter((r) => r !== "TTYWrap").length;
}

/** One property run: the schedule's invariants, and handles that do not grow past the first schedule's. */
function property(stats: Stats) {
  return fc.asyncProperty(scheduleArb, async (schedule: Schedule) => {
    const result = await runSchedule(env, schedule);
    stats.schedules++;
    stats.payments += result.payments;
    stats.signatures += result.signatures;
    const now = handles();
    stats.baseline ??= now;
    stats.maxHandles = Math.max(stats.maxHandles ?? 0, now);
    if (now > stats.baseline + HANDLE_SLACK)
      result.violations.push(`open handles grew: ${now}, ${stats.baseline} after the first schedule`);
    if (result.violations.length > 0) {
      // the first failure as it happens (shrinking, which follows, can take minutes)
      if (stats.failures++ === 0)
        console.error(`money: first failing schedule ${JSON.stringify(schedule)}\n${result.violations.join("\n")}`);
      throw new Error(`${result.violations.join("\n")}\noutcomes: ${JSON.stringify(result.outcomes)}`);
    }
  });
}

function report(details: fc.RunDetails<[Schedule]>): string {
  return (
    `money schedule failed: seed ${details.seed}, path "${details.counterexamplePath}" ` +
    `(replay: npm run test:money -- --seed ${details.seed} --path "${details.counterexamplePath}")\n` +
    `schedule: ${JSON.stringify(details.counterexample?.[0])}\n${String((details.errorInstance as Error)?.message ?? details.errorInstance)}`
  );
}

if (!LONG) {
  it(`money invariants hold over ${RUNS} random schedules (seed ${SEED})`, { timeout: 600_000 }, async () => {
    const stats = newStats();
    const details = await fc.check(property(stats), {
      numRuns: RUNS,
      seed: SEED,
      ...(PATH ? { path: PATH } : {}),
      endOnFailure: false,
      // a failure shrinks for what is left of 4 minutes (each step runs a schedule), then reports what it has
      interruptAfterTimeLimit: 240_000,
    });
    if (details.failed) console.error(report(details));
    expect(details.failed, details.failed ? report(details) : "").toBe(false);
    // the model exercised money: schedules paid, and signatures were counted at the signer
    expect(stats.schedules).toBeGreaterThanOrEqual(Math.min(RUNS, 1));
    if (!PATH && RUNS >= 20) expect(stats.payments).toBeGreaterThan(0);
    console.log(
      `money: ${stats.schedules} schedules, ${stats.payments} payments, ${stats.signatures} signatures, handles ${stats.baseline}..${stats.maxHandles} (seed ${SEED})`,
    );
  });
} else {
  it("long run: batches of schedules, every seed's failures counted", { timeout: 24 * 3_600_000 }, async () => {
    const total = RUNS;
    const batch = 25;
    const stats = newStats();
    const failures: string[] = [];
    for (let seed = SEED; stats.schedules < total; seed++) {
      const details = await fc.check(property(stats), { numRuns: Math.min(batch, total - stats.schedules), seed, endOnFailure: true });
      if (details.failed) {
        failures.push(report(details));
        console.error(report(details));
      }
    }
    console.log(
      `money long run: ${stats.schedules} schedules, ${failures.length} failures, ${stats.payments} payments, ${stats.signatures} signatures (first seed ${SEED})`,
    );
    expect(failures).toEqual([]);
  });
}
