/**
 * Single flight of top-ups across a fleet: separate Node processes on one wallet key, each with its own
 * RedisStore on one real redis-server and `withX402` around fetch, against a scripted service on loopback that
 * keeps the wallet's credit and counts signed payments. One process pays; the others wait for its lease and
 * retry on the credit it bought. A process killed while paying holds the fleet up only until its lease lapses,
 * and its signed payment is re-sent by the next holder, never signed again.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Wallet } from "ethers";
import { completed, hostileServers } from "../hostile/server.js";
import { PAYER, creditServices, type PayerResult } from "./fleet-service.js";
import { bounded, fleet, member } from "./processes.js";
import { ownRedisAvailable, redisAvailable, startRedis, type TestRedis } from "./redis-server.js";
import { RedisStore } from "../../src/store/redis.js";
import { withX402 } from "../../src/x402/with-x402.js";
import { EvmWallet } from "../../src/evm/index.js";

let redis: TestRedis | undefined;
beforeAll(async () => {
  if (redisAvailable) redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});
const hostile = hostileServers();

const creditService = creditServices(hostile);

describe.skipIf(!redisAvailable)("a fleet paying from one wallet through one Redis", () => {
  it("4 processes x 25 concurrent requests hitting 402: one payment, every request served", async () => {
    const { svc, state } = await creditService();
    const wallet = Wallet.createRandom();
    const job = { service: svc.url, redisUrl: redis!.url, prefix: redis!.prefix(), privateKey: wallet.privateKey, requests: 25 };
    const results = await fleet<PayerResult>(PAYER, [job, job, job, job], 60_000);
    expect(results.flatMap((r) => r.statuses)).toEqual(Array(100).fill(200));
    // one signature reached the service, and exactly one process signed it
    expect(new Set(state.signed).size).toBe(1);
    expect(results.flatMap((r) => r.events).filter((e) => e === "payment.signed")).toHaveLength(1);
    // each process sent at most one request into the 402 (its first, alone), never a burst
    expect(svc.to("/chat/completions").length).toBeLessThanOrEqual(100 + 2 * 4);
  });

  it("with the top-up epoch unreadable as requests leave (a slow store), a 402 burst still makes one payment", async () => {
    const { svc, state } = await creditService();
    const wallet = Wallet.createRandom();
    const job = {
      service: svc.url,
      redisUrl: redis!.url,
      prefix: redis!.prefix(),
      privateKey: wallet.privateKey,
      requests: 25,
      epochUnreadable: true,
    };
    const results = await fleet<PayerResult>(PAYER, [job, job, job, job], 60_000);
    expect(results.flatMap((r) => r.statuses)).toEqual(Array(100).fill(200));
    expect(new Set(state.signed).size).toBe(1);
  });

  it("a process killed while its payment is out: the next holder waits for the lease, re-sends the same payment, signs nothing", async () => {
    const { svc, state, firstPayment } = await creditService({ holdTopUps: true });
    const wallet = Wallet.createRandom();
    const job = {
      service: svc.url,
      redisUrl: redis!.url,
      prefix: redis!.prefix(),
      privateKey: wallet.privateKey,
      requests: 1,
      leaseMs: 1_000,
    };
    const doomed = member<PayerResult>(PAYER, job);
    await bounded(doomed.ready, 30_000, "first member start");
    doomed.go();
    await bounded(firstPayment, 30_000, "first payment");
    doomed.kill(); // SIGKILL: its lease and its signed payment stay in Redis
    state.holdTopUps = false;

    const next = member<PayerResult>(PAYER, job);
    try {
      await bounded(next.ready, 30_000, "second member start");
      const started = Date.now();
      next.go();
      const result = await bounded(next.result, 30_000, "second member");
      expect(result.statuses).toEqual([200]);
      // the same bytes again, settled now: nothing newly signed
      expect(state.signed).toHaveLength(2);
      expect(new Set(state.signed).size).toBe(1);
      expect(result.events).not.toContain("payment.signed");
      expect(result.events).toContain("payment.settled");
      // the dead process's lease held the fleet up for about its length, not forever
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      next.kill();
    }
  });

  it.runIf(ownRedisAvailable)("a store that stops answering does not hold up requests that need no payment", async () => {
    const own = await startRedis({ own: true });
    const store = new RedisStore({ url: own.url, prefix: own.prefix(), timeoutMs: 5_000 });
    try {
      const svc = await hostile((_req, res) => completed(res));
      const f = withX402(fetch, { wallet: EvmWallet.random(), baseUrl: svc.url, store });
      expect((await f(`${svc.url}/chat/completions`, { method: "POST", body: "{}" })).status).toBe(200); // connected
      await own.admin.client("PAUSE", 4_000, "ALL");
      const started = Date.now();
      for (let i = 0; i < 5; i++) expect((await f(`${svc.url}/chat/completions`, { method: "POST", body: "{}" })).status).toBe(200);
      // one short wait for the store's epoch, then none while it is down (each read waiting out timeoutMs would be 25 s)
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      await own.admin.client("UNPAUSE").catch(() => undefined);
      await store.close();
      await own.stop();
    }
  });
});
