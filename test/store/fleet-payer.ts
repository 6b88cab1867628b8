/**
 * One process of a paying fleet (spawned by fleet-topup.test.ts through processes.ts): one wallet key shared
 * with the other processes, a RedisStore, and `withX402` around fetch. It prints `ready`, waits for `go` on stdin
 * (every process starts at once), sends `requests` concurrent POSTs to the service, and prints one JSON line:
 * the statuses (or error names) and the payment events it saw.
 *
 * Job (JSON in FLEET_JOB): { service, redisUrl, prefix, privateKey, requests, leaseMs?, epochUnreadable?, storeUrl? }
 * (with `storeUrl` the store is an HttpStore on that server, `prefix` its namespace)
 */
import { createInterface } from "node:readline";
import { RedisStore } from "../../src/store/redis.js";
import { EvmWallet } from "../../src/evm/index.js";
import { HttpStore } from "./http-store.js";
import { withX402 } from "../../src/x402/with-x402.js";

const job = JSON.parse(process.env.FLEET_JOB ?? "{}") as {
  service: string;
  redisUrl: string;
  prefix: string;
  privateKey: string;
  requests: number;
  leaseMs?: number;
  /** the store's epoch cannot be read (as when reads are slower than the layer waits for) */
  epochUnreadable?: boolean;
  storeUrl?: string;
};

class EpochBlindStore extends RedisStore {
  override topUpState(): never {
    throw new Error("store too slow");
  }
}
const store = job.storeUrl
  ? new HttpStore({ url: job.storeUrl, namespace: job.prefix })
  : new (job.epochUnreadable ? EpochBlindStore : RedisStore)({ url: job.redisUrl, prefix: job.prefix });
await store.spentUsd("warm-up", 1, 1); // connected before the start line
const events: string[] = [];
const f = withX402(fetch, {
  wallet: new EvmWallet(job.privateKey),
  policy: { maxPerPeriodUsd: 50 },
  baseUrl: job.service,
  store,
  onPayment: (e) => events.push(e.type),
  topUpTimeoutMs: 30_000,
  maxResends: 2,
  resendDelayMs: 20,
  ...(job.leaseMs ? { topUpLeaseMs: job.leaseMs } : {}),
});

const lines = createInterface({ input: process.stdin });
const go = new Promise<void>((resolve) => lines.on("line", (l) => l.trim() === "go" && resolve()));
process.stdout.write("ready\n");
await go;
lines.close();

const statuses = await Promise.all(
  Array.from({ length: job.requests }, (_, i) =>
    f(`${job.service}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ i }),
    }).then(
      async (r) => (await r.text(), r.status),
      (err: Error) => `${err.name}: ${err.message}`,
    ),
  ),
);
process.stdout.write(`${JSON.stringify({ statuses, events })}\n`);
await store.close();
