/**
 * The client side of the proxy's one-request-at-a-time rule: crypto RPC calls of one credential (API key or
 * wallet) are queued in the fetch stack, across client objects and faces, so none is sent to wait at the proxy and
 * be refused with `429 "Another request for this user is in flight"`, and two calls under one Idempotency-Key are
 * never at the proxy together (it would run and bill both). The upstream takes 700 ms per call: longer than the
 * emulator's (and the live proxy's) 0.5 s wait, so any call sent beside another would draw that 429.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceClient } from "../../src/client.js";
import { CryptoRpcToolkit } from "../../src/crypto-rpc/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { EvmWallet } from "../../src/evm/index.js";

const SLOW_MS = 700;
let node: { url: string; active: number; maxActive: number; calls: number; delayMs: number; server: Server };
let emu: Emulator;

beforeAll(async () => {
  const state = { active: 0, maxActive: 0, calls: 0, delayMs: SLOW_MS };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      state.active++;
      state.calls++;
      state.maxActive = Math.max(state.maxActive, state.active);
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { id: number } | { id: number }[];
      const answer = (item: { id: number }) => ({ jsonrpc: "2.0", id: item.id, result: "0x2105" });
      setTimeout(() => {
        state.active--;
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(Array.isArray(body) ? body.map(answer) : answer(body)));
      }, state.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  node = Object.assign(state, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server });
  emu = await startEmulator({ apiKeys: ["k"], walletStartingUsd: 10, upstreams: { "base-mainnet": node.url }, networks: ["base-mainnet"] });
});
afterAll(async () => {
  await emu?.close();
  await new Promise<void>((resolve) => node?.server.close(() => resolve()));
});

/** a fetch that records each crypto RPC answer's status */
function wire() {
  const statuses: number[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await globalThis.fetch(input, init);
    if (String(typeof input === "string" ? input : input instanceof URL ? input.href : input.url).includes("/crypto/rpc/base-mainnet"))
      statuses.push(res.status);
    return res;
  };
  return { fetch, statuses };
}

describe("crypto RPC, one call at a time per credential", () => {
  it("four parallel calls of one API key, from two client objects: all answered, one batch per client object, 0 in-flight 429s, one at a time upstream", async () => {
    const w = wire();
    const a = new ServiceClient({ apiKey: "k", baseUrl: emu.url, fetch: w.fetch });
    const b = new ServiceClient({ apiKey: "k", baseUrl: emu.url, fetch: w.fetch });
    node.maxActive = 0;
    const results = await Promise.all([
      a.cryptoRpc("base-mainnet", { method: "eth_chainId", id: 1 }),
      b.cryptoRpc("base-mainnet", { method: "eth_chainId", id: 2 }),
      a.cryptoRpc("base-mainnet", { method: "eth_chainId", id: 3 }),
      b.cryptoRpc("base-mainnet", { method: "eth_chainId", id: 4 }),
    ]);
    expect(results.map((r) => r.result)).toEqual(["0x2105", "0x2105", "0x2105", "0x2105"]);
    expect(results.map((r) => r.response.id)).toEqual([1, 2, 3, 4]);
    // each client object's two calls went out as one batch; the two batches one after the other
    expect(w.statuses).toEqual([200, 200]);
    expect(node.maxActive).toBe(1);
  });

  it("an agent's parallel tool calls through the toolkit (a wallet): each succeeds, 0 429s on the wire", async () => {
    const w = wire();
    const client = new ServiceClient({ wallet: new EvmWallet(Wallet.createRandom().privateKey), baseUrl: emu.url, fetch: w.fetch });
    const rpc = new CryptoRpcToolkit({ client }).getTools().find((t) => t.name === "crypto_rpc")!;
    // a wallet's first request goes alone (the payment layer learns the wallet's state from it)
    await client.cryptoRpc("base-mainnet", { method: "eth_chainId" });
    const outputs = await Promise.all(
      [1, 2, 3].map((i) =>
        rpc.invoke({
          id: `call_${i}`,
          name: "crypto_rpc",
          args: { network: "base-mainnet", method: "eth_chainId", params: [] },
          type: "tool_call",
        }),
      ),
    );
    for (const out of outputs) expect(String((out as { content: unknown }).content)).toContain("0x2105");
    // the first call, then the three parallel ones as one batch
    expect(w.statuses).toEqual([200, 200]);
  });

  it("two calls under one Idempotency-Key are never sent at once: the second is a late replay, billed once", async () => {
    // the live proxy deduplicates only a replay that arrives after the original finished: a twin sent beside it
    // would be run and billed again. 200 ms: short enough that the proxy's 0.5 s wait serves such a twin.
    node.delayMs = 200;
    try {
      const w = wire();
      const a = new ServiceClient({ apiKey: "k", baseUrl: emu.url, fetch: w.fetch });
      const b = new ServiceClient({ apiKey: "k", baseUrl: emu.url, fetch: w.fetch });
      const charges = () => emu.ledger.totals(emu.account("k")!).charges;
      const [calls, charged] = [node.calls, charges()];
      const key = { idempotencyKey: "same-key-queued" };
      const both = await Promise.all([
        a.cryptoRpc("base-mainnet", { method: "eth_chainId", id: 1 }, key),
        b.cryptoRpc("base-mainnet", { method: "eth_chainId", id: 1 }, key),
      ]);
      expect(both.map((r) => r.idempotentReplayed).sort()).toEqual([false, true]);
      expect(node.calls - calls).toBe(1);
      expect(charges() - charged).toBe(1);

      // the same two without the queue (concurrency: false) reach the proxy together: both run, both billed
      const unqueued = new ServiceClient({ apiKey: "k", baseUrl: emu.url, fetch: w.fetch, concurrency: false });
      const again = { idempotencyKey: "same-key-unqueued" };
      const twins = await Promise.all([
        unqueued.cryptoRpc("base-mainnet", { method: "eth_chainId", id: 1 }, again),
        unqueued.cryptoRpc("base-mainnet", { method: "eth_chainId", id: 1 }, again),
      ]);
      expect(twins.map((r) => r.idempotentReplayed)).toEqual([false, false]);
      expect(node.calls - calls).toBe(3);
      expect(charges() - charged).toBe(3);
    } finally {
      node.delayMs = SLOW_MS;
    }
  });

  it("another credential is not held up by the first one's queue", async () => {
    const w = wire();
    const key = new ServiceClient({ apiKey: "k", baseUrl: emu.url, fetch: w.fetch });
    const wallet = new ServiceClient({ wallet: new EvmWallet(Wallet.createRandom().privateKey), baseUrl: emu.url, fetch: w.fetch });
    node.maxActive = 0;
    await Promise.all([
      key.cryptoRpc("base-mainnet", { method: "eth_chainId", id: 1 }),
      wallet.cryptoRpc("base-mainnet", { method: "eth_chainId", id: 2 }),
    ]);
    expect(node.maxActive).toBe(2); // both were at the node together
    expect(w.statuses).toEqual([200, 200]);
  });
});
