/**
 * The emulator's crypto RPC proxy over real loopback HTTP, forwarding EVM slugs to a real ganache chain:
 * billing and its headers, batches, refusals (400s), idempotency, upstream failures, auth.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import {
  RPC_PRICE_PER_CREDIT_USD,
  methodTier,
  rpcCredits,
  unsupportedReason,
} from "../../packages/langchain-service-emulator/src/routes/crypto-rpc.js";

const KEY = "proxy-key";
let emu: Emulator;
let htmlUpstream: Server;
let deadPort: number;

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  // an upstream that answers HTML, like a misconfigured gateway
  htmlUpstream = createServer((_req, res) => {
    res.writeHead(502, { "content-type": "text/html" });
    res.end("<html><body>Bad Gateway</body></html>");
  });
  const htmlPort = await listen(htmlUpstream);
  // a port with nothing listening: take one and free it
  const probe = createServer();
  deadPort = await listen(probe);
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  emu = await startEmulator({
    chain: true,
    apiKeys: [KEY, { key: "broke", usd: 0, diem: 0 }, "limited"],
    upstreams: {
      "linea-sepolia": `http://127.0.0.1:${htmlPort}`,
      "bsc-testnet": `http://127.0.0.1:${deadPort}`,
    },
  });
});

afterAll(async () => {
  await emu?.close();
  await new Promise<void>((resolve) => (htmlUpstream ? htmlUpstream.close(() => resolve()) : resolve()));
});

async function rpc(network: string, body: unknown, headers: Record<string, string> = {}, key: string | null = KEY) {
  const res = await fetch(`${emu.url}/crypto/rpc/${network}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, headers: res.headers, json: json as any };
}

describe("pricing rules", () => {
  it("prices per credit: base by chain × method tier", () => {
    expect(rpcCredits("base-mainnet", "eth_call")).toBe(20);
    expect(rpcCredits("zksync-mainnet", "eth_call")).toBe(30);
    expect(rpcCredits("solana-mainnet", "getBalance")).toBe(30);
    expect(rpcCredits("starknet-mainnet", "starknet_call")).toBe(20);
    expect(methodTier("debug_traceTransaction")).toBe(2);
    expect(methodTier("trace_replayTransaction")).toBe(4);
    expect(methodTier("getSupply")).toBe(4);
    expect(rpcCredits("ethereum-mainnet", "trace_replayBlockTransactions")).toBe(80);
  });

  it("refuses filters, subscriptions, node-key methods and cross-family calls", () => {
    expect(unsupportedReason("evm", "eth_newFilter")).toMatch(/eth_getLogs/);
    expect(unsupportedReason("evm", "eth_subscribe")).toMatch(/WebSocket/);
    expect(unsupportedReason("solana", "accountSubscribe")).toMatch(/WebSocket/);
    expect(unsupportedReason("evm", "eth_sendTransaction")).toMatch(/sign locally/);
    expect(unsupportedReason("evm", "evm_setAccountCode")).toBeDefined();
    expect(unsupportedReason("starknet", "eth_call")).toBeDefined();
    expect(unsupportedReason("evm", "eth_sendRawTransaction")).toBeUndefined();
    expect(unsupportedReason("solana", "getBalance")).toBeUndefined();
  });
});

describe("POST /crypto/rpc/{network}", () => {
  it("forwards a call to the local chain, bills 20 credits and says so in the headers", async () => {
    const before = emu.ledger.available(emu.ledger.apiKey(KEY)!);
    const r = await rpc("base-mainnet", { jsonrpc: "2.0", id: 7, method: "eth_chainId", params: [] });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ jsonrpc: "2.0", id: 7, result: "0x2105" });
    expect(r.headers.get("content-type")).toMatch(/application\/json/);
    expect(r.headers.get("x-service-rpc-credits")).toBe("20");
    expect(r.headers.get("x-service-rpc-cost-usd")).toBe((20 * RPC_PRICE_PER_CREDIT_USD).toFixed(8));
    expect(r.headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/);
    expect(r.headers.get("idempotent-replayed")).toBeNull();
    const after = emu.ledger.available(emu.ledger.apiKey(KEY)!);
    expect(before - after).toBeCloseTo(20 * RPC_PRICE_PER_CREDIT_USD, 9);
    const entry = emu.ledger.apiKey(KEY)!.entries.at(-1)!;
    expect(entry.kind).toBe("crypto-rpc");
    expect(entry.requestId).toBe(r.headers.get("x-request-id"));
  });

  it("serves every EVM slug from the one local chain (the chain id is the chain's, not the slug's usual one)", async () => {
    const r = await rpc("ethereum-sepolia", { jsonrpc: "2.0", id: 1, method: "eth_chainId" });
    expect(r.json.result).toBe("0x2105");
  });

  it("bills a batch per item, JSON-RPC errors at 5 credits, and strips node stack traces", async () => {
    const r = await rpc("base-mainnet", [
      { jsonrpc: "2.0", id: 1, method: "eth_blockNumber" },
      { jsonrpc: "2.0", id: 2, method: "eth_getBalance", params: ["not-an-address", "latest"] },
      { jsonrpc: "2.0", id: 3, method: "debug_traceTransaction", params: [`0x${"00".repeat(32)}`] },
    ]);
    expect(r.status).toBe(200);
    expect(Array.isArray(r.json)).toBe(true);
    const [ok, bad, trace] = r.json;
    expect(ok.result).toMatch(/^0x/);
    expect(bad.error.code).toBeTypeOf("number");
    expect(JSON.stringify(r.json)).not.toContain("stack");
    expect(JSON.stringify(r.json)).not.toMatch(/node_modules|\.js:\d+/);
    // trace answers an error on ganache for an unknown hash: 5 credits; else 40
    const traceCredits = trace.error ? 5 : 40;
    expect(r.headers.get("x-service-rpc-credits")).toBe(String(20 + 5 + traceCredits));
  });

  it("rejects a batch over 100, an empty batch, malformed JSON-RPC and non-JSON bodies with 400", async () => {
    const big = Array.from({ length: 101 }, (_, i) => ({ jsonrpc: "2.0", id: i, method: "eth_blockNumber" }));
    const r1 = await rpc("base-mainnet", big);
    expect(r1.status).toBe(400);
    expect(r1.json.error).toMatch(/Batch too large: 101/);
    expect((await rpc("base-mainnet", [])).status).toBe(400);
    expect((await rpc("base-mainnet", { jsonrpc: "2.0", id: 1 })).json.error).toMatch(/method/);
    expect((await rpc("base-mainnet", { jsonrpc: "1.0", id: 1, method: "eth_chainId" })).status).toBe(400);
    expect((await rpc("base-mainnet", { id: 1, method: "eth_chainId", params: "x" })).json.error).toMatch(/params/);
    const r2 = await rpc("base-mainnet", "{not json");
    expect(r2.status).toBe(400);
    expect(r2.json.error).toMatch(/not valid JSON/);
  });

  it("rejects the whole batch when one method is unsupported, naming it, and charges nothing", async () => {
    const account = emu.ledger.apiKey(KEY)!;
    const before = account.entries.length;
    const r = await rpc("base-mainnet", [
      { jsonrpc: "2.0", id: 1, method: "eth_blockNumber" },
      { jsonrpc: "2.0", id: 2, method: "eth_newFilter", params: [{}] },
      { jsonrpc: "2.0", id: 3, method: "eth_subscribe", params: ["newHeads"] },
    ]);
    expect(r.status).toBe(400);
    expect(r.json.error).toContain("eth_newFilter");
    expect(r.json.error).toContain("eth_subscribe");
    expect(r.json.details.unsupportedMethods).toHaveLength(2);
    expect(account.entries.length).toBe(before);
    // node-held keys never reach ganache (it would sign with its unlocked accounts)
    expect((await rpc("base-mainnet", { jsonrpc: "2.0", id: 1, method: "eth_sendTransaction", params: [{}] })).status).toBe(400);
    expect((await rpc("base-mainnet", { jsonrpc: "2.0", id: 1, method: "evm_mine" })).status).toBe(400);
  });

  it("answers 400 for a slug outside the network list, listing the supported ones", async () => {
    const r = await rpc("dogecoin-mainnet", { jsonrpc: "2.0", id: 1, method: "eth_chainId" });
    expect(r.status).toBe(400);
    expect(r.json.error).toBe("Unsupported network: dogecoin-mainnet");
    expect(r.json.details.supportedNetworks).toContain("base-mainnet");
  });

  it("replays an idempotent request without re-sending or re-billing; another body with the key is a 400; a malformed key is ignored", async () => {
    const account = emu.ledger.apiKey(KEY)!;
    const body = { jsonrpc: "2.0", id: 1, method: "eth_blockNumber" };
    const first = await rpc("base-mainnet", body, { "idempotency-key": "idem-1" });
    const charges = account.entries.length;
    // move the chain on: a fresh request would see a later block
    const chain = emu.chain!;
    await fetch(chain.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "evm_mine" }),
    });
    const replay = await rpc("base-mainnet", body, { "idempotency-key": "idem-1" });
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.json).toEqual(first.json);
    expect(replay.headers.get("x-request-id")).toBe(first.headers.get("x-request-id"));
    expect(account.entries.length).toBe(charges);
    const fresh = await rpc("base-mainnet", body);
    expect(BigInt(fresh.json.result)).toBeGreaterThan(BigInt(first.json.result));

    const other = await rpc("base-mainnet", { ...body, id: 2 }, { "idempotency-key": "idem-1" });
    expect(other.status).toBe(400);
    expect(other.json.error).toMatch(/different request body/);
    // a malformed key is ignored, as the live proxy does (seed mode refuses it: test/emulator/audit.test.ts)
    const malformed = await rpc("base-mainnet", body, { "idempotency-key": "bad key!" });
    expect(malformed.status).toBe(200);
    expect(malformed.headers.get("idempotent-replayed")).toBeNull();
    // keys are per caller: another caller with the same key is served fresh
    const otherCaller = await rpc("base-mainnet", body, { "idempotency-key": "idem-1" }, "limited");
    expect(otherCaller.headers.get("idempotent-replayed")).toBeNull();
  });

  it("answers 400 for a published slug it has no node for (not listed); 500 when the upstream is down; a node's own non-2xx passes through (live)", async () => {
    const none = await rpc("starknet-mainnet", { jsonrpc: "2.0", id: 1, method: "starknet_blockNumber" });
    expect(none.status).toBe(400);
    expect(none.json.details.reason).toMatch(/no upstream node for starknet-mainnet/);
    const down = await rpc("bsc-testnet", { jsonrpc: "2.0", id: 1, method: "eth_chainId" });
    expect(down.status).toBe(500);
    expect(down.json.error).toMatch(/Upstream RPC request failed/);
    const html = await rpc("linea-sepolia", { jsonrpc: "2.0", id: 1, method: "eth_chainId" });
    expect(html.status).toBe(502);
    expect(html.json.error).toMatch(/Upstream RPC error \(HTTP 502\)/);
  });

  it("needs credentials (402 discovery without, 401 with a bad key) and balance (402)", async () => {
    const anon = await rpc("base-mainnet", { jsonrpc: "2.0", id: 1, method: "eth_chainId" }, {}, null);
    expect(anon.status).toBe(402);
    const bad = await rpc("base-mainnet", { jsonrpc: "2.0", id: 1, method: "eth_chainId" }, {}, "nope");
    expect(bad.status).toBe(401);
    const broke = await rpc("base-mainnet", { jsonrpc: "2.0", id: 1, method: "eth_chainId" }, {}, "broke");
    expect(broke.status).toBe(402);
    expect(broke.json.code).toBe("INSUFFICIENT_BALANCE");
  });
});

describe("per-caller request cap", () => {
  it("answers 429 with X-RateLimit-* once the window's requests are spent", async () => {
    const small = await startEmulator({
      chain: false,
      apiKeys: ["k"],
      upstreams: { "base-mainnet": emu.chain!.rpcUrl },
      rateLimits: { cryptoRpc: { requests: 3 } },
    });
    try {
      const call = () =>
        fetch(`${small.url}/crypto/rpc/base-mainnet`, {
          method: "POST",
          headers: { authorization: "Bearer k", "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId" }),
        });
      for (let i = 0; i < 3; i++) expect((await call()).status).toBe(200);
      const limited = await call();
      expect(limited.status).toBe(429);
      expect(limited.headers.get("x-ratelimit-limit")).toBe("3");
      expect(limited.headers.get("x-ratelimit-remaining")).toBe("0");
      expect(Number(limited.headers.get("x-ratelimit-reset"))).toBeGreaterThan(Date.now() / 1000);
      expect(((await limited.json()) as { customMessage: string }).customMessage).toMatch(/per minute/);
    } finally {
      await small.close();
    }
  });
});
