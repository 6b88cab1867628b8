/**
 * A fleet on one wallet (`npm run example:fleet`): several worker processes (examples/fleet-worker.ts) sign in
 * and pay with ONE wallet, each with its own `RedisStore` on one Redis, and fire concurrent chat calls at the
 * local service emulator (with a local chain, where top-ups settle for real). The wallet's period budget and its
 * top-up lease live in Redis: when the empty wallet's first requests all draw 402s, one process pays and the
 * others wait for that payment and retry, and the fleet together never signs more than the cap.
 *
 * Prints each payment as a worker makes it, then a summary checked against the emulator's ledger and the chain.
 * Redis: REDIS_URL, else a `redis-server` from PATH started on a free loopback port (and stopped at the end).
 *
 *   npm run example:fleet                     # 4 workers × 10 concurrent calls
 *   FLEET_WORKERS=6 FLEET_REQUESTS=25 REDIS_URL=redis://127.0.0.1:6379 npm run example:fleet
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Contract, JsonRpcProvider, Network } from "ethers";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { spawnFleet, type WorkerJob } from "./fleet-worker.js";

/** `label`: "REDIS_URL" or "redis-server on port N" */
export type LocalRedis = { url: string; label: string; stop(): Promise<void> };

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const srv = createServer().once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });

/** REDIS_URL, else a throwaway `redis-server` (no persistence, loopback only) that `stop()` ends. */
export async function fleetRedis(): Promise<LocalRedis> {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, label: "REDIS_URL", stop: async () => {} };
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "fleet-redis-"));
  const server = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir]);
  const exited = new Promise<void>((resolve) => server.once("close", () => resolve()));
  const stop = async () => {
    if (server.exitCode === null && server.signalCode === null) server.kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    rmSync(dir, { recursive: true, force: true });
  };
  let output = "";
  const ready = await new Promise<boolean | "missing">((resolve) => {
    server.stdout.on("data", (d: Buffer) => {
      output += d.toString();
      if (/Ready to accept connections/.test(output)) resolve(true);
    });
    server.once("error", () => resolve("missing")); // ENOENT: not on PATH
    void exited.then(() => resolve(false));
    setTimeout(() => resolve(false), 10_000);
  });
  if (ready !== true) {
    await stop();
    if (ready === "missing")
      throw new Error(
        "the fleet needs Redis: set REDIS_URL=redis://host:port, or install redis-server (apt-get install redis-server, brew install redis)",
      );
    throw new Error(`redis-server did not start: ${output.slice(-300)}`);
  }
  return { url: `redis://127.0.0.1:${port}`, label: `redis-server on port ${port}`, stop };
}

/** The wallet's test-USDC balance on the emulator's local chain, in USD. */
export async function usdcOnChain(emulator: Emulator, address: string): Promise<number> {
  const chain = emulator.chain!;
  const provider = new JsonRpcProvider(chain.rpcUrl, Network.from(chain.chainId), { staticNetwork: true });
  try {
    const usdc = new Contract(chain.usdc.address, ["function balanceOf(address) view returns (uint256)"], provider);
    return Number((await usdc.getFunction("balanceOf")(address)) as bigint) / 1e6;
  } finally {
    provider.destroy();
  }
}

export interface FleetSummary {
  requests: number;
  served: number;
  status429: number;
  errors: string[];
  /** payments signed; USD settled, credited in the emulator's ledger, and gone from the wallet on chain */
  payments: number;
  spentUsd: number;
  ledgerUsd: number;
  onChainUsd: number;
  capUsd: number;
}

export async function main(options: { workers?: number; requests?: number; log?: (line: string) => void } = {}): Promise<FleetSummary> {
  const log = options.log ?? console.log;
  const workers = options.workers ?? Number(process.env.FLEET_WORKERS ?? 4);
  const requests = options.requests ?? Number(process.env.FLEET_REQUESTS ?? 10);
  // The cap is the fleet's, not each process's. (Before top-ups were single-flight across processes, each
  // worker paid $5 for itself: 4 payments, the whole cap.)
  const capUsd = 20;
  const redis = await fleetRedis();
  let payments = 0;
  let spentUsd = 0;
  // started first: the workers load their modules while the emulator and its chain start
  const fleet = spawnFleet(workers, (w, m) => {
    if (m.type !== "payment") return;
    const e = m.event;
    if (e.type === "payment.signed") payments++;
    if (e.type === "payment.settled") spentUsd += e.amountUsd ?? 0;
    const detail = e.transaction
      ? ` tx ${e.transaction.slice(0, 12)}…`
      : e.rule
        ? ` (${e.rule}: ${e.reason})`
        : e.reason
          ? ` (${e.reason})`
          : "";
    log(`  worker ${w}: ${e.type}${e.amountUsd !== undefined ? ` $${e.amountUsd}` : ""}${detail}`);
  });
  let emulator: Emulator | undefined;
  try {
    emulator = await startEmulator({ chain: true });
    const account = emulator.chain!.accounts[1]!; // a funded account of the local chain: the fleet's one wallet
    const usdcBefore = await usdcOnChain(emulator, account.address);
    log(`redis: ${redis.label}; emulator ${emulator.url}; wallet ${account.address}`);
    log(`${workers} workers × ${requests} concurrent calls, one wallet, cap $${capUsd} a day`);

    const job: WorkerJob = {
      baseUrl: emulator.url,
      redisUrl: redis.url,
      prefix: `fleet-example:${randomUUID().slice(0, 8)}:`, // every key under it has a TTL: nothing to clean up
      walletKey: account.privateKey, // handed to the workers on their stdin, never printed
      payment: { amountUsd: 5, maxPerTopUpUsd: 5, maxPerPeriodUsd: capUsd, allowedPayees: [emulator.chain!.treasury] },
      model: "emu-xs",
      requests,
    };
    const done = await fleet.run(job, 60_000);

    // what the service credited, and what left the wallet on chain: both must equal what the workers paid
    const ledgerUsd = (emulator.account(account.address)?.entries ?? [])
      .filter((e) => e.type === "TOP_UP")
      .reduce((s, e) => s + e.amount, 0);
    const onChainUsd = Math.round((usdcBefore - (await usdcOnChain(emulator, account.address))) * 1e6) / 1e6;
    const summary: FleetSummary = {
      requests: workers * requests,
      served: done.reduce((s, d) => s + d.served, 0),
      payments,
      spentUsd,
      ledgerUsd,
      onChainUsd,
      capUsd,
      status429: done.reduce((s, d) => s + d.status429, 0),
      errors: done.flatMap((d) => d.errors),
    };
    for (const err of summary.errors.slice(0, 5)) log(`  error: ${err}`);
    log(
      `summary: ${summary.served}/${summary.requests} requests served, ${payments} payment(s), $${spentUsd.toFixed(2)} spent ` +
        `(ledger $${ledgerUsd.toFixed(2)}, on chain $${onChainUsd.toFixed(2)}; cap $${capUsd}), ${summary.status429} 429s, ${summary.errors.length} errors`,
    );
    const consistent = Math.abs(spentUsd - ledgerUsd) < 1e-6 && Math.abs(ledgerUsd - onChainUsd) < 1e-6 && ledgerUsd <= capUsd;
    log(
      consistent
        ? "check: paid = credited = on chain, within the cap"
        : "CHECK FAILED: payments, ledger and chain disagree, or the cap was exceeded",
    );
    if (!consistent) process.exitCode = 1;
    return summary;
  } finally {
    fleet.kill();
    await emulator?.close();
    await redis.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  });
}
