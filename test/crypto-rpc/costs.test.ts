/**
 * What crypto RPC calls cost a `SpendBudget` and a `SpendLog`, against the live emulator over loopback: a replay
 * (`Idempotent-Replayed: true`) repeats the original's credits header but is not billed, so it is counted once; a
 * node's own 4xx that the proxy relays is billed (5 credits an item) and counted; the service's own refusals carry
 * no cost headers and cost nothing. The upstream is a scripted node answering the status a call's first param names.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStatusNode, type StatusNode } from "./status-node.js";
import { ServiceClient, SpendBudget, SpendLog } from "../../src/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";

const CREDIT_USD = 7e-7;
let node: StatusNode;
let emu: Emulator;

beforeAll(async () => {
  node = await startStatusNode();
  emu = await startEmulator({
    apiKeys: ["k", "k2", "k3", "k5", { key: "poor", usd: 0.00001, diem: 0 }],
    upstreams: { "base-mainnet": node.url },
    networks: ["base-mainnet"],
  });
});

afterAll(async () => {
  await emu?.close();
  await node?.close();
});

function faces(apiKey: string) {
  const budget = new SpendBudget({ maxUsd: 1, name: `rpc-${apiKey}` });
  const log = new SpendLog();
  const client = new ServiceClient({ apiKey, baseUrl: emu.url, budget, spendLog: log, retry: false });
  return { budget, log, client };
}

describe("crypto RPC costs as a budget and a log see them", () => {
  it("a replay is counted once: its credits header repeats the original's, the budget and the log charge it nothing", async () => {
    const { budget, log, client } = faces("k");
    const key = { idempotencyKey: "replayed-once" };
    const first = await client.cryptoRpc("base-mainnet", { method: "eth_blockNumber", id: 1 }, key);
    const replay = await client.cryptoRpc("base-mainnet", { method: "eth_blockNumber", id: 1 }, key);
    expect(replay.idempotentReplayed).toBe(true);
    expect(replay.credits).toBe(first.credits); // what the header says
    expect(emu.ledger.totals(emu.account("k")!).charges).toBe(1);
    expect(budget.spentUsd).toBeCloseTo(20 * CREDIT_USD, 12);
    expect(log.totals().chargedUsd).toBeCloseTo(20 * CREDIT_USD, 12);
    expect(log.charges).toHaveLength(2);
    expect(log.charges[1]).toMatchObject({ requestId: first.requestId, costUsd: 0, rpcCredits: 0, replayed: true });
  });

  it("a node's own 4xx is relayed and billed 5 credits: the caller gets the error, the budget and the log the cost", async () => {
    const { budget, log, client } = faces("k2");
    await expect(client.cryptoRpc("base-mainnet", { method: "eth_call", params: [403], id: 1 })).rejects.toMatchObject({ status: 403 });
    expect(budget.spentUsd).toBeCloseTo(5 * CREDIT_USD, 12);
    expect(budget.reservedUsd).toBe(0);
    expect(log.charges).toMatchObject([{ kind: "crypto-rpc", source: "reported", rpcCredits: 5 }]);
    expect(log.totals().chargedUsd).toBeCloseTo(5 * CREDIT_USD, 12);
  });

  it("a node's 5xx is relayed at 0 credits; the service's own 402 carries no cost headers: neither costs anything", async () => {
    const k3 = faces("k3");
    await expect(k3.client.cryptoRpc("base-mainnet", { method: "eth_call", params: [503], id: 1 })).rejects.toMatchObject({ status: 503 });
    expect(k3.budget.spentUsd).toBe(0);
    const poor = faces("poor");
    await expect(poor.client.cryptoRpc("base-mainnet", { method: "eth_blockNumber", id: 1 })).rejects.toMatchObject({ status: 402 });
    expect(poor.budget.spentUsd).toBe(0);
    expect(poor.budget.reservedUsd).toBe(0);
    expect(poor.log.charges).toEqual([]);
  });

  it("a node's 4xx to a coalesced batch: each caller gets the error and its 5 credits, summing to the batch's 10", async () => {
    const { budget, log, client } = faces("k5");
    await client.cryptoRpc("base-mainnet", { method: "eth_chainId" });
    const spent = budget.spentUsd;
    const both = await Promise.allSettled([
      client.cryptoRpc("base-mainnet", { method: "eth_call", params: [403], id: 1 }),
      client.cryptoRpc("base-mainnet", { method: "eth_blockNumber", id: 1 }),
    ]);
    expect(both.map((r) => (r.status === "rejected" ? (r.reason as { status?: number }).status : 200))).toEqual([403, 403]);
    expect(log.charges.slice(1).map((c) => c.rpcCredits)).toEqual([5, 5]);
    expect(Math.round((budget.spentUsd - spent) * 1e9)).toBe(10 * 700);
  });
});
