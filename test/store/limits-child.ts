/**
 * One process of a fleet on one API key (spawned by limits-fleet.test.ts through processes.ts): a fetch stack
 * with a RedisStore (or, with `noStore`, none), prints `ready`, waits for `go` on stdin (so every process starts
 * at once), runs its job against the emulator, and prints one JSON line.
 *
 * Job (JSON in FLEET_JOB):
 *   { kind: "burst", redisUrl, prefix, baseUrl, apiKey, model, count }  `count` chat requests at once:
 *       prints [{ status, reset, remaining }] (reset: the answer's x-ratelimit-reset-requests, the window's id)
 *   { kind: "fail", ... count }  `count` invalid requests one after another: prints each outcome
 *       (`400`, or `AbuseBlockError:client|service`)
 *   { kind: "wallet", redisUrl, prefix, baseUrl, privateKey, model, count }  `count` chat requests at once, signed by
 *       the wallet (no API key, retries on): prints [{ status, inFlight429s }] as the wire saw them
 */
import { createInterface } from "node:readline";
import { createServiceFetch } from "../../src/stack.js";
import { RedisStore } from "../../src/store/redis.js";
import { EvmWallet } from "../../src/evm/index.js";

interface Job {
  kind: "burst" | "fail" | "wallet";
  privateKey?: string;
  redisUrl: string;
  prefix: string;
  baseUrl: string;
  apiKey: string;
  model: string;
  count: number;
  noStore?: boolean;
}

const job = JSON.parse(process.env.FLEET_JOB ?? "{}") as Job;
const store = job.noStore ? undefined : new RedisStore({ url: job.redisUrl, prefix: job.prefix });
await store?.spentUsd("warm-up", 1, 1); // connected before the start line
/** what the wire saw: each answer's status (a wallet's "too many in flight" 429s among them) */
const wire: number[] = [];
const countingFetch = async (input: string | URL | Request, init?: RequestInit) => {
  const res = await globalThis.fetch(input, init);
  wire.push(res.status);
  return res;
};
const f =
  job.kind === "wallet"
    ? createServiceFetch({ baseUrl: job.baseUrl, wallet: new EvmWallet(job.privateKey!), store, fetch: countingFetch })
    : createServiceFetch({ baseUrl: job.baseUrl, apiKey: job.apiKey, store, retry: false });
// a public request first (not metered per caller): the connection and the code on the send path are warm, so the
// burst's first window is not spent waiting for a cold process's first round trip
await (await f(f.url("/models"), { service: { auth: false } })).arrayBuffer();
const lines = createInterface({ input: process.stdin });
const go = new Promise<void>((resolve) => lines.on("line", (l) => l.trim() === "go" && resolve()));
process.stdout.write("ready\n");
await go;
lines.close();

const chat = (body: unknown) =>
  f(f.url("/chat/completions"), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    service: { model: job.model, throwOnError: false },
  });

let result: unknown;
if (job.kind === "wallet") {
  wire.length = 0;
  const statuses = await Promise.all(
    Array.from({ length: job.count }, async (_, i) => {
      const res = await chat({ model: job.model, messages: [{ role: "user", content: `wallet fleet ${i}` }] });
      await res.arrayBuffer();
      return res.status;
    }),
  );
  result = [{ statuses, wire429s: wire.filter((s) => s === 429).length }];
} else if (job.kind === "burst") {
  result = await Promise.all(
    Array.from({ length: job.count }, async (_, i) => {
      const res = await chat({ model: job.model, messages: [{ role: "user", content: `fleet burst ${i}` }], max_tokens: 8 });
      await res.arrayBuffer();
      return {
        status: res.status,
        reset: res.headers.get("x-ratelimit-reset-requests"),
        remaining: res.headers.get("x-ratelimit-remaining-requests"),
      };
    }),
  );
} else {
  const outcomes: string[] = [];
  for (let i = 0; i < job.count; i++) {
    try {
      const res = await chat({ model: job.model, messages: "not a list" });
      await res.arrayBuffer();
      outcomes.push(String(res.status));
    } catch (err) {
      const e = err as { name?: string; source?: string };
      outcomes.push(`${e.name}:${e.source ?? ""}`);
    }
  }
  result = outcomes;
}
process.stdout.write(`${JSON.stringify(result)}\n`);
await store?.close();
