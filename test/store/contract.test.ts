/**
 * The store contract (its cases in contract-kit.ts), run against `MemoryStore` and against `RedisStore` on a real redis-server: the same
 * requests give the same outcomes and the same words. Then what only Redis has: TTLs on every key, leases,
 * prefixes, clients, closing, and secrets kept out of errors.
 */
import { Redis } from "ioredis";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ConfigurationError, StoreUnavailableError } from "../../src/http/errors.js";
import { MemoryStore } from "../../src/store/memory.js";
import { RedisStore } from "../../src/store/redis.js";
import type { SpendCandidate, SpendScope } from "../../src/store/types.js";
import { describePaymentContract, describeTopUpContract } from "./contract-kit.js";
import { freePort, keysUnder, redisAvailable } from "./redis-server.js";
import { redisStores } from "./redis-stores.js";

const N = "eip155:8453";
const A = "0x1111111111111111111111111111111111111111";
const B = "0x2222222222222222222222222222222222222222";
const DAY = 24 * 60 * 60_000;

const scope = (key: string, capUsd: number, periodMs = DAY, pin = true): SpendScope => ({ key, capUsd, periodMs, pin });
const cand = (payTo: string, amountUsd = 5, network = N): SpendCandidate => ({ network, payTo, amountUsd });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const { server, store: redisStore } = redisStores();

// the payment contract and the top-up lease, the same cases for every store (test/store/contract-kit.ts)
describePaymentContract("MemoryStore", () => new MemoryStore());
// MemoryStore's leases are on Date.now: its lease cases move a fake Date on (only Date: timers and I/O stay real)
afterEach(() => void vi.useRealTimers());
const moveDateOn = async (ms: number) => {
  if (!vi.isFakeTimers()) vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(Date.now() + ms);
};
describeTopUpContract("MemoryStore", () => new MemoryStore(), true, moveDateOn);
describePaymentContract("RedisStore", () => redisStore(), redisAvailable);
describeTopUpContract("RedisStore", () => redisStore(), redisAvailable);

describe.skipIf(!redisAvailable)("RedisStore on a real redis-server", () => {
  it("every key it writes has a TTL, at least as long as what it must remember", async () => {
    const prefix = server().prefix();
    const store = redisStore({ prefix, pinTtlMs: 3 * DAY });
    const now = Date.now();
    const scopes = [scope("wallet:eip155:0x71", 10, 2 * DAY), scope("policy:t", 10, DAY, false)];
    const committed = await store.reserveSpend({ scopes, candidates: [cand(A)], now });
    if (!committed.ok) throw new Error("expected a reservation");
    await store.commitSpend(committed.reservation);
    await store.reserveSpend({ scopes, candidates: [cand(A)], now }); // left uncommitted
    await store.reserveSpend({ scopes, candidates: [cand(A, 1)], now, dryRun: true });
    await store.reserveSpend({ scopes: [scope("wallet:eip155:0x72", 1)], candidates: [cand(A, 5)], now }); // refused
    await store.pins("wallet:eip155:0x71");
    await store.spentUsd("wallet:eip155:0x71", DAY, now);
    const lease = await store.acquireTopUpLease("wallet:eip155:0x71", 1_000);
    await store.putPendingPayment("wallet:eip155:0x71", lease.token!, { id: "p", expiresAt: Date.now() + 30 * DAY, data: "{}" });

    const keys = await keysUnder(server().admin, prefix);
    const names = keys.map((k) => k.slice(prefix.length).replace(/^res:.*/, "res:<id>"));
    expect(names).toEqual(
      expect.arrayContaining([
        "leases",
        "res:<id>",
        "scope:wallet:eip155:0x71",
        "spend:wallet:eip155:0x71",
        "scope:policy:t",
        "spend:policy:t",
        "scope:wallet:eip155:0x72",
        "topup:wallet:eip155:0x71",
      ]),
    );
    const ttls = Object.fromEntries(
      await Promise.all(keys.map(async (k) => [k.slice(prefix.length), await server().admin.pttl(k)] as const)),
    );
    for (const [key, ttl] of Object.entries(ttls)) expect(ttl, key).toBeGreaterThan(0);
    // records for the longest period, plus the lease; pins for pinTtlMs
    expect(ttls["spend:wallet:eip155:0x71"]).toBeGreaterThan(2 * DAY);
    expect(ttls["scope:wallet:eip155:0x71"]).toBeGreaterThan(3 * DAY - 60_000);
    // a pending payment is remembered past its expiry
    expect(ttls["topup:wallet:eip155:0x71"]).toBeGreaterThan(30 * DAY);
    // a scope that holds no pin is kept only as long as its records
    expect(ttls["scope:policy:t"]).toBeLessThanOrEqual(DAY + store.leaseMs);
    // nothing outside the prefix
    expect(await server().admin.exists("leases")).toBe(0);
  });

  it("a reservation neither committed nor released is undone when its lease runs out, and cannot be committed", async () => {
    const store = redisStore({ leaseMs: 600 });
    const w = "wallet:eip155:0x81";
    const scopes = [scope(w, 10)];
    const held = await store.reserveSpend({ scopes, candidates: [cand(A)], now: 1 });
    const kept = await store.reserveSpend({ scopes, candidates: [cand(A)], now: 1 });
    if (!held.ok || !kept.ok) throw new Error("expected reservations");
    await store.commitSpend(kept.reservation);
    expect(await store.spentUsd(w, DAY, 1)).toBe(10);
    await sleep(800);
    expect(await store.spentUsd(w, DAY, 1)).toBe(5); // the committed one stays
    const err = await store.commitSpend(held.reservation).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as StoreUnavailableError).operation).toBe("commitSpend");
    expect((err as Error).message).toMatch(/lease ran out .* not sent/);
  });

  it("a lease that ran out undoes the pin its reservation set", async () => {
    const store = redisStore({ leaseMs: 500 });
    const w = "wallet:eip155:0x82";
    await store.reserveSpend({ scopes: [scope(w, 10)], candidates: [cand(A)], now: 1 });
    expect(await store.pins(w)).toEqual({ [N]: A });
    await sleep(700);
    expect(await store.pins(w)).toEqual({});
    // commitSpend checks the deadline itself, even before any other script has undone the reservation
    const r = await store.reserveSpend({ scopes: [scope(w, 10)], candidates: [cand(B)], now: 2 });
    if (!r.ok) throw new Error("expected a reservation");
    await sleep(700);
    await expect(store.commitSpend(r.reservation)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await store.pins(w)).toEqual({});
    expect(await store.spentUsd(w, DAY, 2)).toBe(0);
  });

  it("two prefixes are two fleets: budgets and pins apart", async () => {
    const one = redisStore();
    const two = redisStore();
    const scopes = [scope("wallet:eip155:0x91", 5)];
    expect(await one.reserveSpend({ scopes, candidates: [cand(A)], now: 1 })).toMatchObject({ ok: true });
    expect(await two.reserveSpend({ scopes, candidates: [cand(B)], now: 1 })).toMatchObject({ ok: true });
    expect(await one.pins(scopes[0]!.key)).toEqual({ [N]: A });
    expect(await two.pins(scopes[0]!.key)).toEqual({ [N]: B });
  });

  it("fromClient uses your client (its keyPrefix too) and close() leaves it open", async () => {
    const client = new Redis(server().url, { keyPrefix: "kp:" });
    try {
      const prefix = server().prefix();
      const store = RedisStore.fromClient(client, { prefix });
      const r = await store.reserveSpend({ scopes: [scope("wallet:eip155:0xa1", 5)], candidates: [cand(A)], now: 1 });
      expect(r).toMatchObject({ ok: true });
      const keys = await keysUnder(server().admin, `kp:${prefix}`);
      expect(keys.map((k) => k.slice(`kp:${prefix}`.length)).sort()).toEqual([
        "leases",
        expect.stringMatching(/^res:/),
        "scope:wallet:eip155:0xa1",
        "spend:wallet:eip155:0xa1",
      ]);
      expect(await keysUnder(server().admin, prefix)).toEqual([]);
      await store.close();
      expect(await client.ping()).toBe("PONG");
      await expect(store.spentUsd("x", 1, 1)).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      client.disconnect();
    }
  });

  it("close() closes the client it created", async () => {
    const name = `lcs-close-${Date.now()}`;
    const store = new RedisStore({ url: server().url, prefix: server().prefix(), redis: { connectionName: name } });
    await store.spentUsd("wallet:eip155:0x1", DAY, 1);
    expect(await server().admin.client("LIST")).toContain(`name=${name}`);
    await store.close();
    let open = true;
    for (let i = 0; i < 50 && open; i++) {
      open = String(await server().admin.client("LIST")).includes(`name=${name}`);
      if (open) await sleep(20);
    }
    expect(open).toBe(false);
  });

  it("a password in the URL never appears in an error or in JSON", async () => {
    const port = await freePort(); // nothing listens there
    const down = new RedisStore({ url: `redis://fleet-user:s3cret-pw@127.0.0.1:${port}`, timeoutMs: 2000 });
    const wrong = new RedisStore({ url: `redis://fleet-user:s3cret-pw@${server().url.slice("redis://".length)}`, timeoutMs: 2000 });
    try {
      for (const store of [down, wrong]) {
        const err = await store
          .reserveSpend({ scopes: [scope("wallet:eip155:0x1", 5)], candidates: [cand(A)], now: 1 })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StoreUnavailableError);
        const text = `${String(err)} ${(err as Error).stack} ${JSON.stringify(err)} ${JSON.stringify(store)}`;
        expect(text).not.toContain("s3cret");
        expect((err as StoreUnavailableError).operation).toBe("reserveSpend");
      }
    } finally {
      await down.close();
      await wrong.close();
    }
  });

  it("refuses bad options before connecting", () => {
    expect(() => new RedisStore({ url: "http://127.0.0.1:6379" })).toThrow(ConfigurationError);
    expect(() => new RedisStore({ url: "redis://127.0.0.1:6379", leaseMs: 0 })).toThrow(ConfigurationError);
    expect(() => RedisStore.fromClient({} as never)).toThrow(ConfigurationError);
  });
});
