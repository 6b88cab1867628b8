/**
 * The client side: `cryptoRpc` (single, batch, errors as data, billing headers, idempotency), the network
 * cache (TTL, single-flight), validation before any request, and the ethers / @solana/web3.js adapters —
 * over loopback HTTP to the emulator, forwarding to ganache.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Contract, Wallet, parseUnits } from "ethers";
import { USDC_ABI } from "../../packages/langchain-service-emulator/src/chain/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ResponseFormatError, UnsupportedNetworkError, ValidationError, AuthenticationError } from "../../src/http/errors.js";
import { ServiceClient } from "../../src/client.js";
import { NetworkCache, cryptoRpc, createEthersProvider, networkCacheFor } from "../../src/crypto-rpc/index.js";
import { createSolanaConnection } from "../../src/solana-connection/index.js";
import { countingClient, startSolanaStandIn } from "./helpers.js";

const KEY = "client-key";
const SOL_ADDRESS = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
let emu: Emulator;
let solana: Awaited<ReturnType<typeof startSolanaStandIn>>;

beforeAll(async () => {
  solana = await startSolanaStandIn({ [SOL_ADDRESS]: 2_500_000_000 });
  // starknet-mainnet: an upstream that is down (nothing listens on port 1), so the slug is listed and its calls fail 500
  emu = await startEmulator({
    chain: true,
    apiKeys: [KEY],
    upstreams: { "solana-devnet": solana.url, "starknet-mainnet": "http://127.0.0.1:1" },
  });
});
afterAll(async () => {
  await emu?.close();
  await solana?.close();
});

describe("cryptoRpc", () => {
  it("sends one request and parses result and billing headers", async () => {
    const { client } = countingClient(emu, KEY);
    const res = await cryptoRpc<string>(client, "base-mainnet", { method: "eth_chainId" });
    expect(res.result).toBe("0x2105");
    expect(res.error).toBeUndefined();
    expect(res.response).toEqual({ jsonrpc: "2.0", id: 1, result: "0x2105" });
    expect(res.credits).toBe(20);
    expect(res.costUsd).toBeCloseTo(0.000014, 10);
    expect(res.requestId).toMatch(/^[0-9a-f]{32}$/);
    expect(res.idempotentReplayed).toBe(false);
  });

  it("correlates batch responses by id, in request order, with explicit and generated ids", async () => {
    const { client } = countingClient(emu, KEY);
    const a = emu.chain!.accounts[1]!.address;
    const res = await cryptoRpc(client, "base-mainnet", [
      { method: "eth_getBalance", params: [a, "latest"], id: "bal" },
      { method: "eth_chainId" },
      { method: "eth_blockNumber", id: 1 },
      { method: "eth_chainId" },
    ]);
    expect(res.responses.map((r) => r.id)).toEqual(["bal", 2, 1, 3]);
    expect(res.responses[1]!.result).toBe("0x2105");
    expect(BigInt(res.responses[0]!.result as string)).toBeGreaterThan(0n);
    expect(res.credits).toBe(80);
  });

  it("returns a JSON-RPC error inside a 200 as data, without the node's stack", async () => {
    const { client } = countingClient(emu, KEY);
    const res = await cryptoRpc(client, "base-mainnet", { method: "eth_getBalance", params: ["not-an-address", "latest"] });
    expect(res.result).toBeUndefined();
    expect(res.error?.code).toBeTypeOf("number");
    expect(res.error?.message).toBeTruthy();
    expect(JSON.stringify(res.response)).not.toContain("stack");
    expect(res.credits).toBe(5);
  });

  it("replays with an idempotency key, flagged, and refuses bad keys before sending", async () => {
    const { client, total } = countingClient(emu, KEY);
    const first = await cryptoRpc(client, "base-mainnet", { method: "eth_blockNumber" }, { idempotencyKey: "client-idem-1" });
    const again = await cryptoRpc(client, "base-mainnet", { method: "eth_blockNumber" }, { idempotencyKey: "client-idem-1" });
    expect(first.idempotentReplayed).toBe(false);
    expect(again.idempotentReplayed).toBe(true);
    expect(again.result).toBe(first.result);
    const sent = total();
    await expect(cryptoRpc(client, "base-mainnet", { method: "eth_blockNumber" }, { idempotencyKey: "no spaces" })).rejects.toThrow(
      ValidationError,
    );
    const generated = await cryptoRpc(client, "base-mainnet", { method: "eth_blockNumber" }, { idempotencyKey: true });
    expect(generated.idempotentReplayed).toBe(false);
    expect(total()).toBe(sent + 1);
  });

  it("rejects bad input before any request: oversize and empty batches, duplicate ids, malformed requests, bad slugs", async () => {
    const { client, total } = countingClient(emu, KEY);
    const tooMany = Array.from({ length: 101 }, () => ({ method: "eth_chainId" }));
    await expect(cryptoRpc(client, "base-mainnet", tooMany)).rejects.toThrow(/at most 100/);
    await expect(cryptoRpc(client, "base-mainnet", [])).rejects.toThrow(ValidationError);
    await expect(
      cryptoRpc(client, "base-mainnet", [
        { method: "a", id: 1 },
        { method: "b", id: 1 },
      ]),
    ).rejects.toThrow(/duplicate id/);
    await expect(cryptoRpc(client, "base-mainnet", { method: "" })).rejects.toThrow(/method/);
    await expect(cryptoRpc(client, "base-mainnet", { method: "eth_call", params: "0x" as never })).rejects.toThrow(/params/);
    await expect(cryptoRpc(client, "base-mainnet", { method: "eth_call", extra: 1 } as never)).rejects.toThrow(ValidationError);
    await expect(cryptoRpc(client, "Base Mainnet", { method: "eth_chainId" })).rejects.toThrow(ValidationError);
    expect(total()).toBe(0);
  });

  it("names the valid networks for an unknown slug, checked against the live list before the call", async () => {
    const { client, counts } = countingClient(emu, KEY);
    const err = await cryptoRpc(client, "base-mainet", { method: "eth_chainId" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedNetworkError);
    const u = err as UnsupportedNetworkError;
    expect(u.network).toBe("base-mainet");
    expect(u.validNetworks).toContain("base-mainnet");
    expect(u.message).toMatch(/Did you mean "base-mainnet" or "base-sepolia"/);
    expect(counts["/crypto/rpc/networks"]).toBe(1);
    expect(counts["/crypto/rpc/base-mainet"]).toBeUndefined();
  });

  it("turns the proxy's own 400 for an unknown slug into the same typed error when not pre-checked", async () => {
    const { client } = countingClient(emu, KEY);
    const err = await cryptoRpc(client, "tron-mainnet", { method: "eth_chainId" }, { networks: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedNetworkError);
    expect((err as UnsupportedNetworkError).validNetworks).toContain("solana-devnet");
  });

  it("surfaces system failures as typed errors (auth) and upstream failures after retries", async () => {
    const bad = new ServiceClient({ baseUrl: emu.url, apiKey: "wrong-key", retry: false });
    await expect(cryptoRpc(bad, "base-mainnet", { method: "eth_chainId" })).rejects.toThrow(AuthenticationError);
    const { client } = countingClient(emu, KEY);
    await expect(cryptoRpc(client, "starknet-mainnet", { method: "starknet_blockNumber" })).rejects.toMatchObject({
      name: "ServerError",
      status: 500,
    });
  });

  it("reports a batch answered with one error object as a format error, not a crash", async () => {
    const { client } = countingClient(emu, KEY);
    const ok = await cryptoRpc(client, "solana-devnet", [{ method: "getSlot" }, { method: "getBlockHeight" }]);
    expect(ok.responses.map((r) => typeof r.result)).toEqual(["number", "number"]);
    // the stand-in answers a batch holding getHealth with a single error object, as some nodes do
    const err = await cryptoRpc(client, "solana-devnet", [{ method: "getSlot" }, { method: "getHealth" }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResponseFormatError);
    expect((err as Error).message).toMatch(/batch of 2 answered with batch requests are not supported/);
  });
});

describe("NetworkCache", () => {
  it("makes one request for 100 concurrent readers and serves from cache while fresh", async () => {
    const { client, counts } = countingClient(emu, KEY);
    const cache = new NetworkCache(client, { ttlMs: 60_000 });
    const lists = await Promise.all(Array.from({ length: 100 }, () => cache.get()));
    expect(counts["/crypto/rpc/networks"]).toBe(1);
    expect(new Set(lists.map((l) => l.join(","))).size).toBe(1);
    expect(lists[0]).toContain("base-mainnet");
    await cache.assertSupported("solana-devnet");
    expect(cache.check("base-mainnet")).toBe(true);
    expect(counts["/crypto/rpc/networks"]).toBe(1);
  });

  it("refetches after the TTL, and on refresh", async () => {
    const { client, counts } = countingClient(emu, KEY);
    let now = 1_000_000;
    const cache = new NetworkCache(client, { ttlMs: 1000, now: () => now });
    await cache.get();
    now += 999;
    await cache.get();
    expect(counts["/crypto/rpc/networks"]).toBe(1);
    now += 2;
    await cache.get();
    expect(counts["/crypto/rpc/networks"]).toBe(2);
    await cache.get({ refresh: true });
    expect(counts["/crypto/rpc/networks"]).toBe(3);
  });

  it("takes the endpoint's list as the truth (a deployment with other slugs)", async () => {
    const other = await startEmulator({ chain: false, apiKeys: ["k"], networks: ["robinhood-mainnet", "base-mainnet"] });
    try {
      const client = new ServiceClient({ baseUrl: other.url, apiKey: "k" });
      const cache = networkCacheFor(client);
      expect(await cache.get()).toEqual(["base-mainnet", "robinhood-mainnet"]);
      await expect(cache.assertSupported("ethereum-mainnet")).rejects.toThrow(UnsupportedNetworkError);
      expect(networkCacheFor(client)).toBe(cache);
    } finally {
      await other.close();
    }
  });

  it("sends the public list request without credentials", async () => {
    const anonymous = new ServiceClient({ baseUrl: emu.url });
    expect(await new NetworkCache(anonymous).get()).toContain("zksync-mainnet");
  });
});

describe("adapters", () => {
  it("ethers JsonRpcProvider through the proxy: chain id asked once, balances, contract reads, a sent transaction", async () => {
    const { client, counts } = countingClient(emu, KEY);
    const provider = await createEthersProvider(client, "base-sepolia");
    try {
      expect((await provider.getNetwork()).chainId).toBe(8453n);
      const chain = emu.chain!;
      const [alice, bob] = [chain.accounts[5]!, chain.accounts[6]!];
      expect(await provider.getBalance(alice.address)).toBeGreaterThan(0n);
      const usdc = new Contract(chain.usdc.address, USDC_ABI, provider);
      expect(await usdc.getFunction("symbol")()).toBe("USDC");
      const bobBefore = (await usdc.getFunction("balanceOf")(bob.address)) as bigint;

      const wallet = new Wallet(alice.privateKey, provider);
      const tx = await (usdc.connect(wallet) as Contract).getFunction("transfer")(bob.address, parseUnits("3", 6));
      const receipt = await tx.wait();
      expect(receipt?.status).toBe(1);
      expect(await usdc.getFunction("balanceOf")(bob.address)).toBe(bobBefore + parseUnits("3", 6));
      // eth_chainId went once (at creation); every call went through the proxy path
      expect(counts["/crypto/rpc/base-sepolia"]).toBeGreaterThan(4);
    } finally {
      provider.destroy();
    }
  });

  it("ethers provider: refuses non-EVM and unknown slugs, pins a given chain id without asking", async () => {
    const { client, counts } = countingClient(emu, KEY);
    await expect(createEthersProvider(client, "solana-devnet")).rejects.toThrow(/Solana network/);
    await expect(createEthersProvider(client, "nope-mainnet")).rejects.toThrow(UnsupportedNetworkError);
    const provider = await createEthersProvider(client, "optimism-mainnet", { chainId: 8453 });
    expect(counts["/crypto/rpc/optimism-mainnet"]).toBeUndefined();
    expect(await provider.getBlockNumber()).toBeGreaterThan(0);
    provider.destroy();
    // a bad key surfaces as the package's typed error through ethers
    const bad = new ServiceClient({ baseUrl: emu.url, apiKey: "wrong", retry: false });
    const p2 = await createEthersProvider(bad, "base-mainnet", { chainId: 8453, networks: new NetworkCache(client) });
    await expect(p2.getBlockNumber()).rejects.toBeInstanceOf(AuthenticationError);
    p2.destroy();
  });

  it("@solana/web3.js Connection through the proxy", async () => {
    const { client, counts } = countingClient(emu, KEY);
    const connection = await createSolanaConnection(client, "solana-devnet");
    const web3 = await import("@solana/web3.js");
    expect(await connection.getBalance(new web3.PublicKey(SOL_ADDRESS))).toBe(2_500_000_000);
    expect(await connection.getSlot()).toBeGreaterThan(1000);
    expect(counts["/crypto/rpc/solana-devnet"]).toBe(2);
    await expect(createSolanaConnection(client, "base-mainnet")).rejects.toThrow(/EVM network/);
  });
});

describe("wallet callers", () => {
  it("a wallet signed in with SIWX pays per call from its credit and sees X-Balance-Remaining", async () => {
    const { createWalletAuth } = await import("../../src/x402/index.js");
    const { EvmWallet } = await import("../../src/evm/index.js");
    const walletEmu = await startEmulator({
      apiKeys: ["unused"],
      walletStartingUsd: 1,
      upstreams: { "base-mainnet": emu.chain!.rpcUrl },
      x402: { balanceHeader: true },
    }); // the seed's header
    try {
      const wallet = new EvmWallet(Wallet.createRandom().privateKey);
      const client = new ServiceClient({ baseUrl: walletEmu.url, auth: createWalletAuth(wallet) });
      const first = await cryptoRpc<string>(client, "base-mainnet", { method: "eth_chainId" });
      const second = await cryptoRpc<string>(client, "base-mainnet", { method: "eth_blockNumber" });
      expect(first.result).toBe("0x2105");
      expect(second.headers.balance?.remainingUsd).toBeCloseTo(1 - 2 * 20 * 7e-7, 6);
      const account = walletEmu.account(wallet.address)!;
      expect(walletEmu.ledger.totals(account).charges).toBe(2);
    } finally {
      await walletEmu.close();
    }
  });
});

describe("brand", () => {
  it("reads the pricing headers under the deployment's brand", async () => {
    const acme = await startEmulator({ brand: "acme", apiKeys: ["k"], upstreams: { "base-mainnet": emu.chain!.rpcUrl } });
    try {
      const raw = await fetch(`${acme.url}/crypto/rpc/base-mainnet`, {
        method: "POST",
        headers: { authorization: "Bearer k", "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId" }),
      });
      expect(raw.headers.get("x-acme-rpc-credits")).toBe("20");
      expect(raw.headers.get("x-service-rpc-credits")).toBeNull();
      const client = new ServiceClient({ baseUrl: acme.url, apiKey: "k", brand: "acme" });
      const res = await cryptoRpc(client, "base-mainnet", { method: "eth_chainId" });
      expect(res.credits).toBe(20);
      expect(res.costUsd).toBeCloseTo(0.000014, 10);
    } finally {
      await acme.close();
    }
  });
});
