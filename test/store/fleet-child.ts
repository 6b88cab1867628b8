/**
 * One process of a fleet (spawned by fleet.test.ts through processes.ts): it connects a RedisStore, prints
 * `ready`, waits for `go` on stdin (so every process starts at once), runs its job through
 * `PaymentPolicy.authorize` as the payment layer does (reserve, then commit as if signed), and prints one JSON line.
 *
 * Job (JSON in FLEET_JOB; with `storeUrl` the store is an HttpStore on that server, `prefix` its namespace):
 *   { kind: "budget", url, prefix, wallet, capUsd, attempts }  all attempts at once, $5 each, to one payee
 *   { kind: "pin", url, prefix, wallets, payee, reverse? }      a first payment per wallet, one after another
 */
import { createInterface } from "node:readline";
import { RedisStore } from "../../src/store/redis.js";
import { HttpStore } from "./http-store.js";
import { PaymentPolicy, USDC_BASE } from "../../src/x402/policy.js";

type Job = { storeUrl?: string } & (
  | { kind: "budget"; url: string; prefix: string; wallet: string; capUsd: number; attempts: number; payee: string }
  | { kind: "pin"; url: string; prefix: string; wallets: string[]; payee: string; reverse?: boolean }
);

const job = JSON.parse(process.env.FLEET_JOB ?? "{}") as Job;
const offer = (payTo: string) => ({
  scheme: "exact",
  network: "eip155:8453",
  amount: "5000000",
  asset: USDC_BASE,
  payTo,
  maxTimeoutSeconds: 300,
});
const outcome = (err: unknown) => `${(err as Error).name}:${(err as { rule?: string }).rule ?? (err as Error).message}`;

const store = job.storeUrl
  ? new HttpStore({ url: job.storeUrl, namespace: job.prefix })
  : new RedisStore({ url: job.url, prefix: job.prefix });
await store.spentUsd("warm-up", 1, 1); // connected before the start line
const lines = createInterface({ input: process.stdin });
const go = new Promise<void>((resolve) => lines.on("line", (l) => l.trim() === "go" && resolve()));
process.stdout.write("ready\n");
await go;
lines.close();

let result: unknown;
if (job.kind === "budget") {
  const policy = new PaymentPolicy({ maxPerPeriodUsd: job.capUsd, maxPerTopUpUsd: 5, allowedPayees: [job.payee] });
  result = await Promise.all(
    Array.from({ length: job.attempts }, () =>
      policy
        .authorize([offer(job.payee)], { namespace: "eip155", walletAddress: job.wallet, store })
        .then(async (a) => (await a.commit(), "ok"), outcome),
    ),
  );
} else {
  // pins the first payee per network; the policy object's own cap is above what its 40 payments add up to
  const policy = new PaymentPolicy({ maxPerPeriodUsd: 1000 });
  // one wallet after another, the other process going the other way: they meet on the wallets in the middle
  const order = job.wallets.map((_, i) => (job.reverse ? job.wallets.length - 1 - i : i));
  const outcomes: string[] = [];
  for (const i of order) {
    outcomes[i] = await policy
      .authorize([offer(job.payee)], { namespace: "eip155", walletAddress: job.wallets[i]!, store })
      .then(async (a) => (await a.commit(), "ok"), outcome);
  }
  result = outcomes;
}
process.stdout.write(`${JSON.stringify(result)}\n`);
await store.close();
