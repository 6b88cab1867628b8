/**
 * The limits contract (`LimitStore`: pacing windows and the abuse guard's failure window), run against
 * `MemoryStore` and against `RedisStore` on a real redis-server: the same calls give the same answers. Times are
 * the caller's (`now`), so windows are driven here without waiting. Then what only Redis has: separate clients
 * racing for the last places, keys under the prefix, a TTL on every key.
 */
import { describe, expect, it } from "vitest";
import type { LimitStore } from "../../src/http/shared-limits.js";
import { sharedLimitStore } from "../../src/http/shared-limits.js";
import { MemoryStore } from "../../src/store/memory.js";
import type { RedisStore } from "../../src/store/redis.js";
import { describeLimitContract, describeSlotContract } from "./contract-kit.js";
import { T0, ask, told } from "./contract/limits.js";
import { keysUnder, redisAvailable } from "./redis-server.js";
import { redisStores } from "./redis-stores.js";

// both stores implement the interface the layers need (checked by the compiler, structurally)
const _memory: LimitStore = new MemoryStore();
const _redis: (s: RedisStore) => LimitStore = (s) => s;
void _memory;
void _redis;

const { server, store: redisStore } = redisStores();

// the limits and slots contract, the same cases for every store (test/store/contract-kit.ts)
describeLimitContract("MemoryStore", () => new MemoryStore());
describeSlotContract("MemoryStore", () => new MemoryStore());
describeLimitContract("RedisStore", () => redisStore(), redisAvailable);
describeSlotContract("RedisStore", () => redisStore(), redisAvailable);

describe("which stores the layers share limits through", () => {
  it("a process-local MemoryStore is not used for them (the in-process limiters stay as they are)", () => {
    expect(sharedLimitStore(new MemoryStore())).toBeUndefined();
    expect(sharedLimitStore(undefined)).toBeUndefined();
    expect(sharedLimitStore({ reserveSpend: async () => ({}) })).toBeUndefined();
  });
  it.runIf(redisAvailable)("a RedisStore is", () => {
    const s = redisStore();
    expect(sharedLimitStore(s)).toBe(s);
  });
});

describe.skipIf(!redisAvailable)("limits in Redis", () => {
  it("separate clients racing for a window's last places: exactly the limit is granted", async () => {
    const prefix = server().prefix();
    const clients = [redisStore({ prefix }), redisStore({ prefix }), redisStore({ prefix }), redisStore({ prefix })];
    await clients[0]!.acquirePace("k|m", ask(T0));
    await clients[0]!.observePace("k|m", told(T0 + 5, 12, 11, T0 + 1000));
    const grants = await Promise.all(Array.from({ length: 48 }, (_, i) => clients[i % 4]!.acquirePace("k|m", ask(T0 + 10))));
    expect(grants.filter((g) => g.granted)).toHaveLength(11);
    // the guard likewise: 5 places for 20 sends from four clients
    const guard = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        clients[i % 4]!.acquireGuard("o|k", { now: T0, id: `s${i}`, maxFailures: 5, windowMs: 30_000, leaseMs: 30_000 }),
      ),
    );
    expect(guard.filter((g) => g.granted)).toHaveLength(5);
    // a wallet's requests in flight likewise: 5 places for 20 requests from four clients
    const slots = await Promise.all(
      Array.from({ length: 20 }, (_, i) => clients[i % 4]!.acquireSlot("o|w|wallet", { now: T0, id: `r${i}`, limit: 5, leaseMs: 30_000 })),
    );
    expect(slots.filter((g) => g.granted)).toHaveLength(5);
  });

  it("every key is under the prefix and has a TTL", async () => {
    const prefix = server().prefix();
    const s = redisStore({ prefix });
    const now = Date.now();
    await s.acquirePace("https://svc/api/v1|key:ab|m", ask(now));
    await s.observePace("https://svc/api/v1|key:ab|m", told(now + 5, 10, 0, now + 2000, { pauseUntil: now + 2000 }));
    await s.acquireGuard("https://svc|key:ab", { now, id: "x", maxFailures: 20, windowMs: 30_000, leaseMs: 30_000 });
    await s.acquireGuard("https://svc|key:ab", { now, id: "y", maxFailures: 20, windowMs: 30_000, leaseMs: 30_000 });
    await s.releaseGuard("https://svc|key:ab", { now: now + 1, id: "x", failed: true, windowMs: 30_000 });
    await s.acquireSlot("https://svc|key:ab|crypto-rpc", { now, id: "z", limit: 1, leaseMs: 30_000 });
    const keys = await keysUnder(server().admin, prefix);
    expect(keys).toEqual([
      `${prefix}fail:https://svc|key:ab`,
      `${prefix}flight:https://svc|key:ab`,
      `${prefix}pace:https://svc/api/v1|key:ab|m`,
      `${prefix}slots:https://svc|key:ab|crypto-rpc`,
    ]);
    for (const k of keys) {
      const ttl = await server().admin.pttl(k);
      expect(ttl, k).toBeGreaterThan(0);
      expect(ttl, k).toBeLessThanOrEqual(121_000);
    }
  });
});
