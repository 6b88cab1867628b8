/**
 * One worker of a fleet (spawned by examples/fleet.ts and bench/fleet.ts): a process of its own with its own
 * `RedisStore` on the fleet's Redis, signing in and paying with the same wallet (or API key) as every other
 * worker. It is what each replica of a real fleet would run.
 *
 * Protocol, so the parent can start every worker at the same instant and watch them: the job comes as one JSON
 * line on stdin; the worker prints one JSON line per message on stdout (`ready`, each `payment` event as it
 * happens, then `done`) and, once ready, waits for `go` on stdin. `spawnFleet` below is the parent's side.
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ChatService, ServiceClient, createServiceFetch, type PaymentEvent, type PaymentPolicyOptions } from "../src/index.js";
import { EvmWallet } from "../src/evm/index.js";
import { RedisStore } from "../src/redis/index.js";

export interface WorkerJob {
  baseUrl: string;
  redisUrl: string;
  /** one prefix per fleet: every worker's store must use the same one to share the budget */
  prefix: string;
  /** the fleet's one wallet (a test key of the emulator's local chain), or an API key */
  walletKey?: string;
  apiKey?: string;
  payment?: PaymentPolicyOptions;
  model: string;
  /** concurrent `invoke` calls */
  requests: number;
  /** instead of chat: explicit top-ups of `amountUsd`, one after another */
  topUps?: { count: number; amountUsd: number };
  /** the client's abuse guard window, to match an emulator whose windows are scaled down */
  abuseWindowMs?: number;
  /** the wallet's top-up lease in the store (how long a worker killed while paying holds the others up) */
  leaseMs?: number;
}

export interface WorkerDone {
  type: "done";
  served: number;
  /** `Name: message` of each failed call */
  errors: string[];
  /** 429 answers seen on the wire (retries included: `invoke` may still succeed after one) */
  status429: number;
  /** wall-clock ms of the worker's first send and last answer */
  startedAt: number;
  endedAt: number;
}
export type WorkerMessage = { type: "ready" } | { type: "payment"; event: PaymentEvent } | WorkerDone;

const send = (message: WorkerMessage) => process.stdout.write(`${JSON.stringify(message)}\n`);
const describe = (err: unknown) => (err instanceof Error ? `${err.name}: ${err.message}` : String(err));

async function work(job: WorkerJob, go: () => Promise<void>): Promise<void> {
  const store = new RedisStore({ url: job.redisUrl, prefix: job.prefix });
  let status429 = 0;
  const serviceFetch = createServiceFetch({
    baseUrl: job.baseUrl,
    ...(job.walletKey ? { wallet: new EvmWallet(job.walletKey), payment: job.payment } : { apiKey: job.apiKey }),
    store, // the one thing that makes these processes a fleet
    onPayment: (event) => send({ type: "payment", event }),
    abuseGuard: job.abuseWindowMs ? { windowMs: job.abuseWindowMs } : undefined,
    topUp: job.leaseMs ? { topUpLeaseMs: job.leaseMs } : undefined,
    // counts what the service answered, below retries and pacing
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      if (res.status === 429) status429++;
      return res;
    },
  });
  const model = new ChatService({ model: job.model, serviceFetch, maxTokens: 16 });
  const client = new ServiceClient({ serviceFetch });

  // Connected, and the wallet peers loaded (the library loads them at the first payment), before we say ready:
  // from a cold start the fastest worker would pay before the others sent anything, and nothing would be shared.
  await store.spentUsd("warm-up", 1, 1);
  if (job.walletKey)
    await Promise.all([
      import("siwe"),
      import("@x402/core/client"),
      import("@x402/core/http"),
      import("@x402/evm/exact/client"),
      import("@x402/evm"),
    ]);
  send({ type: "ready" });
  await go();

  const errors: string[] = [];
  let served = 0;
  const startedAt = Date.now();
  if (job.topUps) {
    for (let i = 0; i < job.topUps.count; i++) {
      await client.topUp(job.topUps.amountUsd).then(
        () => served++,
        (err: unknown) => errors.push(describe(err)),
      );
    }
  } else {
    const calls = Array.from({ length: job.requests }, (_, i) => model.invoke(`request ${i} of worker ${process.pid}`));
    for (const r of await Promise.allSettled(calls)) r.status === "fulfilled" ? served++ : errors.push(describe(r.reason));
  }
  send({ type: "done", served, errors, status429, startedAt, endedAt: Date.now() });
  await store.close();
}

const WORKER = fileURLToPath(import.meta.url);
const ROOT = fileURLToPath(new URL("../", import.meta.url));

export interface Fleet {
  /** hands every worker the job, lets them all go at once, and returns each one's `done` (bounded by `timeoutMs`) */
  run(job: WorkerJob, timeoutMs?: number): Promise<WorkerDone[]>;
  /** kills the workers still running (after `run`, none are) */
  kill(): void;
}

/**
 * The parent's side: spawns `n` workers now, so they load their modules while the caller starts the service,
 * and hands every message to `onMessage(worker index, message)`.
 */
export function spawnFleet(n: number, onMessage: (worker: number, m: WorkerMessage) => void = () => {}): Fleet {
  const workers = Array.from({ length: n }, (_, index) => {
    // `--import tsx`: the worker is TypeScript, like this file (a compiled fleet would run plain JS)
    const child = spawn(process.execPath, ["--import", "tsx", WORKER], { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    let onReady!: () => void;
    const ready = new Promise<void>((resolve) => (onReady = resolve));
    let done: WorkerDone | undefined;
    createInterface({ input: child.stdout }).on("line", (line) => {
      let message: WorkerMessage;
      try {
        message = JSON.parse(line) as WorkerMessage;
      } catch {
        return; // not ours (a library's log line)
      }
      if (message.type === "ready") onReady();
      if (message.type === "done") done = message;
      onMessage(index, message);
    });
    const exited = new Promise<WorkerDone>((resolve, reject) =>
      child.once("close", (code) =>
        code === 0 && done ? resolve(done) : reject(new Error(`worker ${index} exited (${code}): ${stderr.slice(-800)}`)),
      ),
    );
    exited.catch(() => undefined); // awaited by run (or the start failed first)
    return { child, ready: Promise.race([ready, exited.then(() => undefined)]), exited };
  });
  const kill = () => {
    for (const { child } of workers) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  };
  return {
    kill,
    async run(job, timeoutMs = 60_000) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`fleet not done within ${timeoutMs} ms`)), timeoutMs)),
      );
      try {
        for (const w of workers) w.child.stdin.write(`${JSON.stringify(job)}\n`);
        await Promise.race([Promise.all(workers.map((w) => w.ready)), deadline]);
        for (const w of workers) w.child.stdin.end("go\n"); // all at once: every one is connected and waiting
        return await Promise.race([Promise.all(workers.map((w) => w.exited)), deadline]);
      } finally {
        clearTimeout(timer);
        kill();
      }
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  // stdin: the job (one JSON line), then `go`
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  await work(JSON.parse(((await lines.next()).value as string | undefined) ?? "{}") as WorkerJob, async () => {
    while (((await lines.next()).value as string | undefined)?.trim() !== "go") {
      /* wait */
    }
  });
}
