/**
 * The crypto tools that read a chain for a model in one call: `native_balance`, `erc20_balance`,
 * `transaction_status`, `latest_block`, `contract_read` (each a few JSON-RPC calls, batched, through the proxy).
 */
import type { ToolRunnableConfig } from "@langchain/core/tools";
import { Interface, formatUnits, isHexString, getAddress, decodeBytes32String } from "ethers";
import { z } from "zod";
import { hexToDecimal, isHexQuantity, plain } from "./format.js";
import { ToolInputError, type ToolResult } from "../tools/results.js";
import { cryptoRpc, type CryptoRpcBatchResult, type JsonRpcRequest, type JsonRpcResponse } from "./rpc.js";
import {
  networkField,
  evmAddressField,
  blockTagField,
  guard,
  evmAddress,
  solanaAddress,
  blockTag,
  nativeUnit,
  single,
  batchResult,
  CryptoTool,
  billing,
  network,
} from "./tool-base.js";

// --- native_balance -----------------------------------------------------------------------------------

const nativeBalanceSchema = z.object({
  network: networkField,
  address: z.string().describe("account address: 0x-hex on EVM networks, base58 on Solana"),
  blockTag: blockTagField,
});

export class NativeBalanceTool extends CryptoTool<typeof nativeBalanceSchema> {
  static override lc_name() {
    return "NativeBalanceTool";
  }
  name = "native_balance";
  description =
    "Native coin balance of an address (ETH and other EVM gas coins in wei and whole units; SOL in lamports and SOL). Works on EVM and Solana networks.";
  schema = nativeBalanceSchema;

  protected async _call(input: z.infer<typeof nativeBalanceSchema>, _run?: unknown, config?: ToolRunnableConfig): Promise<ToolResult> {
    const signal = config?.signal;
    return guard(async () => {
      const info = await network(this.s, input.network, signal);
      if (info.family === "solana") {
        const address = solanaAddress(input.address, "address");
        const request: JsonRpcRequest = { method: "getBalance", params: [address, { commitment: "confirmed" }] };
        const res = await cryptoRpc<{ value: number; context?: { slot?: number } }>(this.s.client, input.network, request, {
          networks: this.s.networks,
          signal,
        });
        const value = single(res);
        const lamports = BigInt(value.value);
        return this.content(
          {
            balance: { lamports: lamports.toString(), sol: formatUnits(lamports, 9), symbol: "SOL" },
            address,
            network: input.network,
            slot: value.context?.slot,
          },
          { network: input.network, request, response: res.response, ...billing(res) },
        );
      }
      if (info.family !== "evm") await network(this.s, input.network, signal, "evm", "native_balance");
      const address = evmAddress(input.address, "address");
      const tag = blockTag(input.blockTag);
      const request: JsonRpcRequest = { method: "eth_getBalance", params: [address, tag] };
      const res = await cryptoRpc<string>(this.s.client, input.network, request, { networks: this.s.networks, signal });
      const wei = BigInt(single(res));
      const unit = nativeUnit(input.network);
      return this.content(
        {
          balance: { wei: wei.toString(), formatted: formatUnits(wei, unit.decimals), symbol: unit.symbol },
          address,
          network: input.network,
          blockTag: tag,
        },
        { network: input.network, request, response: res.response, ...billing(res) },
      );
    });
  }
}

// --- erc20_balance ------------------------------------------------------------------------------------

const ERC20 = new Interface([
  "function balanceOf(address) view returns (uint256)",
  "function decimals() view returns (uint8)",
  "function symbol() view returns (string)",
  "function name() view returns (string)",
]);
const BYTES32_SYMBOL = new Interface(["function symbol() view returns (bytes32)", "function name() view returns (bytes32)"]);

const erc20BalanceSchema = z.object({
  network: networkField,
  token: evmAddressField("ERC-20 token contract"),
  owner: evmAddressField("holder whose balance to read"),
  blockTag: blockTagField,
});

export class Erc20BalanceTool extends CryptoTool<typeof erc20BalanceSchema> {
  static override lc_name() {
    return "Erc20BalanceTool";
  }
  name = "erc20_balance";
  description =
    "ERC-20 token balance of an owner on an EVM network, with the token's symbol and decimals: raw base units and the human amount.";
  schema = erc20BalanceSchema;

  protected async _call(input: z.infer<typeof erc20BalanceSchema>, _run?: unknown, config?: ToolRunnableConfig): Promise<ToolResult> {
    const signal = config?.signal;
    return guard(async () => {
      await network(this.s, input.network, signal, "evm", "erc20_balance");
      const token = evmAddress(input.token, "token");
      const owner = evmAddress(input.owner, "owner");
      const tag = blockTag(input.blockTag);
      const call = (data: string): JsonRpcRequest => ({ method: "eth_call", params: [{ to: token, data }, tag] });
      const requests = [
        call(ERC20.encodeFunctionData("balanceOf", [owner])),
        call(ERC20.encodeFunctionData("decimals")),
        call(ERC20.encodeFunctionData("symbol")),
        call(ERC20.encodeFunctionData("name")),
      ];
      const res = await cryptoRpc(this.s.client, input.network, requests, { networks: this.s.networks, signal });
      const artifact = { network: input.network, requests, responses: res.responses, ...billing(res) };
      const raw = batchResult(res, 0) as string;
      if (raw === "0x" || raw === undefined) {
        return [
          JSON.stringify({
            error: {
              code: "NOT_A_TOKEN",
              message: `no ERC-20 contract answered balanceOf at ${token} on ${input.network} (no code there, or not a token)`,
            },
          }),
          artifact,
        ];
      }
      const balance = ERC20.decodeFunctionResult("balanceOf", raw)[0] as bigint;
      const decimals = optional(() => Number(ERC20.decodeFunctionResult("decimals", batchResult(res, 1) as string)[0]));
      const symbol = optional(() => text(res, 2, "symbol"));
      const name = optional(() => text(res, 3, "name"));
      return this.content(
        {
          // the answer first: readers (and models) that skim see it
          balance: { raw: balance.toString(), formatted: decimals === undefined ? undefined : formatUnits(balance, decimals) },
          symbol,
          decimals,
          owner,
          network: input.network,
          token,
          name,
          blockTag: tag,
          ...(decimals === undefined ? { note: "the token has no decimals(); only the raw amount is known" } : {}),
        },
        artifact,
      );
    });
  }
}

/** contract_read's `args`: an array, or the JSON text of one (models sometimes send that). */
function contractArgs(args: unknown[] | string | null | undefined): unknown[] {
  if (args === undefined || args === null) return [];
  if (Array.isArray(args)) return args;
  const text = args.trim();
  if (text === "") return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ToolInputError(
      "INVALID_ARGS",
      `args must be an array of arguments in order, e.g. ["0xabc...", "1000"]; got text that is not a JSON array: ${text.slice(0, 80)}`,
    );
  }
  if (!Array.isArray(parsed))
    throw new ToolInputError("INVALID_ARGS", 'args must be an array of arguments in order, e.g. ["0xabc...", "1000"]');
  return parsed;
}

function optional<T>(f: () => T): T | undefined {
  try {
    return f();
  } catch {
    return undefined;
  }
}

/** string() or, for old tokens (MKR-style), bytes32. */
function text(res: CryptoRpcBatchResult, i: number, fn: "symbol" | "name"): string {
  const data = batchResult(res, i) as string;
  try {
    return ERC20.decodeFunctionResult(fn, data)[0] as string;
  } catch {
    return decodeBytes32String(BYTES32_SYMBOL.decodeFunctionResult(fn, data)[0] as string);
  }
}

// --- transaction_status -------------------------------------------------------------------------------

const txStatusSchema = z.object({
  network: networkField,
  hash: z.string().describe("transaction hash: 0x + 64 hex characters"),
});

interface RpcTx {
  hash: string;
  from: string;
  to: string | null;
  value: string;
  nonce: string;
  blockNumber: string | null;
  input?: string;
}
interface RpcReceipt {
  status?: string;
  blockNumber: string;
  gasUsed: string;
  effectiveGasPrice?: string;
  contractAddress?: string | null;
  logs: unknown[];
}

export class TransactionStatusTool extends CryptoTool<typeof txStatusSchema> {
  static override lc_name() {
    return "TransactionStatusTool";
  }
  name = "transaction_status";
  description =
    "Did an EVM transaction succeed? Returns success / reverted / pending / not_found, with block, confirmations, from, to, value, gas used and fee.";
  schema = txStatusSchema;

  protected async _call(input: z.infer<typeof txStatusSchema>, _run?: unknown, config?: ToolRunnableConfig): Promise<ToolResult> {
    const signal = config?.signal;
    return guard(async () => {
      await network(this.s, input.network, signal, "evm", "transaction_status");
      if (typeof input.hash !== "string" || !isHexString(input.hash, 32)) {
        throw new ToolInputError("INVALID_PARAMS", `hash ${JSON.stringify(input.hash)} is not a transaction hash (0x + 64 hex characters)`);
      }
      const requests: JsonRpcRequest[] = [
        { method: "eth_getTransactionByHash", params: [input.hash] },
        { method: "eth_getTransactionReceipt", params: [input.hash] },
        { method: "eth_blockNumber" },
      ];
      const res = await cryptoRpc(this.s.client, input.network, requests, { networks: this.s.networks, signal });
      const artifact = { network: input.network, requests, responses: res.responses, ...billing(res) };
      const tx = batchResult(res, 0) as RpcTx | null;
      const receipt = batchResult(res, 1) as RpcReceipt | null;
      const head = BigInt(batchResult(res, 2) as string);
      const unit = nativeUnit(input.network);
      if (!tx && !receipt) {
        return this.content(
          {
            network: input.network,
            hash: input.hash,
            status: "not_found",
            note: "no such transaction on this network (check the network and the hash)",
          },
          artifact,
        );
      }
      const out: Record<string, unknown> = { network: input.network, hash: input.hash };
      if (!receipt) out.status = "pending";
      else {
        out.status = receipt.status === "0x1" ? "success" : receipt.status === "0x0" ? "reverted" : "unknown (pre-Byzantium receipt)";
        const block = BigInt(receipt.blockNumber);
        out.blockNumber = block.toString();
        out.confirmations = (head >= block ? head - block + 1n : 1n).toString();
        out.gasUsed = BigInt(receipt.gasUsed).toString();
        if (receipt.effectiveGasPrice) {
          const fee = BigInt(receipt.gasUsed) * BigInt(receipt.effectiveGasPrice);
          out.fee = { wei: fee.toString(), formatted: formatUnits(fee, unit.decimals), symbol: unit.symbol };
        }
        if (receipt.contractAddress) out.contractAddress = receipt.contractAddress;
        out.logCount = receipt.logs.length;
      }
      if (tx) {
        out.from = getAddress(tx.from);
        out.to = tx.to ? getAddress(tx.to) : null;
        const value = BigInt(tx.value);
        out.value = { wei: value.toString(), formatted: formatUnits(value, unit.decimals), symbol: unit.symbol };
        out.nonce = BigInt(tx.nonce).toString();
        if (tx.input && tx.input !== "0x") out.methodSelector = tx.input.slice(0, 10);
      }
      return this.content(out, artifact);
    });
  }
}

// --- latest_block -------------------------------------------------------------------------------------

const latestBlockSchema = z.object({ network: networkField });

export class LatestBlockTool extends CryptoTool<typeof latestBlockSchema> {
  static override lc_name() {
    return "LatestBlockTool";
  }
  name = "latest_block";
  description =
    "The newest block of a network: number, hash, time, transaction count (EVM); slot and block height (Solana); number and hash (Starknet).";
  schema = latestBlockSchema;

  protected async _call(input: z.infer<typeof latestBlockSchema>, _run?: unknown, config?: ToolRunnableConfig): Promise<ToolResult> {
    const signal = config?.signal;
    return guard(async () => {
      const info = await network(this.s, input.network, signal);
      if (info.family === "solana") {
        const requests: JsonRpcRequest[] = [{ method: "getSlot" }, { method: "getBlockHeight" }];
        const res = await cryptoRpc(this.s.client, input.network, requests, { networks: this.s.networks, signal });
        return this.content(
          { network: input.network, slot: String(batchResult(res, 0)), blockHeight: String(batchResult(res, 1)) },
          { network: input.network, requests, responses: res.responses, ...billing(res) },
        );
      }
      if (info.family === "starknet") {
        const request: JsonRpcRequest = { method: "starknet_blockHashAndNumber" };
        const res = await cryptoRpc<{ block_hash: string; block_number: number }>(this.s.client, input.network, request, {
          networks: this.s.networks,
          signal,
        });
        const r = single(res);
        return this.content(
          { network: input.network, number: String(r.block_number), hash: r.block_hash },
          { network: input.network, request, response: res.response, ...billing(res) },
        );
      }
      const request: JsonRpcRequest = { method: "eth_getBlockByNumber", params: ["latest", false] };
      const res = await cryptoRpc<Record<string, unknown> | null>(this.s.client, input.network, request, {
        networks: this.s.networks,
        signal,
      });
      const b = single(res);
      if (!b) throw new ToolInputError("RPC_ERROR", "the node returned no latest block");
      const dec = (k: string) => (isHexQuantity(b[k]) ? hexToDecimal(b[k] as string) : undefined);
      const ts = dec("timestamp");
      return this.content(
        {
          network: input.network,
          number: dec("number"),
          hash: b.hash,
          timestamp: ts,
          time: ts === undefined ? undefined : new Date(Number(ts) * 1000).toISOString(),
          transactionCount: Array.isArray(b.transactions) ? b.transactions.length : undefined,
          gasUsed: dec("gasUsed"),
          gasLimit: dec("gasLimit"),
          baseFeePerGas: dec("baseFeePerGas"),
        },
        { network: input.network, request, response: res.response, ...billing(res) },
      );
    });
  }
}

// --- contract_read ------------------------------------------------------------------------------------

const contractReadSchema = z.object({
  network: networkField,
  address: evmAddressField("contract"),
  function: z
    .string()
    .describe('human-readable ABI fragment of a view function, e.g. "function balanceOf(address owner) view returns (uint256)"'),
  args: z
    .union([z.array(z.any()), z.string()])
    .nullish()
    .describe("arguments in order (big numbers as decimal strings)"),
  blockTag: blockTagField,
});

export class ContractReadTool extends CryptoTool<typeof contractReadSchema> {
  static override lc_name() {
    return "ContractReadTool";
  }
  name = "contract_read";
  description =
    "Call a read-only (view/pure) function of an EVM contract by its ABI fragment and get the decoded result (integers as decimal strings).";
  schema = contractReadSchema;

  protected async _call(input: z.infer<typeof contractReadSchema>, _run?: unknown, config?: ToolRunnableConfig): Promise<ToolResult> {
    const signal = config?.signal;
    return guard(async () => {
      await network(this.s, input.network, signal, "evm", "contract_read");
      const address = evmAddress(input.address, "address");
      const fragmentText = input.function.trim().startsWith("function ") ? input.function.trim() : `function ${input.function.trim()}`;
      let iface: Interface;
      try {
        iface = new Interface([fragmentText]);
      } catch (err) {
        throw new ToolInputError(
          "INVALID_ABI",
          `cannot parse ABI fragment ${JSON.stringify(input.function)}: ${(err as Error).message.split(" (")[0]}`,
        );
      }
      const fn = iface.fragments.find((f) => f.type === "function") as import("ethers").FunctionFragment | undefined;
      if (!fn) throw new ToolInputError("INVALID_ABI", "the fragment must describe a function");
      if (fn.outputs.length === 0) {
        throw new ToolInputError(
          "INVALID_ABI",
          `add the return types to the fragment, e.g. "${fn.format("sighash")} view returns (uint256)"`,
        );
      }
      let data: string;
      try {
        data = iface.encodeFunctionData(fn, contractArgs(input.args));
      } catch (err) {
        throw new ToolInputError("INVALID_ARGS", `arguments do not fit ${fn.format("sighash")}: ${(err as Error).message.split(" (")[0]}`);
      }
      const tag = blockTag(input.blockTag);
      const request: JsonRpcRequest = { method: "eth_call", params: [{ to: address, data }, tag] };
      const res = await cryptoRpc<string>(this.s.client, input.network, request, { networks: this.s.networks, signal });
      const artifact = { network: input.network, request, response: res.response, ...billing(res) };
      const raw = single(res);
      if (raw === "0x") {
        throw new ToolInputError(
          "EMPTY_RESULT",
          `the call returned no data: no contract at ${address} on ${input.network}, or it has no ${fn.name} function`,
        );
      }
      let decoded;
      try {
        decoded = iface.decodeFunctionResult(fn, raw);
      } catch (err) {
        throw new ToolInputError(
          "DECODE_FAILED",
          `the result does not decode as (${fn.outputs.map((o) => o.type).join(", ")}): ${(err as Error).message.split(" (")[0]}`,
        );
      }
      const values = fn.outputs.map((_, i) => plain(decoded[i]));
      const named = fn.outputs.every((o) => o.name) ? Object.fromEntries(fn.outputs.map((o, i) => [o.name, values[i]])) : undefined;
      return this.content(
        {
          network: input.network,
          address,
          function: fn.format("sighash"),
          blockTag: tag,
          result: values.length === 1 ? values[0] : (named ?? values),
        },
        artifact,
      );
    });
  }
}

export type { JsonRpcResponse };
