/**
 * The live proxy's checks and billing (the service's crypto RPC guide), over real loopback HTTP: a node's own
 * non-2xx passes through billed (4xx 5 credits an item, 402/429/5xx nothing), the full estimated cost is checked
 * before forwarding, batch ids are unique, an empty batch is refused, every request (400s and replays included)
 * counts toward the per-minute cap, and the service's own refusals carry no cost headers. Seed mode keeps its own.
 * The upstream is a scripted JSON-RPC node that answers with the status a call's first param names.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStatusNode, type StatusNode } from "./status-node.js";
import { startEmulator, type Emulator, type EmulatorOptions } from "langchain-service-emulator";

let node: StatusNode;
const emulators: Emulator[] = [];

beforeAll(async () => {
  node = await startStatusNode();
});

afterAll(async () => {
  await Promise.all(emulators.map((e) => e.close()));
  await node?.close();
});

async function emulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const emu = await startEmulator({
    apiKeys: ["k", { key: "poor", usd: 0.00001, diem: 0 }],
    upstreams: { "base-mainnet": node.url, "ethereum-mainnet": "http://127.0.0.1:9" },
    networks: ["base-mainnet", "ethereum-mainnet"],
    ...options,
  });
  emulators.push(emu);
  return emu;
}

async function rpc(emu: Emulator, body: unknown, key = "k", extra: Record<string, string> = {}, network = "base-mainnet") {
  const res = await fetch(`${emu.url}/crypto/rpc/${network}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}`, ...extra },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, json: (await res.json()) as any };
}

const call = (id: number, params: unknown[] = [], method = "eth_call") => ({ jsonrpc: "2.0", id, method, params });
const costHeaders = (h: Headers) => [...h.keys()].filter((k) => k.includes("rpc-credits") || k.includes("rpc-cost-usd"));
const charged = (emu: Emulator, key = "k") => emu.ledger.totals(emu.account(key)!).charges;

describe("a node's own non-2xx (live)", () => {
  it("a node's 4xx passes through with its status, billed 5 credits an item, its internals stripped", async () => {
    const emu = await emulator();
    const before = charged(emu);
    const r = await rpc(emu, [call(1, [403]), call(2, [403])]);
    expect(r.status).toBe(403);
    expect(r.headers.get("x-service-rpc-credits")).toBe("10");
    expect(r.headers.get("x-service-rpc-cost-usd")).toBe((10 * 7e-7).toFixed(8));
    expect(r.headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/);
    expect(r.json).toHaveLength(2);
    expect(JSON.stringify(r.json)).not.toContain("internals");
    expect(charged(emu) - before).toBe(1);
  });

  it("a node's 402, 429 and 5xx pass through with cost headers of 0, not billed; a non-JSON body becomes a note", async () => {
    const emu = await emulator();
    const before = charged(emu);
    for (const status of [402, 429, 503, 502]) {
      const r = await rpc(emu, call(1, [status]));
      expect(r.status).toBe(status);
      expect(r.headers.get("x-service-rpc-credits")).toBe("0");
      expect(r.headers.get("x-service-rpc-cost-usd")).toBe("0.00000000");
    }
    expect((await rpc(emu, call(1, [502]))).json).toEqual({ error: "Upstream RPC error (HTTP 502)" });
    expect(charged(emu)).toBe(before);
  });

  it("seed mode keeps its own reading: a node's JSON is a 200 billed as errors, non-JSON the service's 500", async () => {
    const emu = await emulator({ mode: "seed" });
    const r = await rpc(emu, call(1, [403]));
    expect(r.status).toBe(200);
    expect(r.headers.get("x-service-rpc-credits")).toBe("5");
    expect((await rpc(emu, call(1, [502]))).status).toBe(500);
  });
});

describe("the service's own checks (live)", () => {
  it("the full estimated cost is checked before forwarding: a balance short of it is a 402, nothing sent or billed", async () => {
    const emu = await emulator();
    const calls = node.calls;
    // $0.00001 covers no 20-credit call ($0.000014)
    const r = await rpc(emu, call(1), "poor");
    expect(r.status).toBe(402);
    expect(costHeaders(r.headers)).toEqual([]);
    expect(node.calls).toBe(calls);
    expect(charged(emu, "poor")).toBe(0);
    // the seed refuses only a zero balance
    const seed = await emulator({ mode: "seed" });
    expect((await rpc(seed, call(1), "poor")).status).toBe(200);
  });

  it("duplicate ids in a batch and an empty batch are 400s without cost headers, never forwarded", async () => {
    const emu = await emulator();
    const calls = node.calls;
    const dup = await rpc(emu, [call(7), call(7)]);
    expect(dup.status).toBe(400);
    expect(dup.json.error).toMatch(/duplicate id 7/);
    expect(costHeaders(dup.headers)).toEqual([]);
    const empty = await rpc(emu, []);
    expect(empty.status).toBe(400);
    expect(costHeaders(empty.headers)).toEqual([]);
    expect(node.calls).toBe(calls);
    expect((await rpc(await emulator({ mode: "seed" }), [call(7), call(7)])).status).toBe(200);
  });

  it("400s and replays count toward the per-minute cap; the 429 has no cost headers", async () => {
    const emu = await emulator({ rateLimits: { cryptoRpc: { requests: 4 } } });
    expect((await rpc(emu, call(1, [], "eth_newFilter"))).status).toBe(400);
    expect((await rpc(emu, [])).status).toBe(400);
    const key = { "idempotency-key": "count-me" };
    expect((await rpc(emu, call(1), "k", key)).status).toBe(200);
    const replay = await rpc(emu, call(1), "k", key);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    const refused = await rpc(emu, call(2));
    expect(refused.status).toBe(429);
    expect(costHeaders(refused.headers)).toEqual([]);
  });

  it("the service's 500 for a node it cannot reach carries no cost headers and costs nothing", async () => {
    const emu = await emulator();
    const r = await rpc(emu, call(1), "k", {}, "ethereum-mainnet");
    expect(r.status).toBe(500);
    expect(costHeaders(r.headers)).toEqual([]);
    expect(charged(emu)).toBe(0);
  });
});
