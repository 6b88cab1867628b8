/**
 * Defects found by the contract audit of the emulator (each test failed before its fix): a concurrent twin
 * under one Idempotency-Key, the insufficient-credit 402's top-up instructions without a Base rail, the
 * always-present headers on an unexpected 500, and HEAD on GET routes.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startEmulator, type Emulator, type Route } from "../../src/emulator/index.js";
import { createSiwxHeader } from "../../src/x402/siwx.js";
import { EvmWallet } from "../../src/x402/wallets.js";
import { bearer, postJson } from "./helpers.js";

// a throwaway local key (ganache's deterministic account 1), never a real one
const wallet = new EvmWallet("0x6cbed15c793ce57650b9877cf6fa156fbef513c4e6134f022a85b1ffdd59b2a1");

let emu: Emulator | undefined;
let upstream: Server | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
  await new Promise<void>((r) => (upstream ? upstream.close(() => r()) : r()));
  upstream = undefined;
});

/** A JSON-RPC node that answers after `delayMs` and counts the calls it got. */
async function slowNode(delayMs: number): Promise<{ url: string; calls: () => number }> {
  let calls = 0;
  upstream = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      calls++;
      const { id } = JSON.parse(body) as { id: number };
      setTimeout(() => {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ jsonrpc: "2.0", id, result: "0x10" }));
      }, delayMs);
    });
  });
  await new Promise<void>((r) => upstream!.listen(0, "127.0.0.1", () => r()));
  return { url: `http://127.0.0.1:${(upstream!.address() as AddressInfo).port}`, calls: () => calls };
}

describe("contract audit fixes", () => {
  it("concurrent requests under one Idempotency-Key are forwarded and billed once, the twins replayed", async () => {
    const node = await slowNode(150);
    emu = await startEmulator({ apiKeys: ["k1"], upstreams: { "ethereum-mainnet": node.url } });
    const send = () =>
      postJson(`${emu!.url}/crypto/rpc/ethereum-mainnet`, { jsonrpc: "2.0", id: 1, method: "eth_blockNumber" }, {
        ...bearer("k1"),
        "idempotency-key": "same-key",
      });
    const answers = await Promise.all([send(), send(), send()]);
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(node.calls()).toBe(1);
    expect(emu.ledger.totals(emu.account("k1")!).charges).toBe(1);
    expect(answers.map((r) => r.headers.get("idempotent-replayed")).sort()).toEqual([null, "true", "true"]);
    expect(new Set(answers.map((r) => r.headers.get("x-request-id"))).size).toBe(1);
    // a different body under a key still in flight is refused, as it is once the key is kept
    const first = postJson(`${emu.url}/crypto/rpc/ethereum-mainnet`, { jsonrpc: "2.0", id: 1, method: "eth_blockNumber" }, {
      ...bearer("k1"),
      "idempotency-key": "key-2",
    });
    await new Promise((r) => setTimeout(r, 50));
    const other = await postJson(`${emu.url}/crypto/rpc/ethereum-mainnet`, { jsonrpc: "2.0", id: 2, method: "eth_chainId" }, {
      ...bearer("k1"),
      "idempotency-key": "key-2",
    });
    expect(other.status).toBe(400);
    expect((await first).status).toBe(200);
  });

  it("the insufficient-credit 402's top-up instructions name a rail the top-up route offers", async () => {
    emu = await startEmulator({ walletStartingUsd: 0 });
    const url = `${emu.url}/chat/completions`;
    const res = await postJson(url, { model: "emu-s", messages: [{ role: "user", content: "hi" }] }, {
      "sign-in-with-x": await createSiwxHeader(wallet, url),
    });
    expect(res.status).toBe(402);
    const body = await res.json();
    // the instructions send the wallet to the top-up route (its 402 header is only a hint: live, it prices $10)
    const offered = (await (await fetch(`${emu.url}/x402/top-up`, { method: "POST" })).json()).accepts as Array<Record<string, string>>;
    expect(offered.length).toBeGreaterThan(0);
    const option = offered.find((o) => o.network === body.topUpInstructions.network);
    expect(option, JSON.stringify(body.topUpInstructions)).toBeDefined();
    expect(body.topUpInstructions.receiverWallet).toBe(option!.payTo);
    expect(body.topUpInstructions.tokenAddress).toBe(option!.asset);
  });

  it("an unexpected 500 still carries the always-present headers", async () => {
    const broken: Route = { method: "GET", pattern: "/broken", auth: "public", handler: () => { throw new Error("bug in a route"); } };
    emu = await startEmulator({ routes: [broken] });
    const stderr = process.stderr.write;
    process.stderr.write = (() => true) as typeof process.stderr.write;
    let res: Response;
    try {
      res = await fetch(`${emu.url}/broken`);
    } finally {
      process.stderr.write = stderr;
    }
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: "Internal server error" });
    expect(res.headers.get("cf-ray")).toMatch(/\S/);
    expect(res.headers.get("x-service-version")).toMatch(/^\d{8}\.\d{6}$/);
    expect(res.headers.get("date")).toMatch(/GMT$/);
  });

  it("HEAD on a GET route answers like GET without a body", async () => {
    emu = await startEmulator({ brand: "acme" });
    const res = await fetch(`${emu.url}/models`, { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-acme-version")).toMatch(/^\d{8}\.\d{6}$/);
    expect(await res.text()).toBe("");
    expect((await fetch(`${emu.url}/chat/completions`, { method: "HEAD" })).status).toBe(405);
  });

  it("the abuse block's 429 says when to retry", async () => {
    emu = await startEmulator({ mode: "seed", apiKeys: ["k1"], rateLimits: { abuseMaxFailures: 2, abuseBlockMs: 10_000 } });
    let res: Response | undefined;
    for (let i = 0; i < 4; i++) res = await postJson(`${emu.url}/chat/completions`, "{bad", bearer("k1"));
    expect(res!.status).toBe(429);
    expect((await res!.json()).error).toMatch(/^Too many failed attempts/);
    const reset = Number(res!.headers.get("x-ratelimit-reset-requests"));
    expect(reset * 1000).toBeGreaterThanOrEqual(Date.now() + 8_000);
    expect(reset * 1000).toBeLessThanOrEqual(Date.now() + 11_000);
    expect(Number(res!.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});
