/**
 * The crypto RPC proxy as the live service runs it, over real loopback HTTP: one request at a time per caller,
 * explicit method lists per family (the emulator's 400s and the tool's refusals before sending), the live
 * network list, and a malformed Idempotency-Key refused by the client (the live proxy would ignore it silently). The upstream is a scripted JSON-RPC node that can hold an answer until the test lets it go.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ToolMessage } from "@langchain/core/messages";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CryptoRpcToolkit, type CryptoToolOptions } from "../../src/crypto-rpc/index.js";
import { describeNetwork } from "../../src/crypto-rpc/networks.js";
import { RPC_IN_FLIGHT_MESSAGE } from "../../packages/langchain-service-emulator/src/routes/crypto-rpc.js";
import { startEmulator, type Emulator, type EmulatorOptions } from "langchain-service-emulator";
import { createSiwxHeader } from "../../src/x402/index.js";
import { EvmWallet } from "../../src/evm/index.js";
import { ValidationError } from "../../src/http/errors.js";
import { countingClient } from "./helpers.js";

/** A JSON-RPC node that answers `"0x1"` to everything, counts what it holds at once, and can hold an answer. */
interface ScriptedNode {
  url: string;
  /** methods in the order they arrived */
  seen: string[];
  /** the most requests it was answering at the same time */
  maxActive: number;
  /** holds the next request's answer until `release()`; `arrived` resolves when that request comes in */
  holdNext(): { arrived: Promise<void>; release(): void };
  close(): Promise<void>;
}

async function startScriptedNode(): Promise<ScriptedNode> {
  let active = 0;
  let hold: { arrive(): void; released: Promise<void> } | undefined;
  const node: ScriptedNode = {
    url: "",
    seen: [],
    maxActive: 0,
    holdNext() {
      let arrive!: () => void;
      let release!: () => void;
      const arrived = new Promise<void>((resolve) => (arrive = resolve));
      hold = { arrive, released: new Promise<void>((resolve) => (release = resolve)) };
      return { arrived, release };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      active++;
      node.maxActive = Math.max(node.maxActive, active);
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as
        | { id: unknown; method: string; params?: unknown[] }
        | { id: unknown; method: string; params?: unknown[] }[];
      const items = Array.isArray(body) ? body : [body];
      node.seen.push(...items.map((i) => i.method));
      const held = hold;
      hold = undefined;
      if (held) {
        held.arrive();
        await held.released;
      }
      active--;
      if (items.some((i) => i.params?.[0] === "fail")) {
        res.writeHead(502, { "content-type": "text/html" });
        res.end("<html>Bad Gateway</html>");
        return;
      }
      const answers = items.map((i) => ({ jsonrpc: "2.0", id: i.id, result: "0x1" }));
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(Array.isArray(body) ? answers : answers[0]));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  node.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return node;
}

let node: ScriptedNode;
const emulators: Emulator[] = [];

beforeAll(async () => {
  node = await startScriptedNode();
});

afterAll(async () => {
  await Promise.all(emulators.map((e) => e.close()));
  await node?.close();
});

const SLUGS = ["base-mainnet", "solana-devnet", "blast-mainnet", "blast-sepolia", "robinhood-mainnet", "robinhood-testnet"];

async function emulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const emu = await startEmulator({
    apiKeys: ["k1", "k2", { key: "broke", usd: 0, diem: 0 }],
    upstreams: Object.fromEntries(SLUGS.map((slug) => [slug, node.url])),
    ...options,
  });
  emulators.push(emu);
  return emu;
}

let nextId = 1;
function call(method: string, params: unknown[] = []) {
  return { jsonrpc: "2.0", id: nextId++, method, params };
}

/** `key`: an API key, or a wallet signing in with SIWX */
async function rpc(emu: Emulator, network: string, body: unknown, key: string | EvmWallet = "k1") {
  const url = `${emu.url}/crypto/rpc/${network}`;
  const auth: Record<string, string> =
    typeof key === "string" ? { authorization: `Bearer ${key}` } : { "sign-in-with-x": await createSiwxHeader(key, url) };
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, json: (await res.json()) as any };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("one request at a time per caller (live)", () => {
  it("a second request of the same key waits for the first and is served when it ends within the wait", async () => {
    const emu = await emulator();
    node.maxActive = 0;
    const held = node.holdNext();
    const first = rpc(emu, "base-mainnet", call("eth_blockNumber"));
    await held.arrived;
    const second = rpc(emu, "base-mainnet", [call("eth_chainId"), call("eth_gasPrice")]);
    await sleep(100); // the second is now waiting in the emulator
    held.release();
    expect((await first).status).toBe(200);
    const r = await second;
    expect(r.status).toBe(200);
    expect(r.json).toHaveLength(2);
    // the node never had both at once: the second went out only after the first was answered
    expect(node.maxActive).toBe(1);
  });

  it("a first request that outlasts the wait makes the second a 429 saying so, unbilled and without rate-limit headers", async () => {
    const emu = await emulator();
    const held = node.holdNext();
    const first = rpc(emu, "base-mainnet", call("eth_blockNumber"));
    await held.arrived;
    const entries = emu.ledger.apiKey("k1")!.entries.length;
    const seen = node.seen.length;
    const second = await rpc(emu, "base-mainnet", call("eth_chainId"));
    expect(second.status).toBe(429);
    expect(second.json).toEqual({ error: RPC_IN_FLIGHT_MESSAGE });
    expect([...second.headers.keys()].filter((h) => h.startsWith("x-ratelimit"))).toEqual([]);
    expect(node.seen.length).toBe(seen);
    expect(emu.ledger.apiKey("k1")!.entries.length).toBe(entries);
    held.release();
    expect((await first).status).toBe(200);
    // the turn is free again once the first is answered
    expect((await rpc(emu, "base-mainnet", call("eth_chainId"))).status).toBe(200);
  });

  it("another key is not held up, and its batch is one request", async () => {
    const emu = await emulator();
    const held = node.holdNext();
    const first = rpc(emu, "base-mainnet", call("eth_blockNumber"));
    await held.arrived;
    const other = await rpc(emu, "base-mainnet", [call("eth_chainId"), call("eth_blockNumber"), call("eth_gasPrice")], "k2");
    expect(other.status).toBe(200);
    expect(other.json).toHaveLength(3);
    held.release();
    expect((await first).status).toBe(200);
  });

  it("a wallet is a caller of its own: its second request waits as a key's does, another wallet's does not", async () => {
    const emu = await emulator({ walletStartingUsd: 1, rateLimits: { cryptoRpc: { inFlightWaitMs: 50 } } });
    const [wallet, other] = [EvmWallet.random(), EvmWallet.random()];
    const held = node.holdNext();
    const first = rpc(emu, "base-mainnet", call("eth_blockNumber"), wallet);
    await held.arrived;
    expect((await rpc(emu, "base-mainnet", call("eth_chainId"), wallet)).json).toEqual({ error: RPC_IN_FLIGHT_MESSAGE });
    expect((await rpc(emu, "base-mainnet", call("eth_chainId"), other)).status).toBe(200);
    expect((await rpc(emu, "base-mainnet", call("eth_chainId"), "k1")).status).toBe(200);
    held.release();
    expect((await first).status).toBe(200);
  });

  it("gives the turn back whatever the answer: an upstream failure, a 402, a refused method", async () => {
    // no wait at all: a turn not given back would turn the next request into a 429 at once
    const emu = await emulator({ rateLimits: { cryptoRpc: { inFlightWaitMs: 0 } } });
    expect((await rpc(emu, "base-mainnet", call("eth_call", ["fail"]))).status).toBe(502); // the node's own, passed through
    expect((await rpc(emu, "base-mainnet", call("debug_notAMethod"))).status).toBe(400);
    expect((await rpc(emu, "base-mainnet", call("eth_chainId"))).status).toBe(200);
    expect((await rpc(emu, "base-mainnet", call("eth_chainId"), "broke")).status).toBe(402);
    expect((await rpc(emu, "base-mainnet", call("eth_chainId"), "broke")).status).toBe(402);
  });

  it("seed mode has no such rule; the option wins over the mode either way", async () => {
    for (const options of [{ mode: "seed" }, { rateLimits: { cryptoRpc: { inFlightWaitMs: false } } }] as EmulatorOptions[]) {
      const emu = await emulator(options);
      node.maxActive = 0;
      const held = node.holdNext();
      const first = rpc(emu, "base-mainnet", call("eth_blockNumber"));
      await held.arrived;
      expect((await rpc(emu, "base-mainnet", call("eth_chainId"))).status).toBe(200);
      expect(node.maxActive).toBe(2);
      held.release();
      expect((await first).status).toBe(200);
    }
    const strictSeed = await emulator({ mode: "seed", rateLimits: { cryptoRpc: { inFlightWaitMs: 0 } } });
    const held = node.holdNext();
    const first = rpc(strictSeed, "base-mainnet", call("eth_blockNumber"));
    await held.arrived;
    expect((await rpc(strictSeed, "base-mainnet", call("eth_chainId"))).json).toEqual({ error: RPC_IN_FLIGHT_MESSAGE });
    held.release();
    await first;
  });
});

describe("explicit method lists (live)", () => {
  it("the proxy refuses unlisted names in listed namespaces, naming them, and whole batches with them", async () => {
    const emu = await emulator();
    const evmRefused = [
      "debug_notAMethod",
      "trace_notAMethod",
      "zks_notAMethod",
      "txpool_notAMethod",
      "eth_sign",
      "eth_accounts",
      "eth_getWork",
      "eth_submitWork",
      "eth_mining",
      "eth_hashrate",
      "getBalance",
      "starknet_call",
    ];
    for (const method of evmRefused) {
      const r = await rpc(emu, "base-mainnet", call(method));
      expect(r.status, method).toBe(400);
      expect(r.json.error, method).toContain(method);
      expect(r.json.details.unsupportedMethods[0].method).toBe(method);
    }
    for (const method of ["getAssetsByOwner", "getAsset", "getConfirmedBlock", "getConfirmedSignaturesForAddress2", "eth_call"]) {
      expect((await rpc(emu, "solana-devnet", call(method))).status, method).toBe(400);
    }
    const batch = await rpc(emu, "base-mainnet", [call("eth_chainId"), call("debug_notAMethod"), call("zks_getL1GasPrice")]);
    expect(batch.status).toBe(400);
    expect(batch.json.details.unsupportedMethods.map((m: { method: string }) => m.method)).toEqual(["debug_notAMethod"]);
  });

  it("the proxy forwards listed methods on any EVM chain (bundler and chain extensions too) and bills their tiers", async () => {
    const emu = await emulator();
    const standard = [
      "eth_sendUserOperation",
      "eth_estimateUserOperationGas",
      "eth_getUserOperationByHash",
      "eth_getUserOperationReceipt",
      "eth_supportedEntryPoints",
      "pimlico_getUserOperationGasPrice",
      "pimlico_getUserOperationStatus",
      "zks_getL1GasPrice",
      "linea_estimateGas",
      "bor_getAuthor",
      "eth_simulateV1",
    ];
    for (const method of standard) {
      const r = await rpc(emu, "blast-mainnet", call(method));
      expect(r.status, method).toBe(200);
      expect(r.headers.get("x-service-rpc-credits"), method).toBe("20");
    }
    const tiers: [string, string, string][] = [
      ["base-mainnet", "debug_traceTransaction", "40"],
      ["base-mainnet", "arbtrace_callMany", "40"],
      ["base-mainnet", "txpool_content", "80"],
      ["base-mainnet", "arbtrace_replayTransaction", "80"],
      ["solana-devnet", "getSupply", "120"],
    ];
    for (const [network, method, credits] of tiers) {
      const r = await rpc(emu, network, call(method));
      expect(r.status, method).toBe(200);
      expect(r.headers.get("x-service-rpc-credits"), method).toBe(credits);
    }
  });

  it("seed mode checks the published namespaces; the option wins over the mode either way", async () => {
    const seed = await emulator({ mode: "seed" });
    expect((await rpc(seed, "base-mainnet", call("debug_notAMethod"))).status).toBe(200);
    expect((await rpc(seed, "base-mainnet", call("zks_notAMethod"))).status).toBe(200);
    expect((await rpc(seed, "base-mainnet", call("eth_sign"))).status).toBe(400);
    const explicitSeed = await emulator({ mode: "seed", cryptoRpc: { methodAllowlist: "explicit" } });
    expect((await rpc(explicitSeed, "base-mainnet", call("debug_notAMethod"))).status).toBe(400);
    const namespacedLive = await emulator({ cryptoRpc: { methodAllowlist: "namespaces" } });
    expect((await rpc(namespacedLive, "base-mainnet", call("debug_notAMethod"))).status).toBe(200);
  });

  it("the crypto_rpc tool refuses unlisted methods before sending, sends listed ones, and extraMethods adds names", async () => {
    const emu = await emulator();
    const tools = (options: Partial<CryptoToolOptions> = {}) => {
      const counting = countingClient(emu, "k1", { retry: false });
      const tool = new CryptoRpcToolkit({ client: counting.client, ...options }).getTools().find((t) => t.name === "crypto_rpc")!;
      const invoke = async (method: string, network = "base-mainnet") => {
        const message = (await tool.invoke({
          type: "tool_call",
          id: "c",
          name: "crypto_rpc",
          args: { network, method, params: [] },
        })) as ToolMessage;
        return JSON.parse(message.content as string);
      };
      return { invoke, sent: () => counting.counts["/crypto/rpc/base-mainnet"] ?? 0 };
    };

    const readOnly = tools();
    for (const method of ["zks_notAMethod", "linea_notAMethod", "bor_notAMethod"]) {
      expect((await readOnly.invoke(method)).error.code, method).toBe("UNSUPPORTED_METHOD");
    }
    expect(readOnly.sent()).toBe(0);
    expect((await readOnly.invoke("zks_getL1GasPrice")).result).toBe("0x1");
    expect(readOnly.sent()).toBe(1);

    const writes = tools({ allowWrites: true });
    for (const method of ["debug_notAMethod", "trace_notAMethod", "txpool_notAMethod", "arbtrace_notAMethod", "zks_notAMethod"]) {
      const answer = await writes.invoke(method);
      expect(answer.error.code, method).toBe("UNSUPPORTED_METHOD");
      expect(answer.error.message, method).toContain(method);
    }
    expect(writes.sent()).toBe(0);
    expect((await writes.invoke("debug_traceTransaction")).result).toBe("0x1");
    expect((await writes.invoke("zks_sendRawTransactionWithDetailedOutput")).result).toBe("0x1");
    expect(writes.sent()).toBe(2);

    // a name the lists lack, added by the user: sent (and here the proxy's own 400 comes back to the model)
    const extra = tools({ extraMethods: ["debug_notAMethod"] });
    expect((await extra.invoke("debug_notAMethod")).error.message).toMatch(/debug_notAMethod/);
    expect(extra.sent()).toBe(1);
  });
});

describe("networks (live)", () => {
  it("lists and serves blast-* and robinhood-* when a node serves them; the client files them under EVM", async () => {
    const emu = await emulator();
    const listed = ((await (await fetch(`${emu.url}/crypto/rpc/networks`)).json()) as { networks: string[] }).networks;
    // (solana-mainnet: the emulator's Solana rail serves it)
    expect(listed).toEqual([
      "base-mainnet",
      "blast-mainnet",
      "blast-sepolia",
      "robinhood-mainnet",
      "robinhood-testnet",
      "solana-devnet",
      "solana-mainnet",
    ]);
    for (const slug of ["blast-mainnet", "blast-sepolia", "robinhood-mainnet", "robinhood-testnet"]) {
      expect(describeNetwork(slug).family).toBe("evm");
      const r = await rpc(emu, slug, call("eth_chainId"));
      expect(r.status, slug).toBe(200);
      expect(r.headers.get("x-service-rpc-credits"), slug).toBe("20");
    }
    const counting = countingClient(emu, "k1");
    const networksTool = new CryptoRpcToolkit({ client: counting.client }).getTools().find((t) => t.name === "crypto_networks")!;
    const message = (await networksTool.invoke({ type: "tool_call", id: "n", name: "crypto_networks", args: {} })) as ToolMessage;
    expect(JSON.parse(message.content as string).networks.evm).toEqual({
      mainnet: ["base-mainnet", "blast-mainnet", "robinhood-mainnet"],
      testnet: ["blast-sepolia", "robinhood-testnet"],
    });
  });

  it("seed mode lists the spec's slugs only", async () => {
    const emu = await emulator({ mode: "seed" });
    const listed = ((await (await fetch(`${emu.url}/crypto/rpc/networks`)).json()) as { networks: string[] }).networks;
    expect(listed).toEqual(["base-mainnet", "solana-devnet", "solana-mainnet"]);
    expect((await rpc(emu, "robinhood-mainnet", call("eth_chainId"))).status).toBe(400);
  });
});

describe("Idempotency-Key (live: a malformed one is silently ignored, so the client refuses it)", () => {
  it("a malformed key is refused before sending (ValidationError), however it was set: cryptoRpc, request, fetch", async () => {
    const emu = await emulator();
    const counting = countingClient(emu, "k1");
    const { client } = counting;
    const body = call("eth_blockNumber");
    const charges = emu.ledger.totals(emu.account("k1")!).charges;
    const before = counting.total();
    const attempts: Promise<unknown>[] = [
      client.cryptoRpc("base-mainnet", { method: "eth_blockNumber" }, { idempotencyKey: "no spaces!", networks: false }),
      client.request("/crypto/rpc/base-mainnet", { method: "POST", body, headers: { "Idempotency-Key": "no spaces!" } }),
      client.fetch(`${emu.url}/crypto/rpc/base-mainnet`, {
        method: "POST",
        headers: { "idempotency-key": "x".repeat(256) },
        body: JSON.stringify(body),
      }),
      client.fetch(
        new Request(`${emu.url}/crypto/rpc/base-mainnet`, {
          method: "POST",
          headers: { "Idempotency-Key": "" },
          body: JSON.stringify(body),
        }),
      ),
    ];
    for (const attempt of attempts) {
      const err = await attempt.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toMatch(/Idempotency-Key.*\[A-Za-z0-9_-\]\{1,255\}/);
    }
    expect(counting.total()).toBe(before);
    expect(emu.ledger.totals(emu.account("k1")!).charges).toBe(charges);
    // a well-formed key by hand goes, and is replayed the second time; another route's header is not the proxy's
    const sent = () =>
      client.fetch(`${emu.url}/crypto/rpc/base-mainnet`, {
        method: "POST",
        headers: { "idempotency-key": "by-hand-1" },
        body: JSON.stringify(body),
      });
    expect((await sent()).headers.get("idempotent-replayed")).toBeNull();
    expect((await sent()).headers.get("idempotent-replayed")).toBe("true");
    expect((await client.fetch(`${emu.url}/models`, { headers: { "idempotency-key": "not checked here" } })).status).toBe(200);
  });
});
