#!/usr/bin/env node
/**
 * The property-based money tests (test/money). `npm run test:money` runs them once; `-- --seed N [--path P]` replays
 * a printed failing schedule (P: fast-check's path to the shrunk case); `-- --runs N` sets how many schedules;
 * `--long` (npm run test:money:long) runs thousands in batches of seeds and prints the count of schedules and failures.
 */
import { spawn } from "node:child_process";

const args = process.argv.slice(2);
const env = { ...process.env };
const value = (i, name) => {
  const v = args[i + 1];
  if (v === undefined || v.startsWith("--")) {
    console.error(`${name} needs a value`);
    process.exit(2);
  }
  return v;
};
let replay = false;
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === "--seed") {
    env.MONEY_SEED = String(Number.parseInt(value(i++, a), 10));
    replay = true;
  } else if (a === "--path") {
    env.MONEY_PATH = value(i++, a);
    replay = true;
  } else if (a === "--runs") env.MONEY_RUNS = String(Number.parseInt(value(i++, a), 10));
  else if (a === "--long") {
    env.MONEY_LONG = "1";
    env.MONEY_RUNS ??= "2000";
  } else {
    console.error(`unknown argument ${a} (use --seed N, --path P, --runs N, --long)`);
    process.exit(2);
  }
}
// a replay or a long run is the model alone; a plain run is every money test
const files = replay || env.MONEY_LONG === "1" ? ["test/money/money.test.ts"] : ["test/money"];
const child = spawn("npx", ["vitest", "run", ...files], { stdio: "inherit", env });
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
