/**
 * Every crypto tool against the emulator's proxy and a real local chain: typed reads after a real transfer,
 * the generic tool (receipts, logs, eth_call), refusals, writes behind the flag, capped output, artifacts,
 * and which errors go back to the model (as text) versus which are thrown.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Contract, Wallet, id as topicOf, parseUnits, zeroPadValue, formatUnits } from "ethers";
import { ToolMessage } from "@langchain/core/messages";
import { USDC_ABI, usdcInterface } from "../../packages/langchain-service-emulator/src/chain/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { AuthenticationError, ServerError } from "../../src/http/errors.js";
import { ServiceClient } from "../../src/client.js";
import { CryptoRpcToolkit, type CryptoToolOptions } from "../../src/crypto-rpc/index.js";
import { chainProvider, countingClient, startSolanaStandIn, transferUsdc } from "./helpers.js";

const KEY = "tools-key";
const SOL_ADDRESS = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
let emu: Emulator;
let solana: Awaited<ReturnType<typeof startSolanaStandIn>>;
let transferHash: string;
let transferBlock: number;
const AMOUNT = parseUnits("12.5", 6);

beforeAll(async () => {
  solana = await startSolanaStandIn({ [SOL_ADDRESS]: 1_250_000_000 });
  // starknet-mainnet: an upstream that is down (nothing listens on port 1), so the slug is listed and its calls fail 500
  emu = await startEmulator({
    chain: true,
    apiKeys: [KEY],
    upstreams: { "solana-devnet": solana.url, "starknet-mainnet": "http://127.0.0.1:1" },
  });
  const chain = emu.chain!;
  const receipt = await transferUsdc(chain, 1, chain.accounts[2]!.address, AMOUNT);
  transferHash = receipt.hash;
  transferBlock = receipt.blockNumber;
});
afterAll(async () => {
  await emu?.close();
  await solana?.close();
});

function toolkit(options: Partial<CryptoToolOptions> = {}, key = KEY) {
  const counting = countingClient(emu, key);
  const kit = new CryptoRpcToolkit({ client: counting.client, ...options });
  const tools = Object.fromEntries(kit.getTools().map((t) => [t.name, t]));
  /** invokes as an agent would (a tool call), returning the parsed content and the artifact */
  const call = async (name: string, args: Record<string, unknown>) => {
    const tool = tools[name];
    if (!tool) throw new Error(`no tool ${name}`);
    const message = (await tool.invoke({ type: "tool_call", id: `call_${name}`, name, args })) as ToolMessage;
    expect(message).toBeInstanceOf(ToolMessage);
    return { json: JSON.parse(message.content as string), text: message.content as string, artifact: message.artifact as any };
  };
  return { kit, tools, call, ...counting };
}

describe("toolkit", () => {
  it("has the stable tool names, each with a zod schema and a description", () => {
    const { kit } = toolkit();
    expect(kit.getTools().map((t) => t.name)).toEqual([
      "crypto_networks",
      "crypto_rpc",
      "native_balance",
      "erc20_balance",
      "transaction_status",
      "latest_block",
      "contract_read",
    ]);
    for (const t of kit.getTools()) expect(t.description.length).toBeGreaterThan(40);
  });

  it("shares one network list across its tools (one request for many calls)", async () => {
    const { call, counts } = toolkit();
    await Promise.all([
      call("latest_block", { network: "base-mainnet" }),
      call("native_balance", { network: "base-mainnet", address: emu.chain!.accounts[0]!.address }),
      call("crypto_networks", {}),
    ]);
    expect(counts["/crypto/rpc/networks"]).toBe(1);
  });
});

describe("crypto_networks", () => {
  it("groups the live list by family and mainnet/testnet", async () => {
    const { call } = toolkit();
    const { json, artifact } = await call("crypto_networks", {});
    expect(json.networks.evm.mainnet).toContain("base-mainnet");
    expect(json.networks.evm.testnet).toEqual(
      expect.arrayContaining([
        "base-sepolia",
        "ethereum-holesky",
        "avalanche-fuji",
        "polygon-amoy",
        "bsc-testnet",
        "blast-sepolia",
        "robinhood-testnet",
      ]),
    );
    expect(json.networks.evm.mainnet).toEqual(expect.arrayContaining(["blast-mainnet", "robinhood-mainnet"]));
    expect(json.networks.evm.mainnet).not.toContain("base-sepolia");
    expect(json.networks.solana).toEqual({ mainnet: ["solana-mainnet"], testnet: ["solana-devnet"] });
    expect(json.networks.starknet.mainnet).toEqual(["starknet-mainnet"]);
    // the live service's 27 slugs but starknet-sepolia, which has no node here (the emulator lists only what it serves)
    expect(json.networks.starknet.testnet).toEqual([]);
    expect(json.total).toBe(26);
    expect(artifact.networks).toHaveLength(26);
    const onlySolana = await call("crypto_networks", { family: "solana", includeTestnets: false });
    expect(onlySolana.json.networks).toEqual({ solana: { mainnet: ["solana-mainnet"] } });
  });
});

describe("typed reads", () => {
  it("native_balance: wei and whole units on EVM, equal to the chain's own answer", async () => {
    const { call } = toolkit();
    const address = emu.chain!.accounts[3]!.address;
    const provider = chainProvider(emu.chain!);
    const expected = await provider.getBalance(address);
    provider.destroy();
    const { json, artifact } = await call("native_balance", { network: "base-mainnet", address: address.toLowerCase() });
    expect(json.address).toBe(address); // checksummed
    expect(json.balance).toEqual({ wei: expected.toString(), formatted: formatUnits(expected, 18), symbol: "ETH" });
    expect(artifact.request.method).toBe("eth_getBalance");
    expect(artifact.response.result).toBe(`0x${expected.toString(16)}`);
    expect(artifact.credits).toBe(20);
  });

  it("native_balance: lamports and SOL on Solana", async () => {
    const { call } = toolkit();
    const { json } = await call("native_balance", { network: "solana-devnet", address: SOL_ADDRESS });
    expect(json.balance).toEqual({ lamports: "1250000000", sol: "1.25", symbol: "SOL" });
  });

  it("erc20_balance: the real USDC balance after a transfer, with symbol and decimals", async () => {
    const { call } = toolkit();
    const chain = emu.chain!;
    const { json } = await call("erc20_balance", { network: "base-mainnet", token: chain.usdc.address, owner: chain.accounts[2]!.address });
    const expected = parseUnits("1000000", 6) + AMOUNT;
    expect(json.symbol).toBe("USDC");
    expect(json.name).toBe("USD Coin");
    expect(json.decimals).toBe(6);
    expect(json.balance).toEqual({ raw: expected.toString(), formatted: "1000012.5" });
    const sender = await call("erc20_balance", { network: "base-mainnet", token: chain.usdc.address, owner: chain.accounts[1]!.address });
    expect(sender.json.balance.formatted).toBe("999987.5");
  });

  it("transaction_status: success with block, confirmations, fee; not_found for an unknown hash", async () => {
    const { call } = toolkit();
    const { json } = await call("transaction_status", { network: "base-mainnet", hash: transferHash });
    expect(json.status).toBe("success");
    expect(json.blockNumber).toBe(String(transferBlock));
    expect(Number(json.confirmations)).toBeGreaterThanOrEqual(1);
    expect(json.from).toBe(emu.chain!.accounts[1]!.address);
    expect(json.to).toBe(emu.chain!.usdc.address);
    expect(json.methodSelector).toBe(usdcInterface.getFunction("transfer")!.selector);
    expect(BigInt(json.fee.wei)).toBeGreaterThan(0n);
    expect(json.logCount).toBe(1);
    const missing = await call("transaction_status", { network: "base-mainnet", hash: `0x${"ab".repeat(32)}` });
    expect(missing.json.status).toBe("not_found");
  });

  it("transaction_status: a reverted transaction says reverted", async () => {
    const chain = emu.chain!;
    const provider = chainProvider(chain);
    const poor = Wallet.createRandom().connect(provider);
    const rich = new Wallet(chain.accounts[4]!.privateKey, provider);
    await (await rich.sendTransaction({ to: poor.address, value: parseUnits("1", 18) })).wait();
    const usdc = new Contract(chain.usdc.address, USDC_ABI, poor);
    // no USDC: the transfer reverts on chain (gas limit given, so ethers does not refuse to send it)
    const tx = await usdc.getFunction("transfer")(chain.accounts[0]!.address, 1n, { gasLimit: 100_000n });
    await tx.wait().catch(() => undefined);
    provider.destroy();
    const { call } = toolkit();
    const { json } = await call("transaction_status", { network: "base-mainnet", hash: tx.hash });
    expect(json.status).toBe("reverted");
  });

  it("latest_block: EVM number/hash/time; Solana slot", async () => {
    const { call } = toolkit();
    const provider = chainProvider(emu.chain!);
    const head = await provider.getBlockNumber();
    provider.destroy();
    const { json } = await call("latest_block", { network: "arbitrum-mainnet" });
    expect(Number(json.number)).toBeGreaterThanOrEqual(head);
    expect(json.hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(new Date(json.time).getTime()).toBeGreaterThan(Date.UTC(2020, 0, 1));
    const sol = await call("latest_block", { network: "solana-devnet" });
    expect(Number(sol.json.slot)).toBeGreaterThan(1000);
  });

  it("contract_read: decodes view results by ABI fragment", async () => {
    const { call } = toolkit();
    const chain = emu.chain!;
    const bal = await call("contract_read", {
      network: "base-mainnet",
      address: chain.usdc.address,
      function: "function balanceOf(address owner) view returns (uint256)",
      args: [chain.accounts[2]!.address],
    });
    expect(bal.json.result).toBe((parseUnits("1000000", 6) + AMOUNT).toString());
    const name = await call("contract_read", {
      network: "base-mainnet",
      address: chain.usdc.address,
      function: "name() view returns (string)",
    });
    expect(name.json.result).toBe("USD Coin");
    const state = await call("contract_read", {
      network: "base-mainnet",
      address: chain.usdc.address,
      function: "authorizationState(address authorizer, bytes32 nonce) view returns (bool used)",
      args: [chain.accounts[2]!.address, `0x${"00".repeat(32)}`],
    });
    expect(state.json.result).toBe(false);
  });
});

describe("crypto_rpc (generic)", () => {
  it("eth_getBalance with the decimal copy; eth_call of balanceOf", async () => {
    const { call } = toolkit();
    const chain = emu.chain!;
    const r = await call("crypto_rpc", {
      network: "base-mainnet",
      method: "eth_getBalance",
      params: [chain.accounts[0]!.address, "latest"],
    });
    expect(r.json.result).toMatch(/^0x/);
    expect(r.json.resultDecimal).toBe(BigInt(r.json.result).toString());
    const data = usdcInterface.encodeFunctionData("balanceOf", [chain.accounts[2]!.address]);
    const c = await call("crypto_rpc", {
      network: "base-mainnet",
      method: "eth_call",
      params: [{ to: chain.usdc.address, data }, "latest"],
    });
    expect(BigInt(c.json.result)).toBe(parseUnits("1000000", 6) + AMOUNT);
  });

  it("a receipt, with decimal copies of its quantities", async () => {
    const { call } = toolkit();
    const r = await call("crypto_rpc", { network: "base-mainnet", method: "eth_getTransactionReceipt", params: [transferHash] });
    expect(r.json.result.status).toBe("0x1");
    expect(r.json.result.blockNumberDecimal ?? String(Number(r.json.result.blockNumber))).toBe(String(transferBlock));
    expect(r.json.result.gasUsedDecimal).toBe(BigInt(r.json.result.gasUsed).toString());
  });

  it("eth_getLogs finds the real Transfer in a bounded range; decimal block numbers are accepted", async () => {
    const { call } = toolkit();
    const chain = emu.chain!;
    const r = await call("crypto_rpc", {
      network: "base-mainnet",
      method: "eth_getLogs",
      params: [
        {
          address: chain.usdc.address,
          fromBlock: transferBlock,
          toBlock: String(transferBlock),
          topics: [topicOf("Transfer(address,address,uint256)"), zeroPadValue(chain.accounts[1]!.address, 32)],
        },
      ],
    });
    expect(r.json.count).toBe(1);
    const log = r.json.result[0];
    expect(log.transactionHash).toBe(transferHash);
    expect(BigInt(log.data)).toBe(AMOUNT);
  });

  it("refuses a too-wide eth_getLogs range before sending, with a hint", async () => {
    const { call, counts } = toolkit({ maxLogBlockRange: 3 });
    const r = await call("crypto_rpc", {
      network: "base-mainnet",
      method: "eth_getLogs",
      params: [{ fromBlock: "earliest", toBlock: "latest" }],
    });
    expect(r.json.error.code).toBe("RANGE_TOO_WIDE");
    expect(r.json.error.message).toMatch(/limit is 3/);
    // only eth_blockNumber (to resolve "latest") was sent, not the logs query
    expect(counts["/crypto/rpc/base-mainnet"]).toBe(1);
  });

  it("caps long output and says how to narrow the query; the artifact keeps everything", async () => {
    const { call } = toolkit({ maxOutputChars: 1500 });
    const r = await call("crypto_rpc", {
      network: "base-mainnet",
      method: "eth_getLogs",
      params: [{ fromBlock: "0x0", toBlock: "latest", address: emu.chain!.usdc.address }],
    });
    expect(r.text.length).toBeLessThanOrEqual(1500);
    expect(r.json.result.length).toBeGreaterThan(1); // whole logs kept, then the marker
    expect(r.json.truncated).toBe(true);
    expect(r.json.hint).toMatch(/narrow the block range/);
    expect(r.artifact.response.result.length).toBeGreaterThanOrEqual(11); // 10 mints + the transfer
    expect(JSON.stringify(r.json)).toMatch(/more item\(s\) omitted/);
  });

  it("returns JSON-RPC errors and wrong params to the model as {error}, not thrown", async () => {
    const { call } = toolkit();
    const rpcErr = await call("crypto_rpc", { network: "base-mainnet", method: "eth_getBalance", params: ["zzz", "latest"] });
    expect(rpcErr.json.error.code).toBe("RPC_ERROR");
    expect(rpcErr.json.error.rpcCode).toBeTypeOf("number");
    expect(rpcErr.text).not.toContain("stack");
    const asString = await call("crypto_rpc", { network: "base-mainnet", method: "eth_chainId", params: "[]" });
    expect(asString.json.result).toBe("0x2105");
    const badJson = await call("crypto_rpc", { network: "base-mainnet", method: "eth_chainId", params: "[oops" });
    expect(badJson.json.error.code).toBe("INVALID_PARAMS");
    const unknown = await call("crypto_rpc", { network: "base-mainet", method: "eth_chainId" });
    expect(unknown.json.error.code).toBe("UNSUPPORTED_NETWORK");
    expect(unknown.json.error.validNetworks).toContain("base-mainnet");
  });

  it("is read-only by default: writes, signing, admin, filters and cross-family calls are refused before sending", async () => {
    const { call, counts } = toolkit();
    expect(
      (await call("crypto_rpc", { network: "base-mainnet", method: "eth_sendRawTransaction", params: ["0x00"] })).json.error.code,
    ).toBe("METHOD_NOT_ALLOWED");
    // methods the service does not serve at all are refused as such
    for (const method of ["eth_sign", "personal_sign", "admin_peers", "eth_sendTransaction"]) {
      const r = await call("crypto_rpc", { network: "base-mainnet", method, params: ["0x00"] });
      expect(r.json.error.code, method).toBe("UNSUPPORTED_METHOD");
    }
    expect((await call("crypto_rpc", { network: "base-mainnet", method: "eth_newFilter", params: [{}] })).json.error.code).toBe(
      "UNSUPPORTED_METHOD",
    );
    expect((await call("crypto_rpc", { network: "solana-devnet", method: "sendTransaction", params: ["x"] })).json.error.code).toBe(
      "METHOD_NOT_ALLOWED",
    );
    expect((await call("crypto_rpc", { network: "solana-devnet", method: "eth_call", params: [] })).json.error.code).toBe("WRONG_FAMILY");
    expect(
      (await call("crypto_rpc", { network: "starknet-mainnet", method: "starknet_addInvokeTransaction", params: [] })).json.error.code,
    ).toBe("METHOD_NOT_ALLOWED");
    expect(counts["/crypto/rpc/base-mainnet"]).toBeUndefined();
  });

  it("with allowWrites, a signed transfer sent by eth_sendRawTransaction lands on the chain (filters stay refused)", async () => {
    const { call } = toolkit({ allowWrites: true });
    const chain = emu.chain!;
    const provider = chainProvider(chain);
    const sender = new Wallet(chain.accounts[7]!.privateKey, provider);
    const recipient = chain.accounts[8]!.address;
    const usdc = new Contract(chain.usdc.address, USDC_ABI, provider);
    const before = (await usdc.getFunction("balanceOf")(recipient)) as bigint;
    const fee = await provider.getFeeData();
    const raw = await sender.signTransaction({
      to: chain.usdc.address,
      data: usdcInterface.encodeFunctionData("transfer", [recipient, 777n]),
      nonce: await provider.getTransactionCount(sender.address),
      gasLimit: 100_000n,
      maxFeePerGas: fee.maxFeePerGas!,
      maxPriorityFeePerGas: fee.maxPriorityFeePerGas!,
      chainId: chain.chainId,
      type: 2,
    });
    const sent = await call("crypto_rpc", { network: "base-mainnet", method: "eth_sendRawTransaction", params: [raw] });
    expect(sent.json.result).toMatch(/^0x[0-9a-f]{64}$/);
    expect(sent.artifact.idempotentReplayed).toBe(false);
    const status = await call("transaction_status", { network: "base-mainnet", hash: sent.json.result });
    expect(status.json.status).toBe("success");
    expect(await usdc.getFunction("balanceOf")(recipient)).toBe(before + 777n);
    provider.destroy();
    expect((await call("crypto_rpc", { network: "base-mainnet", method: "eth_subscribe", params: ["newHeads"] })).json.error.code).toBe(
      "UNSUPPORTED_METHOD",
    );
  });
});

describe("bad input and failures", () => {
  it("malformed addresses, hashes, fragments and args come back as clear errors, with no request sent", async () => {
    const { call, counts } = toolkit();
    const chain = emu.chain!;
    const cases: [string, Record<string, unknown>, string][] = [
      ["native_balance", { network: "base-mainnet", address: "0x123" }, "INVALID_ADDRESS"],
      [
        "native_balance",
        { network: "base-mainnet", address: chain.accounts[0]!.address.replace(/[a-f]/, (c) => c.toUpperCase()).replace(/^0X/, "0x") },
        "INVALID_ADDRESS",
      ],
      ["native_balance", { network: "solana-devnet", address: "0OIl-not-base58" }, "INVALID_ADDRESS"],
      ["native_balance", { network: "starknet-mainnet", address: "0x1" }, "UNSUPPORTED_FAMILY"],
      ["erc20_balance", { network: "base-mainnet", token: "usdc", owner: chain.accounts[0]!.address }, "INVALID_ADDRESS"],
      ["erc20_balance", { network: "solana-devnet", token: chain.usdc.address, owner: chain.accounts[0]!.address }, "UNSUPPORTED_FAMILY"],
      ["transaction_status", { network: "base-mainnet", hash: "0x1234" }, "INVALID_PARAMS"],
      ["contract_read", { network: "base-mainnet", address: chain.usdc.address, function: "balanceOf(address" }, "INVALID_ABI"],
      ["contract_read", { network: "base-mainnet", address: chain.usdc.address, function: "balanceOf(address)" }, "INVALID_ABI"],
      [
        "contract_read",
        { network: "base-mainnet", address: chain.usdc.address, function: "balanceOf(address) view returns (uint256)", args: ["nope"] },
        "INVALID_ARGS",
      ],
      ["native_balance", { network: "base-mainnet", address: chain.accounts[0]!.address, blockTag: "yesterday" }, "INVALID_PARAMS"],
    ];
    for (const [name, args, code] of cases) {
      const r = await call(name, args);
      expect(r.json.error?.code, `${name} ${JSON.stringify(args)}`).toBe(code);
      expect(r.json.error.message.length).toBeGreaterThan(10);
    }
    expect(counts["/crypto/rpc/base-mainnet"]).toBeUndefined();
    expect(counts["/crypto/rpc/solana-devnet"]).toBeUndefined();
  });

  it("a token address without code and a call returning nothing are explained", async () => {
    const { call } = toolkit();
    const eoa = emu.chain!.accounts[0]!.address;
    const r = await call("erc20_balance", { network: "base-mainnet", token: eoa, owner: eoa });
    expect(r.json.error.code).toBe("NOT_A_TOKEN");
    const c = await call("contract_read", { network: "base-mainnet", address: eoa, function: "totalSupply() view returns (uint256)" });
    expect(c.json.error.code).toBe("EMPTY_RESULT");
  });

  it("arguments of the wrong type are rejected by the schema", async () => {
    const { tools } = toolkit();
    await expect(tools.native_balance!.invoke({ network: 8453, address: 1 } as never)).rejects.toThrow(/schema/i);
  });

  it("throws the system's failures: bad credentials, an upstream that is down", async () => {
    const bad = new CryptoRpcToolkit({ client: new ServiceClient({ baseUrl: emu.url, apiKey: "wrong", retry: false }) });
    const balance = bad.getTools().find((t) => t.name === "latest_block")!;
    await expect(balance.invoke({ network: "base-mainnet" })).rejects.toBeInstanceOf(AuthenticationError);
    const { tools } = toolkit();
    await expect(tools.latest_block!.invoke({ network: "starknet-mainnet" })).rejects.toBeInstanceOf(ServerError);
  });
});
