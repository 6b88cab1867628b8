/**
 * Bounded memory for multi-tenant servers. 20,000 clients (ChatService and ServiceClient) on distinct API keys,
 * each making a request over loopback, then dropped: after a full GC the heap is back within a few MB of where
 * it was (the process-wide limiters, abuse guards and their maps used to keep every key: ~16 MB). And what the
 * sharing is for still holds: two live clients on one key share one pacing limiter and one abuse guard, a client
 * made per request finds the window and failures the last one saw, two live payment controllers on one wallet
 * share its state, and a signed payment whose outcome is unknown outlives every controller.
 *
 * Heap numbers: a full GC when V8 lets us have one (`--expose-gc` switched on at run time, as in
 * test/load/memory.test.ts); finalizers run between GCs (awaited turns), so a collected entry's key goes too.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gc, settledHeap } from "../../bench/heap.js";
import { ChatService } from "../../src/chat/index.js";
import { AbuseBlockError, PaymentFailedError } from "../../src/http/errors.js";
import { ServiceClient } from "../../src/client.js";
import { LruMap, SharedRegistry } from "../../src/http/bounded.js";
import { USDC_BASE, X402PaymentController } from "../../src/x402/index.js";
import { EvmWallet } from "../../src/evm/index.js";

const MB = 1024 * 1024;
const TENANTS = 20_000;

const turn = (ms = 0) => new Promise<void>((r) => setTimeout(r, ms));

// ---- a tiny loopback service: answers by key, counts requests for the keys the sharing tests watch ----

const PINNED = "0x1111111111111111111111111111111111111111";
const offer = {
  scheme: "exact",
  network: "eip155:8453",
  amount: "5000000",
  asset: USDC_BASE,
  payTo: PINNED,
  maxTimeoutSeconds: 300,
  extra: { name: "USD Coin", version: "2" },
};

interface Service {
  url: string;
  /** requests seen per watched key (`full-*`, `fail-*`) */
  counts: Map<string, number>;
  /** signed top-ups seen (their PAYMENT-SIGNATURE header) */
  payments: string[];
  close(): Promise<void>;
}

function reply(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

const completion = {
  id: "c1",
  object: "chat.completion",
  created: 1,
  model: "m",
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
};

async function startService(): Promise<Service> {
  const counts = new Map<string, number>();
  const payments: string[] = [];
  const server = createServer(async (req: IncomingMessage, res) => {
    for await (const _ of req); // drain the body
    const path = (req.url ?? "").replace(/\?.*$/, "");
    if (path.endsWith("/x402/top-up")) {
      const signature = req.headers["payment-signature"];
      if (typeof signature !== "string") return reply(res, 402, { x402Version: 2, accepts: [offer] });
      payments.push(signature);
      // the first signed top-up's answer is lost; a re-send of the same bytes is "already used": it settled
      if (payments.length === 1) return void res.socket?.destroy();
      return reply(res, 400, { error: "PAYMENT_ALREADY_USED", message: "nonce used" });
    }
    if (path.includes("/x402/transactions/")) return reply(res, 503, { error: "UNAVAILABLE" }); // outcome unknown
    const key = (req.headers.authorization ?? "").replace(/^Bearer /, "");
    const watched = /^(full|fail)-/.test(key);
    if (watched) counts.set(key, (counts.get(key) ?? 0) + 1);
    if (key.startsWith("fail-")) return reply(res, 400, { error: "BAD_REQUEST", message: "no" });
    // a real window of requests and tokens; the tenants' resets come within 2 s (nothing left to remember after),
    // a `full-*` key's window is used up for the next 30 s
    const full = key.startsWith("full-");
    const resetAt = Date.now() + (full ? 30_000 : 1_000);
    const limits = {
      "x-ratelimit-limit-requests": "1000",
      "x-ratelimit-remaining-requests": full ? "0" : "999",
      "x-ratelimit-reset-requests": String(Math.ceil(resetAt / 1000)),
      "x-ratelimit-limit-tokens": "1000000",
      "x-ratelimit-remaining-tokens": "999000",
      "x-ratelimit-reset-tokens": "1",
    };
    if (path.endsWith("/models")) return reply(res, 200, { object: "list", data: [] }, limits);
    return reply(res, 200, completion, limits);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/api/v1`,
    counts,
    payments,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let svc: Service;
beforeAll(async () => {
  svc = await startService();
  // the signing modules load here, not under a controller: viem keeps a module-level Error whose unformatted
  // stack holds the receivers of the async frames that first loaded it (that controller would be kept for good)
  await Promise.all([import("@x402/evm"), import("@x402/evm/exact/client"), import("@x402/core/client"), import("@x402/core/http")]);
});
afterAll(async () => {
  await svc?.close();
});

/** `count` clients on distinct keys, `concurrency` at a time, each making one request; none is kept. */
async function tenants(prefix: string, count: number, concurrency = 64): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const apiKey = `${prefix}-${i}-${(i * 2654435761) >>> 0}`;
      if (i % 10 === 0) {
        // every tenth a chat model: its own fetch stack, through LangChain's invoke
        const model = new ChatService({ model: "m", apiKey, baseUrl: svc.url });
        expect((await model.invoke("hi")).content).toBe("ok");
      } else {
        const client = new ServiceClient({ apiKey, baseUrl: svc.url });
        expect(await client.listModels()).toEqual([]);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

describe("20,000 tenants", () => {
  it("leave the heap within a few MB of where it was once their clients are dropped", { timeout: 240_000 }, async () => {
    await tenants("warm", 1_000); // JIT, lazily loaded modules, the connection pool
    await turn(3_500); // the warm-up keys' windows reset (within 2 s) and the 1 s sweep lets them go
    const before = await settledHeap();

    await tenants("tenant", TENANTS);
    await turn(3_500); // as above: nothing any of them learned still matters
    const after = await settledHeap();

    const grown = after - before;
    console.log(
      `heap before ${(before / MB).toFixed(1)} MB, after ${TENANTS} tenants ${(after / MB).toFixed(1)} MB: +${(grown / MB).toFixed(2)} MB`,
    );
    // today's maps kept ~800 bytes a key (~16 MB); bounded, what stays is noise and caches of fixed size
    expect(grown).toBeLessThan((gc ? 3 : 12) * MB);
  });
});

describe("sharing between live clients", () => {
  it("two live ChatServices on one key share one pacing limiter, across a full GC", async () => {
    const a = new ChatService({ model: "m", apiKey: "full-live", baseUrl: svc.url });
    expect((await a.invoke("hi")).content).toBe("ok"); // the answer says: no requests left for 30 s
    await settledHeap();
    const b = new ChatService({ model: "m", apiKey: "full-live", baseUrl: svc.url, retry: false });
    // held by the window a's request learned, not sent: aborted after 300 ms
    await expect(b.invoke("hi", { signal: AbortSignal.timeout(300) })).rejects.toThrow();
    expect(svc.counts.get("full-live")).toBe(1);
    // another key has its own limiter
    const c = new ChatService({ model: "m", apiKey: "full-other", baseUrl: svc.url });
    expect((await c.invoke("hi")).content).toBe("ok");
    expect(svc.counts.get("full-other")).toBe(1);
    expect(a.model).toBe("m"); // a is alive until here
  });

  it("two live ChatServices on one key share one abuse guard, across a full GC", async () => {
    const opts = { model: "m", apiKey: "fail-live", baseUrl: svc.url, abuseGuard: { maxFailures: 2 }, retry: false as const };
    const a = new ChatService(opts);
    for (let i = 0; i < 2; i++) await expect(a.invoke("hi")).rejects.toThrow();
    await settledHeap();
    const b = new ChatService(opts);
    const err = await b.invoke("hi").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AbuseBlockError);
    expect((err as AbuseBlockError).source).toBe("client");
    expect(svc.counts.get("fail-live")).toBe(2); // refused before the wire
    expect(a.model).toBe("m");
  });

  it("a client made per request finds the window and the failures its key's dropped clients saw", async () => {
    // a request that the shared state holds back is aborted after 300 ms (one let through answers at once)
    const once = async (apiKey: string, extra: Record<string, unknown> = {}, held = false) => {
      const m = new ChatService({ model: "m", apiKey, baseUrl: svc.url, retry: false, ...extra });
      return m.invoke("hi", held ? { signal: AbortSignal.timeout(300) } : {});
    };
    expect((await once("full-per-request")).content).toBe("ok");
    await settledHeap(); // the first client is gone; its key's window still matters for 30 s
    await expect(once("full-per-request", {}, true)).rejects.toThrow();
    expect(svc.counts.get("full-per-request")).toBe(1);

    for (let i = 0; i < 2; i++) await expect(once("fail-per-request", { abuseGuard: { maxFailures: 2 } })).rejects.toThrow();
    await settledHeap(); // failures the service still counts are not forgotten with the clients
    await expect(once("fail-per-request", { abuseGuard: { maxFailures: 2 } })).rejects.toBeInstanceOf(AbuseBlockError);
    expect(svc.counts.get("fail-per-request")).toBe(2);
  });
});

describe("wallet states", () => {
  const KEY_A = `0x${"11".repeat(32)}`;
  const KEY_B = `0x${"22".repeat(32)}`;

  it("are shared by two live controllers on one wallet (two wallet objects), across a full GC; released after", async () => {
    // in a function of its own: an async function's locals live until it returns
    const shared = async () => {
      const c1 = new X402PaymentController({ wallet: new EvmWallet(KEY_A) });
      c1.observe(new Response(null, { headers: { "X-Balance-Remaining": "12.5" } }));
      await settledHeap();
      const c2 = new X402PaymentController({ wallet: new EvmWallet(KEY_A) });
      const seen = c2.lastBalanceUsd;
      c2.observe(new Response(null, { headers: { "X-Balance-Remaining": "7" } }));
      return [seen, c1.lastBalanceUsd]; // c1 is alive until here
    };
    expect(await shared()).toEqual([12.5, 7]);
    if (gc) {
      // every controller dropped and nothing pending: the next one starts afresh (the state was let go)
      await settledHeap();
      expect(new X402PaymentController({ wallet: new EvmWallet(KEY_A) }).lastBalanceUsd).toBeUndefined();
    }
  });

  it("keep a signed payment whose outcome is unknown after every controller is dropped: re-sent, never re-signed", async () => {
    const topUpUrl = `${svc.url}/x402/top-up`;
    const send = (input: string | URL | Request, init?: RequestInit) => fetch(input, init);
    const options = { policy: { allowedPayees: [PINNED] }, maxResends: 0, resendDelayMs: 0, baseUrl: svc.url };
    const first = async () => {
      const c = new X402PaymentController({ wallet: new EvmWallet(KEY_B), ...options });
      // only booleans leave: an error's unformatted stack would hold the controller (a receiver on it)
      const failed = (await c.topUp(send, topUpUrl).catch((e: unknown) => e)) instanceof PaymentFailedError;
      return [failed, c.hasPendingPayment];
    };
    expect(await first()).toEqual([true, true]); // its answer was lost and the transactions could not be read
    await settledHeap();
    const later = new X402PaymentController({ wallet: new EvmWallet(KEY_B), ...options });
    expect(later.hasPendingPayment).toBe(true);
    const result = await later.topUp(send, topUpUrl);
    expect(result.amountUsd).toBe(5);
    expect(svc.payments).toHaveLength(2);
    expect(new Set(svc.payments).size).toBe(1); // the same signed bytes, sent twice
    expect(later.hasPendingPayment).toBe(false);
  });
});

describe("the bounded maps", () => {
  it("SharedRegistry: one value per key while an owner holds it; let go without owners unless kept", async () => {
    const r = new SharedRegistry<{ n: number }>();
    let made = 0;
    const owner = { v: r.get("a", () => ({ n: ++made })) };
    (() => r.get("b", () => ({ n: ++made })))(); // no owner
    const kept = (() => {
      const v = r.get("c", () => ({ n: ++made }));
      r.keep(v, Number.POSITIVE_INFINITY); // e.g. a pending payment
      return v.n;
    })();
    (() =>
      r.keep(
        r.get("d", () => ({ n: ++made })),
        Date.now() + 2_000,
      ))(); // matters for 2 s
    await settledHeap();
    expect(r.get("a", () => ({ n: ++made }))).toBe(owner.v); // shared while owned
    expect(r.peek("c")?.n).toBe(kept);
    if (gc) {
      expect(r.peek("b")).toBeUndefined();
      expect(r.peek("d")).toBeDefined();
      // the hold ends; the sweep (at most once a second) lets it go: bounded wait
      for (let i = 0; i < 60 && r.peek("d"); i++) {
        await turn(100);
        await settledHeap();
      }
      expect(r.peek("d")).toBeUndefined();
      r.keep(r.peek("c")!, 0); // released (a payment settled)
      await settledHeap();
      expect(r.peek("c")).toBeUndefined();
      expect(r.size.keys).toBe(1);
    }
    expect(owner.v.n).toBe(1);
  });

  it("LruMap: keeps the most recently used entries up to its capacity", () => {
    const m = new LruMap<string, number>(2);
    m.set("a", 1).set("b", 2);
    expect(m.get("a")).toBe(1); // a is now the most recent
    m.set("c", 3);
    expect(m.has("b")).toBe(false);
    expect([m.get("a"), m.get("c"), m.size]).toEqual([1, 3, 2]);
    expect(() => new LruMap(0)).toThrow(RangeError);
  });
});
