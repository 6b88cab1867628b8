/**
 * Tool arguments as models really send them: null for every optional field (OpenAI strict mode), block numbers
 * as numbers or padded hex, booleans and argument lists as strings; and block quantities on the wire without
 * leading zeros (geth rejects "0x01").
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolMessage } from "@langchain/core/messages";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { CryptoRpcToolkit } from "../../src/crypto-rpc/index.js";
import { countingClient } from "./helpers.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ chain: true, apiKeys: ["review-key"] });
});
afterAll(async () => {
  await emu?.close();
});

function tools() {
  const { client } = countingClient(emu, "review-key");
  const byName = Object.fromEntries(new CryptoRpcToolkit({ client }).getTools().map((t) => [t.name, t]));
  return async (name: string, args: Record<string, unknown>) => {
    const message = (await byName[name]!.invoke({ type: "tool_call", id: `call_${name}`, name, args })) as ToolMessage;
    return { json: JSON.parse(message.content as string), artifact: message.artifact as any };
  };
}

describe("arguments as models send them", () => {
  it("null for optional fields means 'not given' on every tool", async () => {
    const call = tools();
    const holder = emu.chain!.accounts[1]!.address;
    const usdc = emu.chain!.usdc.address;
    expect((await call("crypto_networks", { family: null, includeTestnets: null })).json.networks.evm).toBeDefined();
    expect((await call("native_balance", { network: "base-mainnet", address: holder, blockTag: null })).json.blockTag).toBe("latest");
    expect((await call("erc20_balance", { network: "base-mainnet", token: usdc, owner: holder, blockTag: null })).json.symbol).toBe("USDC");
    const read = await call("contract_read", {
      network: "base-mainnet",
      address: usdc,
      function: "decimals() view returns (uint8)",
      args: null,
      blockTag: null,
    });
    expect(read.json.result).toBe("6");
    expect((await call("crypto_rpc", { network: "base-mainnet", method: "eth_blockNumber", params: null })).json.resultDecimal).toMatch(
      /^\d+$/,
    );
  });

  it("numbers as strings and block numbers as numbers or padded hex", async () => {
    const call = tools();
    const holder = emu.chain!.accounts[1]!.address;
    const mainnetOnly = await call("crypto_networks", { includeTestnets: "false" });
    expect(mainnetOnly.json.networks.evm.testnet).toBeUndefined();
    for (const blockTag of [1, "1", "0x01", "0x1", "LATEST"]) {
      const r = await call("native_balance", { network: "base-mainnet", address: holder, blockTag });
      expect(r.json.error).toBeUndefined();
      expect(r.json.blockTag).toBe(blockTag === "LATEST" ? "latest" : "0x1");
      expect(r.artifact.request.params[1]).toBe(r.json.blockTag); // on the wire: a QUANTITY without leading zeros
    }
    const args = await call("contract_read", {
      network: "base-mainnet",
      address: emu.chain!.usdc.address,
      function: "function balanceOf(address) view returns (uint256)",
      args: JSON.stringify([holder]),
    });
    expect(args.json.result).toMatch(/^\d+$/);
    const bad = await call("contract_read", {
      network: "base-mainnet",
      address: emu.chain!.usdc.address,
      function: "balanceOf(address) view returns (uint256)",
      args: "owner",
    });
    expect(bad.json.error.code).toBe("INVALID_ARGS");
  });

  it("eth_getLogs block numbers given in decimal go out as minimal hex", async () => {
    const call = tools();
    const r = await call("crypto_rpc", { network: "base-mainnet", method: "eth_getLogs", params: [{ fromBlock: 1, toBlock: "2" }] });
    expect(r.json.error).toBeUndefined();
    expect(r.artifact.request.params[0]).toMatchObject({ fromBlock: "0x1", toBlock: "0x2" });
  });
});
