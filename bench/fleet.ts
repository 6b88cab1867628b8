/**
 * Fleets on one Redis (issue 12): separate worker processes (examples/fleet-worker.ts, each with its own
 * RedisStore on one real redis-server) on ONE wallet or API key, against the emulator:
 *   (a) 4 processes × 25 concurrent requests of an empty wallet hitting 402 -> payments made (goal 1)
 *   (b) 4 processes bursting at 3× the tier's requests per window together -> 429s (goal 0) and share of the
 *       limit used (goal ≥ 0.90); the emulator's windows are scaled from a minute to 1 s (abuse window and
 *       block likewise, 30 s -> 0.5 s), so it runs in seconds
 *   (c) 4 processes each trying to top up 3× the wallet's period cap -> total signed (goal ≤ the cap)
 *   (e) a worker SIGKILLed while paying: no second payment signed, the next worker served once the lease lapses
 *   (d) the store's cost: a payment's store round (reserveSpend + releaseSpend), and a paid-for chat request,
 *       on RedisStore (loopback) against MemoryStore
 * Redis: REDIS_URL, else a redis-server from PATH; with neither, one row says how to enable the section.
 */
import { randomUUID } from "node:crypto";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ChatService, MemoryStore, createServiceFetch, type PaymentStore, type SpendRequest } from "../src/index.js";
import { EvmWallet } from "../src/evm/index.js";
import { RedisStore } from "../src/redis/index.js";
import { fleetRedis, type LocalRedis } from "../examples/fleet.js";
import { spawnFleet, type WorkerDone, type WorkerJob } from "../examples/fleet-worker.js";
import { median, type BenchRow } from "./types.js";

const PROCESSES = 4;
const prefix = () => `fleet-bench:${randomUUID().slice(0, 8)}:`;

interface FleetRun {
  done: WorkerDone[];
  signed: number;
  signedUsd: number;
  /** first send to last answer, across the fleet (workers' wall clocks: one machine) */
  startedAt: number;
  elapsedMs: number;
  served: number;
  status429: number;
  errors: string[];
}

async function fleet(job: WorkerJob): Promise<FleetRun> {
  let signed = 0;
  let signedUsd = 0;
  const f = spawnFleet(PROCESSES, (_, m) => {
    if (m.type === "payment" && m.event.type === "payment.signed") {
      signed++;
      signedUsd += m.event.amountUsd ?? 0;
    }
  });
  try {
    const done = await f.run(job, 120_000);
    const startedAt = Math.min(...done.map((d) => d.startedAt));
    return {
      done,
      signed,
      signedUsd,
      startedAt,
      elapsedMs: Math.max(...done.map((d) => d.endedAt)) - startedAt,
      served: done.reduce((s, d) => s + d.served, 0),
      status429: done.reduce((s, d) => s + d.status429, 0),
      errors: done.flatMap((d) => d.errors),
    };
  } finally {
    f.kill();
  }
}

const topUps = (emu: Emulator, address: string) => (emu.account(address)?.entries ?? []).filter((e) => e.type === "TOP_UP");
/** ["PaymentPolicyError: …" × 44] -> "44 PaymentPolicyError" */
function kinds(errors: string[]): string {
  const counts = new Map<string, number>();
  for (const e of errors) counts.set(e.split(":")[0]!, (counts.get(e.split(":")[0]!) ?? 0) + 1);
  return [...counts].map(([name, n]) => `${n} ${name}`).join(", ") || "none";
}
const firstError = (r: FleetRun) => (r.errors.length ? `; first error: ${r.errors[0]!.slice(0, 120)}` : "");

async function paymentRows(redis: LocalRedis): Promise<BenchRow[]> {
  let emu = await startEmulator({ chain: true });
  try {
    const [, first] = emu.chain!.accounts;
    const base = { baseUrl: emu.url, redisUrl: redis.url, model: "emu-xs" };
    const allowedPayees = [emu.chain!.treasury];
    // (a) the cap is far above what 4 processes could pay, so it is the coordination that is measured
    const a = await fleet({
      ...base,
      prefix: prefix(),
      walletKey: first!.privateKey,
      requests: 25,
      payment: { maxPerPeriodUsd: 100, allowedPayees },
    });
    const aTopUps = topUps(emu, first!.address);
    // (c) $5 top-ups, 12 per process: each tries $60, 3× the $20 cap. On an emulator of its own: the service
    // allows 10 top-up calls a minute per IP, and (a)'s calls from this same address would count against (c)'s.
    await emu.close();
    emu = await startEmulator({ chain: true });
    const cap = 20;
    const c = await fleet({
      ...base,
      baseUrl: emu.url,
      prefix: prefix(),
      walletKey: emu.chain!.accounts[2]!.privateKey,
      requests: 0,
      topUps: { count: 12, amountUsd: 5 },
      payment: { maxPerTopUpUsd: 5, maxPerPeriodUsd: cap, allowedPayees: [emu.chain!.treasury] },
    });
    const cCredited = topUps(emu, emu.chain!.accounts[2]!.address).reduce((s, e) => s + e.amount, 0);
    return [
      {
        name: `${PROCESSES} processes × 25 concurrent requests hitting 402, one wallet: payments`,
        median_ms: a.elapsedMs,
        ratio: a.signed,
        anchor: "payments signed (goal 1)",
        note: `${a.signed} signed, ledger: ${aTopUps.length} top-up(s) $${aTopUps.reduce((s, e) => s + e.amount, 0)}; ${a.served}/${PROCESSES * 25} served, ${a.status429} 429s; one run${firstError(a)}`,
      },
      {
        name: `${PROCESSES} processes each topping up 3× the $${cap} period cap, one wallet: total signed`,
        median_ms: c.elapsedMs,
        ratio: c.signedUsd / cap,
        anchor: "total signed / cap (goal ≤ 1.0)",
        note: `$${c.signedUsd} signed in ${c.signed} payment(s), ledger credited $${cCredited}; ${c.served}/${PROCESSES * 12} top-ups done, refused: ${kinds(c.errors)}; one run`,
      },
    ];
  } finally {
    await emu.close();
  }
}

async function burstRow(redis: LocalRedis): Promise<BenchRow> {
  const windowMs = 1000;
  const limit = 20;
  const keys = ["fleet-bench-0", "fleet-bench-1", "fleet-bench-2"]; // a fresh key (own windows) per run
  const emu = await startEmulator({
    apiKeys: keys,
    rateLimits: { windowMs, tiers: { S: { requests: limit } }, abuseWindowMs: 500, abuseBlockMs: 500 },
  });
  try {
    const runs = [];
    for (const apiKey of keys) {
      const r = await fleet({
        baseUrl: emu.url,
        redisUrl: redis.url,
        prefix: prefix(),
        apiKey,
        model: "emu-s",
        requests: (3 * limit) / PROCESSES,
        abuseWindowMs: 500,
      });
      // as bench/pacing.ts: the window opens at the first request's whole second; an ideal fleet sends each
      // window's quota the instant it opens, so its 3rd batch goes out when the 2nd window ends
      const ideal = Math.floor(r.startedAt / 1000) * 1000 + 2 * windowMs - r.startedAt;
      runs.push({ ...r, share: Math.min(1, ideal / r.elapsedMs) });
    }
    return {
      name: `${PROCESSES} processes bursting 3× ${limit} req/window together, one key`,
      median_ms: median(runs.map((r) => r.elapsedMs)),
      ratio: median(runs.map((r) => r.share)),
      anchor: "share of the request limit used (goal ≥ 0.90)",
      note: `429s: ${runs.map((r) => r.status429).join("/")} (goal 0); served ${runs.map((r) => r.served).join("/")} of ${3 * limit}; windows scaled 60 s -> 1 s${firstError(runs.find((r) => r.errors.length) ?? runs[0]!)}`,
    };
  } finally {
    await emu.close();
  }
}

async function timeRounds(stores: Record<string, () => Promise<unknown>>, rounds: number): Promise<Record<string, number>> {
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(stores).map((k) => [k, []]));
  for (let i = 0; i < rounds; i++) {
    // interleaved, so noise falls on both alike
    for (const [name, run] of Object.entries(stores)) {
      const t = performance.now();
      await run();
      times[name]!.push(performance.now() - t);
    }
  }
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v.slice(Math.floor(v.length / 10)))])); // first 10%: warm-up
}

async function storeRows(redis: LocalRedis): Promise<BenchRow[]> {
  const redisStore = new RedisStore({ url: redis.url, prefix: prefix() });
  const memory = new MemoryStore();
  const payTo = EvmWallet.random().address.toLowerCase();
  const request = (): SpendRequest => ({
    scopes: [{ key: `wallet:eip155:${payTo}`, capUsd: 1e9, periodMs: 86_400_000, pin: true }],
    candidates: [{ network: "eip155:8453", payTo, amountUsd: 5 }],
    now: Date.now(),
  });
  const round = (store: PaymentStore) => async () => {
    const outcome = await store.reserveSpend(request());
    if (outcome.ok) await store.releaseSpend(outcome.reservation);
  };
  const emu = await startEmulator({ chain: true });
  try {
    const rounds = await timeRounds({ redis: round(redisStore), memory: round(memory) }, 1100);
    // a chat request of a wallet with credit, through a whole stack on each store (one top-up first)
    const key = emu.chain!.accounts[3]!.privateKey;
    const payment = { allowedPayees: [emu.chain!.treasury] };
    const model = (store: PaymentStore) =>
      new ChatService({
        model: "emu-xs",
        maxTokens: 16,
        serviceFetch: createServiceFetch({ baseUrl: emu.url, wallet: new EvmWallet(key), payment, store }),
      });
    const [viaRedis, viaMemory] = [model(redisStore), model(memory)];
    await viaRedis.invoke("top up once");
    await viaMemory.invoke("warm up");
    const requests = await timeRounds({ redis: () => viaRedis.invoke("hello"), memory: () => viaMemory.invoke("hello") }, 110);
    return [
      {
        name: "store round of a payment (reserveSpend + releaseSpend): RedisStore",
        median_ms: rounds.redis!,
        ratio: rounds.redis! / rounds.memory!,
        anchor: `MemoryStore: ${rounds.memory!.toFixed(4)} ms`,
        note: "Redis on loopback; ratio = Redis / memory; 1000 rounds",
      },
      {
        name: "chat request of a wallet with credit (SIWX, whole stack): RedisStore",
        median_ms: requests.redis!,
        ratio: requests.redis! / requests.memory!,
        anchor: `MemoryStore: ${requests.memory!.toFixed(3)} ms`,
        note: "added latency of the shared store per request; 100 requests each, interleaved",
      },
    ];
  } finally {
    await redisStore.close();
    await emu.close();
  }
}

/**
 * (e) a worker SIGKILLed while its payment is out: the emulator's facilitator takes 6 s to settle the first payment;
 * the worker is killed 0.5 s after signing it, with its lease (1.5 s) and its signed payment left in Redis. A second
 * worker then meets a 402: it waits for the lease to lapse, re-sends the SAME payment (never signs one), and is
 * served. Measured: signatures by the second worker (goal 0), top-ups in the ledger (goal 1), and the time from the
 * kill to its answer (about the lease, or the settlement when that is slower).
 */
async function killRow(redis: LocalRedis): Promise<BenchRow> {
  const emu = await startEmulator({ chain: true, x402: { settleDelayMs: 6_000 } });
  const nextSigned: string[] = [];
  const next = spawnFleet(1, (_, m) => m.type === "payment" && nextSigned.push(m.event.type));
  try {
    const [, , , wallet] = emu.chain!.accounts;
    const job: WorkerJob = {
      baseUrl: emu.url,
      redisUrl: redis.url,
      prefix: prefix(),
      walletKey: wallet!.privateKey,
      requests: 1,
      model: "emu-xs",
      leaseMs: 1_500,
      payment: { maxPerPeriodUsd: 100, allowedPayees: [emu.chain!.treasury] },
    };
    let signed!: () => void;
    const signedOnce = new Promise<void>((r) => (signed = r));
    // the worker that dies (spawned here; `next` is already loading its modules)
    const first = spawnFleet(1, (_, m) => m.type === "payment" && m.event.type === "payment.signed" && signed());
    void first.run(job, 60_000).catch(() => undefined);
    await signedOnce;
    await new Promise((r) => setTimeout(r, 500)); // its payment is on the wire, the facilitator settling it
    first.kill();
    const killedAt = Date.now();
    const [done] = await next.run(job, 60_000);
    const recoveredMs = done!.endedAt - killedAt;
    const ledger = topUps(emu, wallet!.address);
    return {
      name: "a worker SIGKILLed while its payment is out: signatures by the next worker",
      median_ms: recoveredMs,
      ratio: nextSigned.filter((t) => t === "payment.signed").length,
      anchor: "payments signed after the kill (goal 0); ms = kill to the next worker's answer",
      note: `next worker: ${done!.served}/1 served, events ${nextSigned.join(" > ") || "none"}; ledger: ${ledger.length} top-up(s) $${ledger.reduce((s, e) => s + e.amount, 0)}; lease 1.5 s, settlement 6 s; one run`,
    };
  } finally {
    next.kill();
    await new Promise((r) => setTimeout(r, 500));
    await emu.close();
  }
}

export async function benchFleet(): Promise<BenchRow[]> {
  let redis: LocalRedis;
  try {
    redis = await fleetRedis();
  } catch (err) {
    return [{ name: "(skipped: no Redis)", median_ms: NaN, ratio: NaN, note: (err as Error).message }];
  }
  try {
    return [...(await paymentRows(redis)), await killRow(redis), await burstRow(redis), ...(await storeRows(redis))];
  } finally {
    await redis.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await benchFleet());
}
