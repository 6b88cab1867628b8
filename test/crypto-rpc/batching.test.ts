/**
 * Concurrent single crypto RPC calls of one credential to one network are coalesced into one JSON-RPC batch in the
 * fetch stack (as ethers' provider does), against the live emulator over loopback: ten parallel `crypto_rpc` tool
 * calls are one request on the wire with unique ids, each caller gets its own answer; a method the lists refuse
 * never reaches the batch; a call under an Idempotency-Key goes alone; the batch's cost is cut per item, and the
 * items' figures (each caller's, a budget's, a SpendLog's) sum to the batch's headers and the emulator's ledger.
 * The upstream is a scripted node: each answer names its call (method and params), an item `["fail"]` is an error.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ToolMessage } from "@langchain/core/messages";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CryptoRpcToolkit } from "../../src/crypto-rpc/index.js";
import { ServiceClient, SpendBudget, SpendLog } from "../../src/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";

interface Item {
  id: unknown;
  method: string;
  params?: unknown[];
}
/** the bodies the node received, as arrays of items (a single call: one item, `single` true) */
let received: { items: Item[]; single: boolean }[] = [];
let server: Server;
let nodeUrl: string;
let emu: Emulator;
/** when set, the node holds its next answer until this settles (a request kept in flight for as long as a test needs) */
let holdNext: Promise<void> | undefined;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Item | Item[];
      const items = Array.isArray(body) ? body : [body];
      received.push({ items, single: !Array.isArray(body) });
      const answers = items.map((i) =>
        i.params?.[0] === "fail"
          ? { jsonrpc: "2.0", id: i.id, error: { code: -32602, message: "invalid params" } }
          : { jsonrpc: "2.0", id: i.id, result: `${i.method}:${JSON.stringify(i.params ?? [])}` },
      );
      const held = holdNext ?? Promise.resolve();
      holdNext = undefined;
      // a little latency, so a call sent beside another would meet the proxy's one-at-a-time rule
      void held.then(() =>
        setTimeout(() => {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify(Array.isArray(body) ? answers : answers[0]));
        }, 50),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  nodeUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  emu = await startEmulator({
    apiKeys: ["k1", "k2", "k3", "k4"],
    upstreams: { "base-mainnet": nodeUrl, "solana-devnet": nodeUrl },
    networks: ["base-mainnet", "solana-devnet"],
  });
});

afterAll(async () => {
  await emu?.close();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

/** a client whose fetch records each crypto RPC call's status on the wire */
function client(apiKey: string, extra: Record<string, unknown> = {}) {
  const statuses: number[] = [];
  const c = new ServiceClient({
    apiKey,
    baseUrl: emu.url,
    fetch: async (input, init) => {
      const res = await globalThis.fetch(input, init);
      if (/\/crypto\/rpc\/(?!networks)/.test(typeof input === "string" ? input : input instanceof URL ? input.href : input.url))
        statuses.push(res.status);
      return res;
    },
    ...extra,
  });
  return { client: c, statuses };
}

async function toolCall(tool: { invoke(call: unknown): Promise<unknown> }, i: number, method: string, params: unknown[]) {
  const message = (await tool.invoke({
    type: "tool_call",
    id: `call_${i}`,
    name: "crypto_rpc",
    args: { network: "base-mainnet", method, params },
  })) as ToolMessage;
  return String(message.content);
}

describe("parallel single calls become one batch", () => {
  it("ten parallel crypto_rpc tool calls: one request on the wire, unique ids, each call its own answer, no 429", async () => {
    const { client: c, statuses } = client("k1");
    const rpc = new CryptoRpcToolkit({ client: c }).getTools().find((t) => t.name === "crypto_rpc")!;
    await c.cryptoRpc("base-mainnet", { method: "eth_chainId" }); // the network list is read once, before
    received = [];
    statuses.length = 0;
    const addresses = Array.from({ length: 10 }, (_, i) => `0x${String(i).repeat(40)}`);
    const outputs = await Promise.all(addresses.map((a, i) => toolCall(rpc, i, "eth_getBalance", [a, "latest"])));
    outputs.forEach((out, i) => {
      expect(out).toContain(`eth_getBalance:${JSON.stringify([addresses[i], "latest"])}`.replace(/"/g, '\\"'));
    });
    expect(statuses).toEqual([200]);
    expect(received).toHaveLength(1);
    expect(received[0]!.single).toBe(false);
    const ids = received[0]!.items.map((i) => i.id);
    expect(new Set(ids).size).toBe(10);
  });

  it("a method the lists refuse is refused unsent, the others go out in one batch and succeed", async () => {
    const { client: c, statuses } = client("k2");
    const rpc = new CryptoRpcToolkit({ client: c }).getTools().find((t) => t.name === "crypto_rpc")!;
    await c.cryptoRpc("base-mainnet", { method: "eth_chainId" });
    received = [];
    statuses.length = 0;
    const outputs = await Promise.all([
      toolCall(rpc, 0, "eth_blockNumber", []),
      toolCall(rpc, 1, "eth_newFilter", [{}]),
      toolCall(rpc, 2, "eth_gasPrice", []),
      toolCall(rpc, 3, "eth_chainId", []),
    ]);
    expect(outputs[1]).toMatch(/eth_newFilter/);
    expect(outputs[1]).toMatch(/not supported|eth_getLogs/);
    expect(outputs[0]).toContain("eth_blockNumber:[]");
    expect(outputs[3]).toContain("eth_chainId:[]");
    expect(statuses).toEqual([200]);
    expect(received.flatMap((r) => r.items.map((i) => i.method)).sort()).toEqual(["eth_blockNumber", "eth_chainId", "eth_gasPrice"]);
  });

  it("a call under an Idempotency-Key is sent alone, the others together", async () => {
    const { client: c, statuses } = client("k3");
    await c.cryptoRpc("base-mainnet", { method: "eth_chainId" });
    received = [];
    statuses.length = 0;
    const results = await Promise.all([
      c.cryptoRpc("base-mainnet", { method: "eth_blockNumber", id: 1 }),
      c.cryptoRpc("base-mainnet", { method: "eth_sendRawTransaction", params: ["0xf00d"], id: 1 }, { idempotencyKey: "send-once" }),
      c.cryptoRpc("base-mainnet", { method: "eth_gasPrice", id: 1 }),
      c.cryptoRpc("base-mainnet", { method: "eth_chainId", id: 1 }),
    ]);
    expect(results.map((r) => r.result)).toEqual([
      "eth_blockNumber:[]",
      'eth_sendRawTransaction:["0xf00d"]',
      "eth_gasPrice:[]",
      "eth_chainId:[]",
    ]);
    expect(results.map((r) => r.response.id)).toEqual([1, 1, 1, 1]);
    expect(statuses).toEqual([200, 200]);
    const alone = received.find((r) => r.single)!;
    expect(alone.items.map((i) => i.method)).toEqual(["eth_sendRawTransaction"]);
    expect(received.find((r) => !r.single)!.items.map((i) => i.method)).toEqual(["eth_blockNumber", "eth_gasPrice", "eth_chainId"]);
  });

  it("a caller that gives up is out of the batch; the others are answered; coalescing can be turned off", async () => {
    // a long window, so the caller gives up while its call waits in the open batch
    const { client: c } = client("k3", { concurrency: { cryptoRpcBatchStallMs: 300 } });
    await c.cryptoRpc("base-mainnet", { method: "eth_chainId" });
    received = [];
    const gone = new AbortController();
    const calls = [
      c.cryptoRpc("base-mainnet", { method: "eth_blockNumber" }),
      c.cryptoRpc("base-mainnet", { method: "eth_gasPrice" }, { signal: gone.signal }),
      c.cryptoRpc("base-mainnet", { method: "eth_chainId" }),
    ];
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(received).toEqual([]); // still in the window
    gone.abort(new Error("the caller left"));
    const [a, b, d] = await Promise.allSettled(calls);
    expect(b!.status).toBe("rejected");
    const result = (r: PromiseSettledResult<{ result?: unknown }>) => (r.status === "fulfilled" ? r.value.result : r.reason);
    expect(result(a!)).toBe("eth_blockNumber:[]");
    expect(result(d!)).toBe("eth_chainId:[]");
    expect(received.flatMap((r) => r.items.map((i) => i.method))).toEqual(["eth_blockNumber", "eth_chainId"]);

    const off = client("k3", { concurrency: { cryptoRpcBatchMaxCount: 1 } });
    await Promise.all([
      off.client.cryptoRpc("base-mainnet", { method: "eth_chainId" }),
      off.client.cryptoRpc("base-mainnet", { method: "eth_gasPrice" }),
    ]);
    expect(off.statuses).toEqual([200, 200]);
  });

  it("the batch's cost is cut per item: each caller's, the budget's and the log's figures sum to the batch's", async () => {
    const budget = new SpendBudget({ maxUsd: 1, name: "rpc-batch" });
    const log = new SpendLog();
    const { client: c, statuses } = client("k4", { budget, spendLog: log });
    await c.cryptoRpc("base-mainnet", { method: "eth_chainId" });
    const before = { spent: budget.spentUsd, records: log.charges.length, ledger: emu.ledger.apiKey("k4")!.entries.length };
    received = [];
    statuses.length = 0;
    const results = await Promise.all([
      c.cryptoRpc("base-mainnet", { method: "eth_blockNumber" }),
      c.cryptoRpc("base-mainnet", { method: "debug_traceTransaction", params: ["0xabc"] }), // 2×: 40 credits
      c.cryptoRpc("base-mainnet", { method: "eth_call", params: ["fail"] }), // a JSON-RPC error: 5 credits
      c.cryptoRpc("base-mainnet", { method: "eth_gasPrice" }),
    ]);
    expect(statuses).toEqual([200]);
    expect(results.map((r) => r.credits)).toEqual([20, 40, 5, 20]);
    expect(results[2]!.error).toMatchObject({ code: -32602 });
    // the emulator charged the batch once, 85 credits ($0.0000595; its ledger keeps six decimals); the items'
    // figures sum to the batch's headers exactly
    const entries = emu.ledger.apiKey("k4")!.entries.slice(before.ledger);
    expect(entries).toHaveLength(1);
    expect(Math.abs(entries[0]!.amount)).toBeCloseTo(85 * 7e-7, 6);
    const nano = (usd: number) => Math.round(usd * 1e9);
    expect(results.map((r) => nano(r.costUsd!))).toEqual([14_000, 28_000, 3_500, 14_000]);
    expect(nano(budget.spentUsd - before.spent)).toBe(59_500);
    expect(nano(log.totals().chargedUsd)).toBe(nano(20 * 7e-7) + 59_500);
    const records = log.charges.slice(before.records);
    expect(records.map((r) => r.rpcCredits)).toEqual([20, 40, 5, 20]);
    expect(records.every((r) => r.requestId === results[0]!.requestId)).toBe(true);
  });

  it("calls that arrive one by one while a request is in flight go out together next: two requests on the wire, not one each", async () => {
    const { client: c, statuses } = client("k4");
    await c.cryptoRpc("base-mainnet", { method: "eth_chainId" });
    received = [];
    let release!: () => void;
    holdNext = new Promise<void>((resolve) => (release = resolve));
    const first = c.cryptoRpc("base-mainnet", { method: "eth_blockNumber" });
    while (received.length === 0) await new Promise((resolve) => setTimeout(resolve, 2));
    // three more, each in a later turn and further apart than any batching window, while the first is still out
    const later: Promise<{ result?: unknown }>[] = [];
    for (const method of ["eth_gasPrice", "eth_chainId", "net_version"]) {
      later.push(c.cryptoRpc("base-mainnet", { method }));
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    release();
    const answers = await Promise.all([first, ...later]);
    expect(answers.map((a) => a.result)).toEqual(["eth_blockNumber:[]", "eth_gasPrice:[]", "eth_chainId:[]", "net_version:[]"]);
    expect(received.map((r) => r.items.map((i) => i.method))).toEqual([
      ["eth_blockNumber"],
      ["eth_gasPrice", "eth_chainId", "net_version"],
    ]);
    expect(statuses.filter((s) => s === 429)).toEqual([]);
  });
});
