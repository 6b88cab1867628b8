/** Pure parts of the crypto RPC client: slug grouping, the method policy, result formatting, request checks. */
import { describe, expect, it } from "vitest";
import { capOutput, checkMethod, describeNetwork, groupNetworks, normalizeRequest, withDecimals } from "../../src/crypto-rpc/index.js";
import { ValidationError } from "../../src/http/errors.js";

describe("network slugs", () => {
  it("tells family and mainnet/testnet from the slug, for slugs it has never seen too", () => {
    expect(describeNetwork("base-mainnet")).toEqual({ slug: "base-mainnet", family: "evm", mainnet: true });
    expect(describeNetwork("ethereum-holesky").mainnet).toBe(false);
    expect(describeNetwork("avalanche-fuji").mainnet).toBe(false);
    expect(describeNetwork("polygon-amoy").mainnet).toBe(false);
    expect(describeNetwork("solana-devnet")).toEqual({ slug: "solana-devnet", family: "solana", mainnet: false });
    expect(describeNetwork("starknet-mainnet").family).toBe("starknet");
    expect(describeNetwork("robinhood-testnet")).toEqual({ slug: "robinhood-testnet", family: "evm", mainnet: false });
    expect(describeNetwork("robinhood-mainnet").mainnet).toBe(true);
  });

  it("groups and sorts", () => {
    const g = groupNetworks(["zksync-sepolia", "solana-mainnet", "base-mainnet", "arbitrum-mainnet", "starknet-sepolia"]);
    expect(g.evm).toEqual({ mainnet: ["arbitrum-mainnet", "base-mainnet"], testnet: ["zksync-sepolia"] });
    expect(g.solana).toEqual({ mainnet: ["solana-mainnet"], testnet: [] });
    expect(g.starknet).toEqual({ mainnet: [], testnet: ["starknet-sepolia"] });
  });
});

describe("method policy", () => {
  it("allows reads per family and refuses writes by default", () => {
    expect(checkMethod("evm", "eth_call")).toEqual({ allowed: true, kind: "read" });
    expect(checkMethod("evm", "zks_getBlockDetails").allowed).toBe(true);
    expect(checkMethod("evm", "linea_estimateGas").allowed).toBe(true);
    expect(checkMethod("evm", "zks_sendRawTransactionWithDetailedOutput").allowed).toBe(false);
    expect(checkMethod("solana", "getTokenAccountsByOwner").allowed).toBe(true);
    expect(checkMethod("starknet", "starknet_call").allowed).toBe(true);
    // on the service's list, but not a read: the tool's policy refuses it
    for (const [family, method] of [
      ["evm", "eth_sendRawTransaction"],
      ["evm", "debug_traceTransaction"],
      ["solana", "sendTransaction"],
      ["solana", "simulateTransaction"],
      ["starknet", "starknet_addDeclareTransaction"],
    ] as const) {
      expect(checkMethod(family, method), method).toMatchObject({ allowed: false, code: "METHOD_NOT_ALLOWED" });
    }
    // not on the service's list at all: the proxy would answer 400, whatever the policy
    for (const [family, method] of [
      ["evm", "eth_signTypedData_v4"],
      ["evm", "personal_unlockAccount"],
      ["evm", "admin_addPeer"],
      ["solana", "requestAirdrop"],
    ] as const) {
      expect(checkMethod(family, method), method).toMatchObject({ allowed: false, code: "UNSUPPORTED_METHOD" });
      expect(checkMethod(family, method, { allowWrites: true }), method).toMatchObject({ allowed: false, code: "UNSUPPORTED_METHOD" });
    }
  });

  it("opens writes with the flag, never filters or subscriptions; extra methods can be allowed one by one", () => {
    expect(checkMethod("evm", "eth_sendRawTransaction", { allowWrites: true })).toEqual({ allowed: true, kind: "write" });
    expect(checkMethod("solana", "sendTransaction", { allowWrites: true }).allowed).toBe(true);
    expect(checkMethod("evm", "eth_newBlockFilter", { allowWrites: true })).toMatchObject({ allowed: false, code: "UNSUPPORTED_METHOD" });
    expect(checkMethod("solana", "logsSubscribe", { allowWrites: true })).toMatchObject({ allowed: false, code: "UNSUPPORTED_METHOD" });
    expect(checkMethod("evm", "debug_traceTransaction", { extraMethods: ["debug_traceTransaction"] })).toEqual({
      allowed: true,
      kind: "read",
    });
  });

  it("checks explicit names per family, not namespaces, as the live proxy does", () => {
    for (const method of [
      "zks_getL1GasPrice",
      "zks_L1ChainId",
      "linea_getTransactionExclusionStatusV1",
      "bor_getSnapshotProposerSequence",
      "pimlico_getUserOperationStatus",
    ]) {
      expect(checkMethod("evm", method), method).toEqual({ allowed: true, kind: "read" });
    }
    for (const method of ["zks_notAMethod", "linea_notAMethod", "bor_notAMethod"]) {
      expect(checkMethod("evm", method), method).toMatchObject({ allowed: false, code: "UNSUPPORTED_METHOD" });
    }
    for (const method of ["debug_notAMethod", "trace_notAMethod", "txpool_notAMethod", "arbtrace_notAMethod", "zks_notAMethod"]) {
      expect(checkMethod("evm", method, { allowWrites: true }), method).toMatchObject({ allowed: false, code: "UNSUPPORTED_METHOD" });
    }
    expect(checkMethod("evm", "debug_notAMethod", { extraMethods: ["debug_notAMethod"] })).toEqual({ allowed: true, kind: "read" });
    expect(checkMethod("evm", "trace_replayTransaction", { allowWrites: true })).toEqual({ allowed: true, kind: "write" });
    expect(checkMethod("evm", "zks_sendRawTransactionWithDetailedOutput", { allowWrites: true })).toEqual({ allowed: true, kind: "write" });
    // the reasons say what it costs or what to do instead
    expect(checkMethod("evm", "trace_replayTransaction")).toMatchObject({
      code: "METHOD_NOT_ALLOWED",
      reason: expect.stringMatching(/billed 4×/),
    });
    expect(checkMethod("evm", "eth_sign", { allowWrites: true })).toMatchObject({
      code: "UNSUPPORTED_METHOD",
      reason: expect.stringMatching(/sign locally/),
    });
    expect(checkMethod("solana", "getConfirmedBlock", { allowWrites: true }).allowed).toBe(false);
    expect(checkMethod("solana", "getAssetsByOwner", { allowWrites: true }).allowed).toBe(false);
    // filters stay refused even when named as extra methods
    expect(checkMethod("evm", "eth_newFilter", { extraMethods: ["eth_newFilter"] })).toMatchObject({
      allowed: false,
      code: "UNSUPPORTED_METHOD",
    });
  });

  it("refuses a method of another family", () => {
    expect(checkMethod("solana", "eth_getBalance")).toMatchObject({ allowed: false, code: "WRONG_FAMILY" });
    expect(checkMethod("evm", "getBalance")).toMatchObject({ allowed: false, code: "WRONG_FAMILY" });
    expect(checkMethod("evm", "starknet_call", { allowWrites: true })).toMatchObject({ allowed: false, code: "WRONG_FAMILY" });
  });
});

describe("result formatting", () => {
  it("adds decimal copies beside hex quantities, leaving hashes and addresses alone", () => {
    const receipt = {
      blockNumber: "0x1b4",
      gasUsed: "0x5208",
      status: "0x1",
      transactionHash: `0x${"ab".repeat(32)}`,
      from: `0x${"12".repeat(20)}`,
      logs: [{ logIndex: "0x0", data: `0x${"00".repeat(31)}ff` }],
    };
    expect(withDecimals(receipt)).toEqual({
      ...receipt,
      blockNumberDecimal: "436",
      gasUsedDecimal: "21000",
      logs: [{ logIndex: "0x0", data: receipt.logs[0]!.data }],
    });
  });

  it("keeps short output whole, cuts long arrays to fit with a count of what was left out", () => {
    expect(capOutput({ a: 1 }, 100)).toEqual({ text: '{"a":1}', truncated: false });
    const logs = Array.from({ length: 200 }, (_, i) => ({ i, data: "x".repeat(50) }));
    const out = capOutput({ result: logs }, 2000, "narrow it");
    expect(out.truncated).toBe(true);
    expect(out.text.length).toBeLessThanOrEqual(2000);
    const parsed = JSON.parse(out.text);
    expect(parsed.hint).toBe("narrow it");
    const marker = parsed.result.at(-1) as string;
    const shown = parsed.result.length - 1;
    expect(marker).toBe(`… ${200 - shown} more item(s) omitted`);
    expect(parsed.result[0]).toEqual({ i: 0, data: "x".repeat(50) });
  });

  it("falls back to a prefix of the text, still valid JSON within the cap", () => {
    const out = capOutput({ blob: '"quoted" '.repeat(500) }, 300);
    expect(out.text.length).toBeLessThanOrEqual(300);
    expect(JSON.parse(out.text).truncated).toBe(true);
  });
});

describe("request checks", () => {
  it("normalizes a request and names what is wrong with a bad one", () => {
    expect(normalizeRequest({ method: "eth_chainId" }, 5)).toEqual({ jsonrpc: "2.0", method: "eth_chainId", id: 5 });
    expect(normalizeRequest({ method: "getBalance", params: ["x"], id: "a" }, 1)).toEqual({
      jsonrpc: "2.0",
      method: "getBalance",
      params: ["x"],
      id: "a",
    });
    expect(() => normalizeRequest({ params: [] }, 1)).toThrow(ValidationError);
    expect(() => normalizeRequest({ method: "x", params: 5 }, 1)).toThrow(/params/);
    expect(() => normalizeRequest({ method: "x", id: 1.5 }, 1)).toThrow(/id/);
    expect(() => normalizeRequest(null, 1)).toThrow(ValidationError);
  });
});

describe("NetworkCache refresh on an unknown slug", () => {
  it("asks the service again before refusing a slug it may have added, at most once per 30 s", async () => {
    const { NetworkCache, MISS_REFRESH_MS } = await import("../../src/crypto-rpc/networks.js");
    const { UnsupportedNetworkError } = await import("../../src/http/errors.js");
    let now = 1_000_000;
    let calls = 0;
    let list = ["base-mainnet"];
    const cache = new NetworkCache({ listCryptoNetworks: async () => (calls++, list) }, { now: () => now });
    await cache.assertSupported("base-mainnet");
    expect(calls).toBe(1);
    // the service adds a network; a fresh list that lacks it is asked again (once the 30 s have passed)
    list = ["base-mainnet", "monad-mainnet"];
    now += MISS_REFRESH_MS;
    await expect(cache.assertSupported("monad-mainnet")).resolves.toMatchObject({ slug: "monad-mainnet" });
    expect(calls).toBe(2);
    // a typo right after: refused from the cache, no new request
    await expect(cache.assertSupported("bsae-mainnet")).rejects.toBeInstanceOf(UnsupportedNetworkError);
    expect(calls).toBe(2);
  });
});
