/**
 * Pacing and the abuse guard of a fleet on one real redis-server: separate Node processes (spawned by
 * processes.ts), each with its own fetch stack and RedisStore, on one API key against the emulator. Then the
 * store failing: requests still go, paced per process, with one warning, and the store is used again once it
 * answers. Every wait is bounded.
 */
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import type { FetchLike } from "../../src/http/fetch-stack.js";
import { createServiceFetch } from "../../src/stack.js";
import { STORE_RETRY_MS } from "../../src/http/shared-limits.js";
import { MemoryLimits } from "../../src/store/memory-limits.js";
import { RedisStore } from "../../src/store/redis.js";
import { bounded, fleet as fleetOf } from "./processes.js";
import { freePort, keysUnder, ownRedisAvailable, redisAvailable, startRedis, type TestRedis } from "./redis-server.js";

const CHILD = fileURLToPath(new URL("./limits-child.ts", import.meta.url));
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** the tier's requests per (1 s) window: small, so that a 3x burst runs in about three seconds */
const RPM = 12;

/**
 * Every member goes just after a whole second, because the service's window starts at the whole second of its
 * first request (a burst that began late in a second would find its first window cut short by the service,
 * whatever the pacing does).
 */
const fleet = (jobs: Record<string, unknown>[]) => fleetOf<unknown[]>(CHILD, jobs, 30_000, () => sleep(1000 - (Date.now() % 1000) + 30));

let emu: Emulator;
let redis: TestRedis | undefined;
beforeAll(async () => {
  emu = await startEmulator({
    apiKeys: ["k-fleet", "k-fleet-nostore", "k-guard", "k-down", "k-stopped", "k-flaky"],
    rateLimits: { windowMs: 1000, tiers: { S: { requests: RPM } } },
  });
  if (redisAvailable) redis = await startRedis();
});
afterAll(async () => {
  await emu?.close();
  await redis?.stop();
});

interface Answer {
  status: number;
  reset: string | null;
}

describe.skipIf(!redisAvailable)("a fleet on one key shares its rate limit and its failure allowance through Redis", () => {
  it("four processes bursting 3x the tier's limit together: no 429, and the windows used to at least 90%", async () => {
    const prefix = redis!.prefix();
    const job = { kind: "burst", redisUrl: redis!.url, prefix, baseUrl: emu.url, apiKey: "k-fleet", model: "emu-s", count: (3 * RPM) / 4 };
    const started = Date.now();
    const answers = (await fleet([job, job, job, job])).flat() as Answer[];
    const elapsed = Date.now() - started;
    expect(answers).toHaveLength(3 * RPM);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(0);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    // Each answer names its window (the reset instant). Unloaded, 3x the limit fills exactly 3 windows (12/12/12).
    // The first window also holds the probe's round trip and four processes waking up: on a starved machine part of
    // it may pass unused (then the remainder spills into a 4th window); every window after it is >= 90% used.
    const perWindow = new Map<string, number>();
    for (const a of answers) perWindow.set(a.reset!, (perWindow.get(a.reset!) ?? 0) + 1);
    const counts = [...perWindow.entries()].sort(([a], [b]) => Number(a) - Number(b)).map(([, n]) => n);
    console.info(`fleet burst: ${answers.length} requests, 0 429s, per window ${counts.join("/")} of ${RPM}, ${elapsed} ms`);
    expect(counts.length).toBeGreaterThanOrEqual(3);
    expect(counts.length).toBeLessThanOrEqual(4);
    const full = counts.length === 3 ? counts.slice(1) : counts.slice(1, -1);
    for (const n of full) expect(n).toBeGreaterThanOrEqual(Math.ceil(0.9 * RPM));
    for (const n of counts) expect(n).toBeLessThanOrEqual(RPM);
    // what the fleet shared is under the prefix, with TTLs
    const keys = await keysUnder(redis!.admin, prefix);
    expect(keys.some((k) => k.startsWith(`${prefix}pace:`))).toBe(true);
    for (const k of keys) expect(await redis!.admin.pttl(k), k).toBeGreaterThan(0);
  });

  it("failures of one process hold back another before the service's block (20 failures in 30 s)", async () => {
    const prefix = redis!.prefix();
    const job = { kind: "fail", redisUrl: redis!.url, prefix, baseUrl: emu.url, apiKey: "k-guard", model: "emu-s", count: 12 };
    const [first] = await fleet([job]);
    expect(first).toEqual(Array(12).fill("400"));
    const [second] = await fleet([job]);
    // 12 + 8 = 20 failures: one more could be the 21st, which the service would answer with its block
    expect(second).toEqual([...Array(8).fill("400"), ...Array(4).fill("AbuseBlockError:client")]);
    expect(emu.rateLimiter.blockedFor("k-guard")).toBe(0);
  });
});

describe("the store failing: pacing and the guard go on per process, with one warning", () => {
  let warn: ReturnType<typeof vi.spyOn>;
  beforeAll(() => {
    warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
  });
  afterEach(() => warn.mockClear());
  afterAll(() => warn.mockRestore());

  function recorder(): { fetch: FetchLike; statuses: number[] } {
    const statuses: number[] = [];
    return {
      statuses,
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        statuses.push(res.status);
        return res;
      },
    };
  }
  const burst = (f: ReturnType<typeof createServiceFetch>, n: number) =>
    Promise.all(
      Array.from({ length: n }, (_, i) =>
        f(f.url("/chat/completions"), {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "emu-s", messages: [{ role: "user", content: `down ${i}` }], max_tokens: 8 }),
          service: { model: "emu-s" },
        }).then(async (r) => (await r.arrayBuffer(), r.status)),
      ),
    );
  const ourWarnings = () => warn.mock.calls.filter((c: unknown[]) => String(c[0]).includes("the shared store failed"));

  it.runIf(redisAvailable)(
    "Redis unreachable: a 2x burst is paced by the process (no 429), one warning, nothing secret in it",
    async () => {
      const store = new RedisStore({ url: `redis://:s3cret@127.0.0.1:${await freePort()}`, timeoutMs: 1000 });
      try {
        const rec = recorder();
        const f = createServiceFetch({ baseUrl: emu.url, apiKey: "k-down", store, fetch: rec.fetch, retry: false });
        const statuses = await bounded(burst(f, 2 * RPM), 20_000, "burst");
        expect(statuses.every((s) => s === 200)).toBe(true);
        expect(rec.statuses.filter((s) => s === 429)).toHaveLength(0);
        expect(ourWarnings()).toHaveLength(1);
        expect(String(ourWarnings()[0]![0])).toMatch(/fall back to this process's own limits/);
        expect(JSON.stringify(warn.mock.calls)).not.toContain("s3cret");
      } finally {
        await store.close();
      }
    },
  );

  it.runIf(ownRedisAvailable)("Redis stopped while in use: requests go on, paced by the process, with one warning", async () => {
    const own = await startRedis({ own: true });
    const store = new RedisStore({ url: own.url, prefix: own.prefix(), timeoutMs: 1000 });
    try {
      const rec = recorder();
      const f = createServiceFetch({ baseUrl: emu.url, apiKey: "k-stopped", store, fetch: rec.fetch, retry: false });
      expect(await burst(f, 4)).toEqual([200, 200, 200, 200]);
      expect(ourWarnings()).toHaveLength(0);
      await own.stop();
      const statuses = await bounded(burst(f, 2 * RPM), 20_000, "burst");
      expect(statuses.every((s) => s === 200)).toBe(true);
      expect(rec.statuses.filter((s) => s === 429)).toHaveLength(0);
      expect(ourWarnings()).toHaveLength(1);
    } finally {
      await store.close();
      await own.stop();
    }
  });

  it("a store that answers again is used again (and does not warn twice)", async () => {
    // a limits store in memory that can be switched off (shared, unlike MemoryStore): the layers' fallback logic
    class Flaky extends MemoryLimits {
      down = true;
      calls = 0;
      #gate<T>(run: () => Promise<T>): Promise<T> {
        this.calls++;
        return this.down ? Promise.reject(new Error("connection refused")) : run();
      }
      override acquirePace(...a: Parameters<MemoryLimits["acquirePace"]>) {
        return this.#gate(() => super.acquirePace(...a));
      }
      override observePace(...a: Parameters<MemoryLimits["observePace"]>) {
        return this.#gate(() => super.observePace(...a));
      }
      override acquireGuard(...a: Parameters<MemoryLimits["acquireGuard"]>) {
        return this.#gate(() => super.acquireGuard(...a));
      }
      override releaseGuard(...a: Parameters<MemoryLimits["releaseGuard"]>) {
        return this.#gate(() => super.releaseGuard(...a));
      }
    }
    const store = new Flaky();
    const f = createServiceFetch({ baseUrl: emu.url, apiKey: "k-flaky", store: store as never, retry: false });
    expect(await burst(f, 3)).toEqual([200, 200, 200]);
    expect(ourWarnings()).toHaveLength(1);
    const failedCalls = store.calls;
    // within STORE_RETRY_MS the store is not asked (no latency added while it is down)
    expect(await burst(f, 1)).toEqual([200]);
    expect(store.calls).toBe(failedCalls);
    store.down = false;
    await sleep(STORE_RETRY_MS + 50);
    expect(await burst(f, 1)).toEqual([200]);
    expect(await burst(f, 1)).toEqual([200]);
    // both layers asked it again, for each send: a place in the pacing window and in the guard's, each given back
    expect(store.calls - failedCalls).toBe(8);
    const grant = await store.acquireGuard(`${new URL(emu.url).origin}|${f.identity}`, {
      now: Date.now(),
      id: "t",
      maxFailures: 20,
      windowMs: 30_000,
      leaseMs: 1000,
    });
    expect(grant).toEqual({ granted: true, waitMs: 0, failures: 0 });
    store.down = true;
    await sleep(STORE_RETRY_MS + 50);
    expect(await burst(f, 1)).toEqual([200]);
    expect(ourWarnings()).toHaveLength(1);
  });
});

describe.skipIf(!redisAvailable)("without the store, the same fleet draws 429s (what the store is for)", () => {
  it("four processes, each pacing to the whole limit alone", async () => {
    const job = {
      kind: "burst",
      redisUrl: redis!.url,
      prefix: redis!.prefix(),
      baseUrl: emu.url,
      apiKey: "k-fleet-nostore",
      model: "emu-s",
      count: (3 * RPM) / 4,
      noStore: true,
    };
    const answers = (await fleet([job, job, job, job])).flat() as Answer[];
    expect(answers.filter((a) => a.status === 429).length).toBeGreaterThan(0);
  });
});
