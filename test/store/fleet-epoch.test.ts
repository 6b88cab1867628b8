/**
 * The fleet's top-up epoch when it cannot be read as a request leaves (a store that refuses the read, or answers
 * after the layer stopped waiting): a 402 drawn before another process's top-up landed must not be paid again,
 * even when that top-up ended before this process first asks for the lease. Deterministic: the scripted service
 * plays the other process at the exact moment, between deciding this request's 402 and answering it, through
 * the same store calls a process makes (take the lease, credit the wallet, end the top-up as settled).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  authorizationOf,
  completed,
  hostileServers,
  json,
  offer,
  paymentRequired,
  toppedUp,
  type RecordedRequest,
} from "../hostile/server.js";
import { redisAvailable, startRedis, type TestRedis } from "./redis-server.js";
import { MemoryStore } from "../../src/store/memory.js";
import { RedisStore } from "../../src/store/redis.js";
import type { PaymentStore, TopUpState } from "../../src/store/types.js";
import { EvmWallet } from "../../src/evm/index.js";
import { withX402 } from "../../src/x402/with-x402.js";
import type { PaymentEvent } from "../../src/x402/events.js";

const hostile = hostileServers();

/** A memory store standing for a fleet's (not process-local: the layer asks it), whose epoch cannot be read. */
class EpochBlindMemoryStore extends MemoryStore {
  override readonly processLocal = false as unknown as true;
  override async topUpState(): Promise<TopUpState> {
    throw new Error("store too slow");
  }
  /** what the fleet's processes cannot read, for the test to check */
  unseen(wallet: string): Promise<TopUpState> {
    return super.topUpState(wallet);
  }
}

/** A Redis store whose epoch reads answer later than the layer waits for one (500 ms). */
class SlowEpochRedisStore extends RedisStore {
  override async topUpState(wallet: string): Promise<TopUpState> {
    await new Promise((r) => setTimeout(r, 800));
    return super.topUpState(wallet);
  }
}

let redis: TestRedis | undefined;
beforeAll(async () => {
  if (redisAvailable) redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

/**
 * A service selling $5 of credit per payment, a cent per completion. `beforeFirst402` runs after the first 402
 * was decided (no credit) and before it is answered: what other processes do meanwhile.
 */
async function creditService(beforeFirst402: (credit: (usd: number) => void) => Promise<void>) {
  const state = { credit: 0, signed: [] as string[], chat402: 0 };
  const credit = (usd: number) => (state.credit += usd);
  const svc = await hostile(async (req: RecordedRequest, res) => {
    const path = req.url.split("?")[0]!;
    if (path.endsWith("/x402/top-up")) {
      const auth = authorizationOf(req);
      if (!auth) return json(res, { x402Version: 2, accepts: [offer()] }, {}, 402);
      state.signed.push(auth.nonce);
      credit(5);
      return toppedUp(res, 5);
    }
    if (path.endsWith("/chat/completions")) {
      if (state.credit >= 0.01) {
        state.credit -= 0.01;
        return completed(res);
      }
      if (state.chat402++ === 0) await beforeFirst402(credit);
      return paymentRequired(res, [offer()]);
    }
    json(res, { success: true, data: { transactions: [] } });
  });
  return { svc, state };
}

/** Another process's whole top-up of the wallet, as the store and the service see it. */
async function anotherProcessPays(store: PaymentStore, walletKey: string, credit: (usd: number) => void): Promise<void> {
  const lease = await store.acquireTopUpLease(walletKey, 5_000);
  expect(lease.token).toBeDefined();
  credit(5);
  await store.endTopUp(walletKey, lease.token!, { settled: true });
}

function client(store: PaymentStore, wallet: EvmWallet, service: string, events: PaymentEvent[]) {
  return withX402(fetch, {
    wallet,
    policy: { maxPerPeriodUsd: 50 },
    baseUrl: service,
    store,
    onPayment: (e) => events.push(e),
    maxResends: 1,
    resendDelayMs: 10,
  });
}

const chat = (f: ReturnType<typeof client>, url: string) =>
  f(`${url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
const keyOf = (wallet: EvmWallet) => `wallet:eip155:${wallet.address.toLowerCase()}`;

describe("a 402 drawn before another process's top-up landed, with the epoch unreadable as the request left", () => {
  it("that top-up ended before this process asked for the lease (free when asked): retried, not paid again", async () => {
    const store = new EpochBlindMemoryStore();
    const wallet = EvmWallet.random();
    const { svc, state } = await creditService((credit) => anotherProcessPays(store, keyOf(wallet), credit));
    const events: PaymentEvent[] = [];
    const res = await chat(client(store, wallet, svc.url, events), svc.url);
    expect(res.status).toBe(200);
    expect(state.signed).toEqual([]);
    expect(events.map((e) => e.type)).not.toContain("payment.signed");
    expect(svc.to("/x402/top-up")).toHaveLength(0);
    expect((await store.unseen(keyOf(wallet))).leased).toBe(false); // the lease taken to look was given back
  });

  it("a third process holds the lease when first asked for, and ends it without paying: retried, not paid", async () => {
    const store = new EpochBlindMemoryStore();
    const wallet = EvmWallet.random();
    const key = keyOf(wallet);
    let third: Promise<void> | undefined;
    const { svc, state } = await creditService(async (credit) => {
      await anotherProcessPays(store, key, credit);
      // a third process's 402 (drawn after the epoch moved) takes the lease, sees the epoch moved, gives it back
      const lease = await store.acquireTopUpLease(key, 5_000);
      third = new Promise((r) => setTimeout(r, 150)).then(async () => void (await store.endTopUp(key, lease.token!, { settled: false })));
    });
    const events: PaymentEvent[] = [];
    const res = await chat(client(store, wallet, svc.url, events), svc.url);
    await third;
    expect(res.status).toBe(200);
    expect(state.signed).toEqual([]);
    expect(events.map((e) => e.type)).not.toContain("payment.signed");
  });

  it("nobody else paid: the retry's 402 (its epoch known from the lease) is paid, once; the others wait for it", async () => {
    const store = new EpochBlindMemoryStore();
    const wallet = EvmWallet.random();
    const { svc, state } = await creditService(async () => undefined);
    const events: PaymentEvent[] = [];
    const f = client(store, wallet, svc.url, events);
    const statuses = await Promise.all(Array.from({ length: 5 }, async () => (await chat(f, svc.url)).status));
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    expect(state.signed).toHaveLength(1);
    // the first 402, and its re-send's, which is paid; the held requests drew none
    expect(state.chat402).toBe(2);
    expect(events.filter((e) => e.type === "payment.signed")).toHaveLength(1);
    expect((await chat(f, svc.url)).status).toBe(200);
    expect(state.signed).toHaveLength(1);
  });

  it.runIf(redisAvailable)("on Redis, with epoch reads slower than the layer waits: not paid again", async () => {
    const store = new SlowEpochRedisStore({ url: redis!.url, prefix: redis!.prefix() });
    try {
      const wallet = EvmWallet.random();
      const { svc, state } = await creditService((credit) => anotherProcessPays(store, keyOf(wallet), credit));
      const events: PaymentEvent[] = [];
      const res = await chat(client(store, wallet, svc.url, events), svc.url);
      expect(res.status).toBe(200);
      expect(state.signed).toEqual([]);
      expect(events.map((e) => e.type)).not.toContain("payment.signed");
    } finally {
      await store.close();
    }
  });
});
