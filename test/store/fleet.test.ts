/**
 * A fleet on one real redis-server: separate Node processes (spawned by processes.ts), each with its
 * own RedisStore, paying from one wallet through `PaymentPolicy.authorize` at the same moment. Then Redis down:
 * unreachable, paused, or a lease that runs out between reserve and commit: the payment fails closed with a
 * StoreUnavailableError and nothing reaches the service. Every wait is bounded.
 */
import { fileURLToPath } from "node:url";
import { EvmWallet } from "../../src/evm/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../../src/http/errors.js";
import { RedisStore } from "../../src/store/redis.js";
import { withX402 } from "../../src/x402/with-x402.js";
import { PaymentPolicy, walletScopeKey } from "../../src/x402/policy.js";
import {
  PAYEE_A,
  PAYEE_B,
  authorizationOf,
  json,
  offer,
  paymentRequired,
  startHostile,
  toppedUp,
  type HostileServer,
} from "../hostile/server.js";
import { bounded, fleet as fleetOf } from "./processes.js";
import { freePort, keysUnder, ownRedisAvailable, redisAvailable, startRedis, type TestRedis } from "./redis-server.js";

const CHILD = fileURLToPath(new URL("./fleet-child.ts", import.meta.url));
const N = "eip155:8453";
const randomAddress = () => EvmWallet.random().address;

const fleet = (jobs: Record<string, unknown>[]) => fleetOf<string[]>(CHILD, jobs);

let redis: TestRedis | undefined;
beforeAll(async () => {
  if (redisAvailable) redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

describe.skipIf(!redisAvailable)("a fleet of processes on one Redis", () => {
  it("four processes each try 3x the wallet's $20 period cap at once: exactly $20 is reserved", async () => {
    const prefix = redis!.prefix();
    const wallet = randomAddress();
    const job = { kind: "budget", url: redis!.url, prefix, wallet, capUsd: 20, attempts: 12, payee: PAYEE_A };
    const outcomes = (await fleet([job, job, job, job])).flat();
    expect(outcomes).toHaveLength(48);
    const ok = outcomes.filter((o) => o === "ok").length;
    expect(ok * 5).toBeLessThanOrEqual(20);
    expect(ok).toBe(4); // and the cap is reached, not merely respected
    expect(outcomes.filter((o) => o !== "ok")).toEqual(Array(44).fill("PaymentPolicyError:maxPerPeriod"));
    const store = new RedisStore({ url: redis!.url, prefix });
    try {
      expect(await store.spentUsd(walletScopeKey("eip155", wallet), 24 * 60 * 60_000, Date.now())).toBe(20);
    } finally {
      await store.close();
    }
  });

  it("two processes race first payments to payees A and B on 40 wallets: exactly one pins each wallet", async () => {
    const prefix = redis!.prefix();
    const wallets = Array.from({ length: 40 }, randomAddress);
    const [toA, toB] = await fleet([
      { kind: "pin", url: redis!.url, prefix, wallets, payee: PAYEE_A },
      { kind: "pin", url: redis!.url, prefix, wallets, payee: PAYEE_B, reverse: true },
    ]);
    const store = new RedisStore({ url: redis!.url, prefix });
    try {
      for (let i = 0; i < wallets.length; i++) {
        const pair = [toA![i], toB![i]];
        expect(
          pair.filter((o) => o === "ok"),
          `wallet ${i}: ${pair.join(", ")}`,
        ).toHaveLength(1);
        expect(pair.filter((o) => o !== "ok")).toEqual(["PaymentPolicyError:payee"]);
        const winner = toA![i] === "ok" ? PAYEE_A : PAYEE_B;
        expect(await store.pins(walletScopeKey("eip155", wallets[i]!))).toEqual({ [N]: winner.toLowerCase() });
      }
    } finally {
      await store.close();
    }
  });
});

describe.skipIf(!redisAvailable)("Redis down: payments fail closed", () => {
  const policyOptions = { maxPerPeriodUsd: 20 };
  const ctx = (store: RedisStore, wallet = randomAddress()) => ({ namespace: "eip155" as const, walletAddress: wallet, store });

  it("unreachable: authorize rejects with StoreUnavailableError, promptly", async () => {
    const store = new RedisStore({ url: `redis://127.0.0.1:${await freePort()}`, timeoutMs: 2000 });
    try {
      const started = Date.now();
      const err = await new PaymentPolicy(policyOptions).authorize([offer()], ctx(store)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect((err as StoreUnavailableError).operation).toBe("reserveSpend");
      expect((err as Error).message).toMatch(/unreachable|no answer/);
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      await store.close();
    }
  });

  it.runIf(ownRedisAvailable)(
    "paused past the timeout: authorize rejects, and the late reservation is undone once Redis runs it",
    async () => {
      const own = await startRedis({ own: true });
      const prefix = own.prefix();
      const store = new RedisStore({ url: own.url, prefix, timeoutMs: 800 });
      try {
        const wallet = randomAddress();
        const key = walletScopeKey("eip155", wallet);
        await store.spentUsd(key, 1, 1); // connected
        const scripts = async () => {
          const stats = await own.admin.info("commandstats");
          return [...stats.matchAll(/cmdstat_eval(?:sha)?:calls=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
        };
        const before = await scripts();
        await own.admin.client("PAUSE", 2500, "WRITE");
        const err = await new PaymentPolicy(policyOptions).authorize([offer()], ctx(store, wallet)).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StoreUnavailableError);
        expect((err as Error).message).toContain("no answer within 800 ms");
        await bounded(own.admin.set(`${prefix}probe`, "1", "PX", 1000), 5000, "unpause"); // a write: waits for the pause to end
        // queued behind the late reserve and its undo on the store's connection: both have run when this answers
        expect(await store.pins(key)).toEqual({});
        expect(await scripts()).toBeGreaterThanOrEqual(before + 3); // reserve, undo, pins
        expect(await store.spentUsd(key, 24 * 60 * 60_000, Date.now())).toBe(0);
        expect(await own.admin.zcard(`${prefix}leases`)).toBe(0);
        expect((await keysUnder(own.admin, `${prefix}res:`)).length).toBe(0);
      } finally {
        await store.close();
        await own.stop();
      }
    },
  );

  describe("through the x402 layer: the error surfaces as is and nothing is sent", () => {
    const services: HostileServer[] = [];
    afterAll(async () => {
      await Promise.all(services.splice(0).map((s) => s.close()));
    });
    async function service() {
      const s = await startHostile((req, res) => {
        if (req.url.split("?")[0]!.endsWith("/x402/top-up")) {
          return authorizationOf(req as never) ? toppedUp(res, 5) : json(res, { x402Version: 2, accepts: [offer()] }, {}, 402);
        }
        paymentRequired(res, [offer()]);
      });
      services.push(s);
      return s;
    }
    const signedTopUps = (s: HostileServer) => s.to("/x402/top-up").filter((r) => authorizationOf(r));
    const quick = { topUpTimeoutMs: 400, maxResends: 1, resendDelayMs: 10 };

    it("Redis unreachable: the request rejects with StoreUnavailableError, no payment signed or sent", async () => {
      const svc = await service();
      const store = new RedisStore({ url: `redis://:s3cret@127.0.0.1:${await freePort()}`, timeoutMs: 2000 });
      const events: string[] = [];
      try {
        const f = withX402(fetch, {
          wallet: EvmWallet.random(),
          policy: policyOptions,
          baseUrl: svc.url,
          store,
          onPayment: (e) => events.push(e.type),
          ...quick,
        });
        const err = await f(`${svc.url}/chat/completions`, { method: "POST", body: "{}" }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StoreUnavailableError);
        expect(JSON.stringify(err) + String(err)).not.toContain("s3cret");
        expect(signedTopUps(svc)).toHaveLength(0);
        expect(events).not.toContain("payment.signed");
      } finally {
        await store.close();
      }
    });

    it("a lease that runs out between reserve and commit: the signed payment is never sent, the budget is back", async () => {
      const svc = await service();
      const prefix = redis!.prefix();
      const store = new RedisStore({ url: redis!.url, prefix, leaseMs: 30 });
      const wallet = EvmWallet.random();
      const events: string[] = [];
      try {
        const f = withX402(fetch, {
          wallet,
          policy: policyOptions,
          baseUrl: svc.url,
          store,
          ...quick,
          onPayment: (e) => {
            events.push(e.type);
            // a process stalled between reserve and sign, longer than the lease
            if (e.type === "payment.requested") Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 150);
          },
        });
        const err = await f(`${svc.url}/chat/completions`, { method: "POST", body: "{}" }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StoreUnavailableError);
        expect((err as StoreUnavailableError).operation).toBe("commitSpend");
        expect(events).toContain("payment.requested");
        expect(signedTopUps(svc)).toHaveLength(0);
        const key = walletScopeKey("eip155", wallet.address);
        expect(await store.spentUsd(key, 24 * 60 * 60_000, Date.now())).toBe(0);
        expect(await store.pins(key)).toEqual({});
      } finally {
        await store.close();
      }
    });
  });
});
