/**
 * Fidelity: rate limits, the rate-limit log's path, and 504s, as the published description has them.
 *
 * Emulator (wire level): a crypto RPC 429 carries only `X-RateLimit-Limit`, `X-RateLimit-Remaining`,
 * `X-RateLimit-Reset` (Unix seconds) and a message, never the chat limits' `x-ratelimit-*-requests`; the cap
 * is per key, 100 a minute by default (the paid tier's), configurable as `rateLimits.cryptoRpc`.
 *
 * Client, against that emulator (or a scripted loopback server for what the emulator cannot produce): a 429
 * waits once for the instant its headers name (`X-RateLimit-Reset` in seconds or milliseconds,
 * `x-ratelimit-reset-requests`, `retry-after`), never a backoff series; pacing learns the crypto RPC cap from
 * `X-RateLimit-*`; the rate-limit log is asked at `/api_keys/rate_limits/log` first; a 504 on a non-streaming
 * request is not re-sent and its error says to stream.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startEmulator, type Emulator, type EmulatorOptions } from "langchain-service-emulator";
import { ChatService } from "../../src/chat/index.js";
import { GatewayTimeoutError, RateLimitError, ServerError, ServiceClient, createServiceFetch, type FetchLike } from "../../src/index.js";
import { bearer, probeRoute, testClock } from "../emulator/helpers.js";
import { createSiwxHeader } from "../../src/x402/siwx.js";
import { EvmWallet } from "../../src/evm/index.js";

// --- fixtures ----------------------------------------------------------------------------------------

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A JSON-RPC node on loopback: answers every call (single or batch) with the Base chain id. */
async function upstream(): Promise<string> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      const parsed = JSON.parse(body) as { id?: unknown } | { id?: unknown }[];
      const answer = (r: { id?: unknown }) => ({ jsonrpc: "2.0", id: r.id ?? null, result: "0x2105" });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(Array.isArray(parsed) ? parsed.map(answer) : answer(parsed)));
    });
  });
  return listen(server);
}

async function emulator(options: EmulatorOptions): Promise<Emulator> {
  const emu = await startEmulator({ apiKeys: ["a", "b"], upstreams: { "base-mainnet": await upstream() }, ...options });
  closers.push(() => emu.close());
  return emu;
}

interface Send {
  path: string;
  status: number;
  /** ms since epoch when the request left */
  at: number;
  headers: Headers;
}

/** The stack's underlying fetch, recording what goes on the wire. */
function wire(): { fetch: FetchLike; sends: Send[]; to: (suffix: string) => Send[] } {
  const sends: Send[] = [];
  return {
    sends,
    to: (suffix) => sends.filter((s) => s.path.endsWith(suffix)),
    fetch: async (input, init) => {
      const at = Date.now();
      const res = await fetch(input, init);
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      sends.push({ path: new URL(url).pathname, status: res.status, at, headers: res.headers });
      return res;
    },
  };
}

const rpcCall = (emu: Emulator, key = "a") =>
  fetch(`${emu.url}/crypto/rpc/base-mainnet`, {
    method: "POST",
    headers: { ...bearer(key), "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId" }),
  });

const RPC_PATH = "/crypto/rpc/base-mainnet";
const ETH_CHAIN_ID = { method: "eth_chainId" } as const;

// --- emulator rule 1: the crypto RPC cap and its 429 ---------------------------------------------------

describe("emulator: the crypto RPC cap", () => {
  it("a 429 carries X-RateLimit-Limit, -Remaining, -Reset (Unix seconds) and a message, nothing of the chat limits", async () => {
    // the window's end comes when the test moves the emulator's clock on
    const clock = testClock({ frozen: true });
    const emu = await emulator({ now: clock.now, rateLimits: { cryptoRpc: { requests: 2, windowMs: 2_000 } } });
    const ok = [await rpcCall(emu), await rpcCall(emu)];
    expect(ok.map((r) => r.status)).toEqual([200, 200]);
    // "Set only when the rate limit is tripped"
    for (const r of ok) for (const h of ["x-ratelimit-limit", "x-ratelimit-reset"]) expect(r.headers.has(h)).toBe(false);
    // (a live answer's `x-ratelimit-remaining` is the error budget, always beside its `x-ratelimit-resets`)
    for (const r of ok) expect(r.headers.has("x-ratelimit-remaining")).toBe(r.headers.has("x-ratelimit-resets"));

    const limited = await rpcCall(emu);
    expect(limited.status).toBe(429);
    expect(limited.headers.get("x-ratelimit-limit")).toBe("2");
    expect(limited.headers.get("x-ratelimit-remaining")).toBe("0");
    const reset = limited.headers.get("x-ratelimit-reset")!;
    expect(reset).toMatch(/^\d{10}$/); // Unix seconds
    expect(Number(reset) * 1000).toBeGreaterThan(clock.now());
    expect(Number(reset) * 1000).toBeLessThanOrEqual(clock.now() + 2_000);
    // only the published three: no x-ratelimit-reset-requests (or any other chat-limit header) to wait on
    const rateHeaders = [...limited.headers.keys()].filter((h) => h.startsWith("x-ratelimit") || h === "retry-after");
    expect(rateHeaders.sort()).toEqual(["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]);
    const body = (await limited.json()) as { error: string; customMessage: string };
    expect(body.error).toBe("Rate limit exceeded");
    expect(body.customMessage).toMatch(/per minute/);

    // per key: another key has its own window
    expect((await rpcCall(emu, "b")).status).toBe(200);
    // the window's end is the reset instant: refused a millisecond before it, served again right there
    clock.advance(Number(reset) * 1000 - clock.now() - 1);
    expect((await rpcCall(emu)).status).toBe(429);
    clock.advance(1);
    expect((await rpcCall(emu)).status).toBe(200);
  });

  it("the default cap is the paid tier's 100 requests per minute", async () => {
    const emu = await emulator({});
    for (let i = 0; i < 100; i++) {
      const res = await rpcCall(emu);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    const limited = await rpcCall(emu);
    expect(limited.status).toBe(429);
    expect(limited.headers.get("x-ratelimit-limit")).toBe("100");
    const reset = Number(limited.headers.get("x-ratelimit-reset"));
    expect(reset * 1000).toBeGreaterThan(Date.now() + 55_000);
    expect(reset * 1000).toBeLessThanOrEqual(Date.now() + 60_000);
  });
});

// --- client 1: a 429 waits once, for the instant its headers name ---------------------------------------

describe("client: a 429 waits once for its reset", () => {
  it("a crypto RPC 429 waits for X-RateLimit-Reset and is re-sent once, after it (the strict emulator)", async () => {
    const emu = await emulator({ rateLimits: { cryptoRpc: { requests: 2, windowMs: 2_000 } } });
    const w = wire();
    // pacing off: this is the retry layer meeting a 429
    const client = new ServiceClient({ baseUrl: emu.url, apiKey: "a", fetch: w.fetch, pacing: false });
    for (let i = 0; i < 3; i++) expect((await client.cryptoRpc("base-mainnet", ETH_CHAIN_ID, { networks: false })).result).toBe("0x2105");
    const sends = w.to(RPC_PATH);
    expect(sends.map((s) => s.status)).toEqual([200, 200, 429, 200]);
    expect(sends[3]!.at).toBeGreaterThanOrEqual(Number(sends[2]!.headers.get("x-ratelimit-reset")) * 1000);
  });

  it("X-RateLimit-Reset in milliseconds is tolerated (a scripted server)", async () => {
    const resetAt = Date.now() + 800;
    const seen: number[] = [];
    const url = await listen(
      createServer((_req, res) => {
        seen.push(Date.now());
        if (Date.now() < resetAt) {
          res.writeHead(429, {
            "content-type": "application/json",
            "x-ratelimit-limit": "1",
            "x-ratelimit-remaining": "0",
            "x-ratelimit-reset": String(resetAt),
          });
          res.end(JSON.stringify({ error: "Rate limit exceeded" }));
        } else {
          res.writeHead(200, { "content-type": "application/json" });
          res.end("{}");
        }
      }),
    );
    const f = createServiceFetch({ baseUrl: `${url}/api/v1`, apiKey: "k-ms", pacing: false });
    expect((await f(`${url}/api/v1/x`)).status).toBe(200);
    expect(seen).toHaveLength(2);
    expect(seen[1]!).toBeGreaterThanOrEqual(resetAt);
  });

  it("a 429 naming no reset is re-sent once, not walked through a backoff series (a scripted server)", async () => {
    let sends = 0;
    const url = await listen(
      createServer((_req, res) => {
        sends++;
        res.writeHead(429, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: "Rate limit exceeded" }));
      }),
    );
    const f = createServiceFetch({ baseUrl: `${url}/api/v1`, apiKey: "k-none", pacing: false, retry: { baseDelayMs: 1, maxDelayMs: 2 } });
    await expect(f(`${url}/api/v1/x`)).rejects.toBeInstanceOf(RateLimitError);
    expect(sends).toBe(2);
  });

  it("RateLimitError.resetAt is the instant X-RateLimit-Reset names", async () => {
    const emu = await emulator({ rateLimits: { cryptoRpc: { requests: 1, windowMs: 2_000 } } });
    const client = new ServiceClient({ baseUrl: emu.url, apiKey: "a", retry: false, pacing: false });
    await client.cryptoRpc("base-mainnet", ETH_CHAIN_ID, { networks: false });
    const err = (await client.cryptoRpc("base-mainnet", ETH_CHAIN_ID, { networks: false }).catch((e) => e)) as RateLimitError;
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err.headers?.rateLimit?.reset).toBeDefined();
    expect(err.resetAt?.getTime()).toBe(err.headers!.rateLimit!.reset! * 1000);
    expect(err.message).toMatch(/per minute cap \(1\)/); // the customMessage says which cap
  });
});

// --- client 1: pacing learns the crypto RPC cap ----------------------------------------------------------

describe("client: pacing learns the crypto RPC cap from X-RateLimit-*", () => {
  it("sequential calls draw one 429 (the one that tells the cap), then stay inside every later window", async () => {
    const emu = await emulator({ rateLimits: { cryptoRpc: { requests: 2, windowMs: 2_000 } } });
    const w = wire();
    const client = new ServiceClient({ baseUrl: emu.url, apiKey: "a", fetch: w.fetch });
    for (let i = 0; i < 7; i++) expect((await client.cryptoRpc("base-mainnet", ETH_CHAIN_ID, { networks: false })).result).toBe("0x2105");
    const statuses = w.to(RPC_PATH).map((s) => s.status);
    expect(statuses.filter((s) => s === 429)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(7);
  });

  it("a concurrent burst: after the first reset no send draws a 429, and no call is refused twice", async () => {
    const emu = await emulator({ rateLimits: { cryptoRpc: { requests: 3, windowMs: 2_000 } } });
    const w = wire();
    // nine sends, not one batch: coalescing off, so pacing meets the cap
    const client = new ServiceClient({ baseUrl: emu.url, apiKey: "a", fetch: w.fetch, concurrency: { cryptoRpcBatchMaxCount: 1 } });
    const results = await Promise.all(Array.from({ length: 9 }, () => client.cryptoRpc("base-mainnet", ETH_CHAIN_ID, { networks: false })));
    expect(results.every((r) => r.result === "0x2105")).toBe(true);
    const sends = w.to(RPC_PATH);
    const refused = sends.filter((s) => s.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    const firstReset = Math.min(...refused.map((s) => Number(s.headers.get("x-ratelimit-reset")) * 1000));
    expect(refused.every((s) => s.at < firstReset)).toBe(true);
    // each call was refused at most once: 9 successes, and no more sends than 9 plus the refusals of the first window
    expect(sends.filter((s) => s.status === 200)).toHaveLength(9);
    expect(refused.length).toBeLessThanOrEqual(9 - 3);
  });

  it("the crypto RPC cap holds crypto RPC only: other calls of the same key are not held by it", async () => {
    const emu = await emulator({ rateLimits: { cryptoRpc: { requests: 1, windowMs: 10_000 } } });
    const w = wire();
    const client = new ServiceClient({ baseUrl: emu.url, apiKey: "a", fetch: w.fetch, retry: false });
    await client.cryptoRpc("base-mainnet", ETH_CHAIN_ID, { networks: false });
    await expect(client.cryptoRpc("base-mainnet", ETH_CHAIN_ID, { networks: false })).rejects.toBeInstanceOf(RateLimitError);
    const t = Date.now();
    await client.getRateLimits();
    expect(Date.now() - t).toBeLessThan(500);
  });
});

// --- client 6: the rate-limit log's published path --------------------------------------------------------

describe("client: the rate-limit log", () => {
  it("is asked at /api_keys/rate_limits/log, the published path, with nothing else on the wire (the strict emulator)", async () => {
    const emu = await emulator({ routes: [probeRoute], rateLimits: { tiers: { L: { requests: 1 } } } });
    for (let i = 0; i < 2; i++) {
      await fetch(`${emu.url}/probe/inference`, {
        method: "POST",
        headers: { ...bearer("a"), "content-type": "application/json" },
        body: JSON.stringify({ model: "emu-l" }),
      });
    }
    const w = wire();
    const client = new ServiceClient({ baseUrl: emu.url, apiKey: "a", fetch: w.fetch });
    const log = await client.getRateLimitLogs();
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ modelId: "emu-l", rateLimitType: "RPM", rateLimitTier: "paid" });
    expect(w.sends.map((s) => `${s.status} ${s.path}`)).toEqual(["200 /api/v1/api_keys/rate_limits/log"]);
  });
});

describe("emulator: the rate-limit log takes an ADMIN key (live)", () => {
  it("an inference key is 401 'Admin API key required', a wallet 401, an admin key served; seed mode serves any key", async () => {
    const keys = [
      { key: "admin", usd: 5, diem: 0 },
      { key: "inference", usd: 5, diem: 0, admin: false },
    ];
    const log = (emu: Emulator, headers: Record<string, string>) => fetch(`${emu.url}/api_keys/rate_limits/log`, { headers });
    const live = await emulator({ apiKeys: keys, walletStartingUsd: 1 });
    expect((await log(live, bearer("admin"))).status).toBe(200);
    const inference = await log(live, bearer("inference"));
    expect(inference.status).toBe(401);
    expect(await inference.json()).toEqual({ error: "Admin API key required" });
    const wallet = EvmWallet.random();
    const url = `${live.url}/api_keys/rate_limits/log`;
    expect((await log(live, { "sign-in-with-x": await createSiwxHeader(wallet, url) })).status).toBe(401);
    const seed = await emulator({ apiKeys: keys, mode: "seed" });
    expect((await log(seed, bearer("inference"))).status).toBe(200);
  });
});

// --- client 7: a 504 ------------------------------------------------------------------------------------

describe("client: a 504", () => {
  const chat = (extra: Record<string, unknown> = {}) => ({
    model: "emu-s",
    messages: [{ role: "user", content: "a long question" }],
    ...extra,
  });

  it("on a non-streaming request is not re-sent, and the error says to stream (the strict emulator)", async () => {
    const emu = await emulator({ faults: { errorRate: 1, statuses: [504], paths: ["/chat/completions"] } });
    const w = wire();
    const client = new ServiceClient({ baseUrl: emu.url, apiKey: "a", fetch: w.fetch, retry: { baseDelayMs: 1, maxDelayMs: 2 } });
    const err = await client.request("/chat/completions", { body: chat() }).catch((e) => e);
    expect(err).toBeInstanceOf(GatewayTimeoutError);
    expect(err).toBeInstanceOf(ServerError);
    expect(err.status).toBe(504);
    expect(err.message).toMatch(/stream=true/);
    expect(w.to("/chat/completions")).toHaveLength(1);
  });

  it("ChatService.invoke: one send, and the error says to stream", async () => {
    const emu = await emulator({ faults: { errorRate: 1, statuses: [504], paths: ["/chat/completions"] } });
    const w = wire();
    const model = new ChatService({
      model: "emu-s",
      baseUrl: emu.url,
      apiKey: "a",
      fetch: w.fetch,
      retry: { baseDelayMs: 1, maxDelayMs: 2 },
    });
    await expect(model.invoke("a long question")).rejects.toThrow(/stream=true/);
    expect(w.to("/chat/completions")).toHaveLength(1);
  });

  it("on a streaming request is still retried with backoff (the stream was asked for)", async () => {
    const emu = await emulator({ faults: { errorRate: 1, statuses: [504], paths: ["/chat/completions"] } });
    const w = wire();
    const client = new ServiceClient({
      baseUrl: emu.url,
      apiKey: "a",
      fetch: w.fetch,
      retry: { maxRetries: 2, baseDelayMs: 1, maxDelayMs: 2 },
    });
    const err = await client.request("/chat/completions", { body: chat({ stream: true }) }).catch((e) => e);
    expect(err).toBeInstanceOf(GatewayTimeoutError);
    expect(w.to("/chat/completions")).toHaveLength(3);
  });
});
