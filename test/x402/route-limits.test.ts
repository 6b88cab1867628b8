/**
 * The x402 routes' own limits (top-up 10 a minute per IP, balance 30 and transactions 20 per wallet, over them a
 * 429 with no rate-limit header) are paced by the client so that it never trips them: in the process one window
 * per route and wallet (per service origin for the top-up), shared by every client; with a fleet store, the
 * store's window, shared by every process. Against the emulator in live mode with small windows.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import type { FetchLike } from "../../src/http/fetch-stack.js";
import { limitedRouteOf } from "../../src/http/route-limits.js";
import { pacingLayer } from "../../src/http/pacing.js";
import { createServiceContext } from "../../src/http/context.js";
import { ServiceClient } from "../../src/client.js";
import { MemoryLimits } from "../../src/store/memory-limits.js";
import { EvmWallet } from "../../src/evm/index.js";
import { chatBody, payer, startPaidEmulator, testPolicy } from "./helpers.js";

const started: Emulator[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((e) => e.close()));
});

/** A fetch that records every answer's status. */
function recording(statuses: number[]): FetchLike {
  return async (input, init) => {
    const res = await globalThis.fetch(input, init);
    statuses.push(res.status);
    return res;
  };
}

describe("route keys", () => {
  it("balance and transactions per wallet (EVM case-insensitive), the top-up per service origin, nothing else", () => {
    const a = limitedRouteOf("http://svc:1/api/v1/x402/balance/0xAbC0000000000000000000000000000000000001");
    expect(a).toEqual({ route: "balance", key: "http://svc:1|x402|balance|0xabc0000000000000000000000000000000000001" });
    expect(limitedRouteOf("http://svc:1/api/v1/x402/transactions/So1ana?limit=50")).toEqual({
      route: "transactions",
      key: "http://svc:1|x402|transactions|So1ana",
    });
    expect(limitedRouteOf("http://svc:1/api/v1/x402/top-up")).toEqual({ route: "topUp", key: "http://svc:1|x402|top-up" });
    for (const other of ["http://svc:1/api/v1/chat/completions", "http://svc:1/api/v1/x402/balance", "http://svc:1/api/v1/x402/top-up/x"])
      expect(limitedRouteOf(other)).toBeUndefined();
  });
});

describe("in the process", () => {
  it("balance reads of one wallet from two clients share one window: none is refused", async () => {
    const emu = await startEmulator({ walletStartingUsd: 1, x402: { solana: false, routeLimits: { balance: 3, windowMs: 800 } } });
    started.push(emu);
    const wallet = EvmWallet.random();
    const statuses: number[] = [];
    const pacing = { routeLimits: { balance: 3 }, routeWindowMs: 800 };
    const clients = [0, 1].map(
      () => new ServiceClient({ baseUrl: emu.url, wallet, fetch: recording(statuses), pacing, abuseGuard: false }),
    );
    const reads = await Promise.all(Array.from({ length: 7 }, (_, i) => clients[i % 2]!.getX402Balance()));
    expect(reads.every((r) => r.balanceUsd === 1)).toBe(true);
    expect(statuses.filter((s) => s === 429)).toEqual([]);
    expect(statuses).toHaveLength(7);
  });

  it("top-ups of three wallets behind one address share the route's window: three payments, no 429", async () => {
    const emu = await startPaidEmulator({ x402: { routeLimits: { topUp: 4, windowMs: 1_000 } } });
    started.push(emu);
    const statuses: number[] = [];
    const pacing = { routeLimits: { topUp: 4 }, routeWindowMs: 1_000 };
    const clients = [1, 2, 3].map(
      (i) =>
        new ServiceClient({
          baseUrl: emu.url,
          wallet: payer(emu, i),
          payment: testPolicy(emu),
          fetch: recording(statuses),
          pacing,
          abuseGuard: false,
        }),
    );
    const answers = await Promise.all(clients.map((c) => c.request("/chat/completions", { body: JSON.parse(chatBody()) })));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(statuses.filter((s) => s === 429)).toEqual([]);
    for (const i of [1, 2, 3]) expect(emu.account(payer(emu, i).address)!.entries.filter((e) => e.type === "TOP_UP")).toHaveLength(1);
  });
});

describe("with a fleet store", () => {
  it("two processes behind one address share the store's window of the top-up route: none is refused", async () => {
    const emu = await startEmulator({ x402: { solana: false, routeLimits: { topUp: 3, windowMs: 600 } } });
    started.push(emu);
    // a fleet store (not process-local), and two contexts: two processes' limiters
    const store = new MemoryLimits();
    const processes: FetchLike[] = [];
    for (let i = 0; i < 2; i++) {
      const layer = pacingLayer(
        `${emu.url}|anonymous`,
        { routeLimits: { topUp: 3 }, routeWindowMs: 600 },
        { store, label: "test" },
        createServiceContext(),
      );
      processes.push(layer((input, init) => globalThis.fetch(input, init)));
    }
    const statuses = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => (await processes[i % 2]!(`${emu.url}/x402/top-up`, { method: "POST" })).status),
    );
    expect(statuses.filter((s) => s === 429)).toEqual([]);
    expect(statuses).toEqual(Array.from({ length: 8 }, () => 402));
  });
});
