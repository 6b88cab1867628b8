/**
 * Defects found by the contract audit of the emulator (each test failed before its fix): Idempotency-Key as the live
 * proxy takes it (an early twin runs and is billed, a late replay is not billed but counts toward the cap, a
 * malformed key is ignored), the insufficient-credit 402's top-up instructions without a Base rail, the
 * always-present headers on an unexpected 500, and HEAD on GET routes.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startEmulator, type Emulator, type Route } from "langchain-service-emulator";
import { createSiwxHeader } from "../../src/x402/siwx.js";
import { EvmWallet } from "../../src/evm/index.js";
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
  const ETH = { jsonrpc: "2.0", id: 1, method: "eth_blockNumber" };
  const send = (body: unknown, key: string) =>
    postJson(`${emu!.url}/crypto/rpc/ethereum-mainnet`, body, { ...bearer("k1"), "idempotency-key": key });
  const charges = () => emu!.ledger.totals(emu!.account("k1")!).charges;

  it("an early twin under one Idempotency-Key (sent while the first is in flight) is forwarded and billed as its own request, in both modes", async () => {
    for (const mode of ["live", "seed"] as const) {
      const node = await slowNode(150);
      emu = await startEmulator({ mode, apiKeys: ["k1"], upstreams: { "ethereum-mainnet": node.url } });
      const first = send(ETH, "same-key");
      await new Promise((r) => setTimeout(r, 30));
      const twin = await send(ETH, "same-key");
      const answers = [await first, twin];
      expect(
        answers.map((r) => r.status),
        mode,
      ).toEqual([200, 200]);
      expect(
        answers.map((r) => r.headers.get("idempotent-replayed")),
        mode,
      ).toEqual([null, null]);
      expect(node.calls(), mode).toBe(2);
      expect(charges(), mode).toBe(2);
      expect(new Set(answers.map((r) => r.headers.get("x-request-id"))).size, mode).toBe(2);
      // a twin with another body is not told apart either: it runs too
      const other = send(ETH, "key-2");
      await new Promise((r) => setTimeout(r, 30));
      expect((await send({ ...ETH, id: 2, method: "eth_chainId" }, "key-2")).status, mode).toBe(200);
      expect((await other).status, mode).toBe(200);
      expect(charges(), mode).toBe(4);
      await emu.close();
      emu = undefined;
      await new Promise<void>((r) => upstream!.close(() => r()));
      upstream = undefined;
    }
  });

  it("a late replay (after the original finished) is answered from the stored answer, not billed, but counted toward the per-minute cap", async () => {
    const node = await slowNode(0);
    emu = await startEmulator({ apiKeys: ["k1"], upstreams: { "ethereum-mainnet": node.url }, rateLimits: { cryptoRpc: { requests: 2 } } });
    const first = await send(ETH, "late-key");
    const replay = await send(ETH, "late-key");
    expect([first.status, replay.status]).toEqual([200, 200]);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.headers.get("x-request-id")).toBe(first.headers.get("x-request-id"));
    expect(await replay.json()).toEqual(await first.json());
    expect(node.calls()).toBe(1);
    expect(charges()).toBe(1);
    // the cap of 2 a minute is spent: the replay was one of them
    const third = await send({ ...ETH, id: 3 }, "another-key");
    expect(third.status).toBe(429);
    expect(node.calls()).toBe(1);
    // live, every request counts before it is checked: another body under the kept key meets the spent cap first
    expect((await send({ ...ETH, id: 2 }, "late-key")).status).toBe(429);
  });

  it("a malformed Idempotency-Key is ignored live: the request runs and is billed as one without a key (seed: 400)", async () => {
    const node = await slowNode(0);
    emu = await startEmulator({ apiKeys: ["k1"], upstreams: { "ethereum-mainnet": node.url } });
    const res = await send(ETH, "not a key!");
    expect(res.status).toBe(200);
    expect(res.headers.get("idempotent-replayed")).toBeNull();
    expect(node.calls()).toBe(1);
    expect(charges()).toBe(1);
    // not kept under it either: the same again is served and billed again
    const again = await send(ETH, "not a key!");
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBeNull();
    expect(charges()).toBe(2);
    expect((await send(ETH, "x".repeat(256))).status).toBe(200);
    await emu.close();

    emu = await startEmulator({ mode: "seed", apiKeys: ["k1"], upstreams: { "ethereum-mainnet": node.url } });
    const seed = await send(ETH, "not a key!");
    expect(seed.status).toBe(400);
    expect((await seed.json()).error).toMatch(/Idempotency-Key/);
    expect(charges()).toBe(0);
    await emu.close();
    // the option wins over the mode
    emu = await startEmulator({
      apiKeys: ["k1"],
      upstreams: { "ethereum-mainnet": node.url },
      cryptoRpc: { malformedIdempotencyKey: "refuse" },
    });
    expect((await send(ETH, "not a key!")).status).toBe(400);
  });

  it("the insufficient-credit 402's top-up instructions name a rail the top-up route offers", async () => {
    emu = await startEmulator({ walletStartingUsd: 0 });
    const url = `${emu.url}/chat/completions`;
    const res = await postJson(
      url,
      { model: "emu-s", messages: [{ role: "user", content: "hi" }] },
      {
        "sign-in-with-x": await createSiwxHeader(wallet, url),
      },
    );
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
    const broken: Route = {
      method: "GET",
      pattern: "/broken",
      auth: "public",
      handler: () => {
        throw new Error("bug in a route");
      },
    };
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
