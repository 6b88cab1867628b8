/**
 * LangChain tools over the crypto RPC proxy: the network list (`crypto_networks`) and any allowed JSON-RPC call
 * (`crypto_rpc`). The reads built on them (balances, transactions, blocks, contract views) are in ./read-tools.ts;
 * what all of them share is in ./tool-base.ts.
 */
import type { ToolRunnableConfig } from "@langchain/core/tools";
import { z } from "zod";
import { QUANTITY_METHODS, hexToDecimal, isHexQuantity, withDecimals } from "./format.js";
import { checkMethod, exampleReads } from "./methods.js";
import { ToolInputError, type ToolResult } from "../tools/results.js";
import { groupNetworks } from "./networks.js";
import { cryptoRpc, type JsonRpcRequest } from "./rpc.js";
import { type CryptoToolOptions, networkField, guard, quantity, single, CryptoTool, billing, network } from "./tool-base.js";
// --- crypto_networks ----------------------------------------------------------------------------------

const networksSchema = z.object({
  family: z.enum(["evm", "solana", "starknet"]).nullish().describe("only this family (default: all)"),
  includeTestnets: z
    .union([z.boolean(), z.enum(["true", "false"])])
    .nullish()
    .describe("include testnets and devnets (default true)"),
});

export class CryptoNetworksTool extends CryptoTool<typeof networksSchema> {
  static override lc_name() {
    return "CryptoNetworksTool";
  }
  name = "crypto_networks";
  description =
    "List the blockchain networks the crypto RPC proxy serves right now, grouped by family (EVM, Solana, Starknet) and mainnet/testnet. Call it before the other crypto tools when you are not sure of a network slug.";
  schema = networksSchema;

  protected async _call(input: z.infer<typeof networksSchema>, _run?: unknown, config?: ToolRunnableConfig): Promise<ToolResult> {
    const signal = config?.signal;
    return guard(async () => {
      const slugs = await this.s.networks.get({ signal });
      const grouped = groupNetworks(slugs);
      const out: Record<string, unknown> = {};
      for (const family of ["evm", "solana", "starknet"] as const) {
        if (input.family && input.family !== family) continue;
        const g = grouped[family];
        const entry = input.includeTestnets === false || input.includeTestnets === "false" ? { mainnet: g.mainnet } : g;
        if (g.mainnet.length + g.testnet.length > 0) out[family] = entry;
      }
      return this.content({ networks: out, total: slugs.length }, { networks: slugs });
    });
  }
}

// --- crypto_rpc (generic) -----------------------------------------------------------------------------

const rpcSchema = z.object({
  network: networkField,
  method: z
    .string()
    .describe(
      "JSON-RPC method, e.g. eth_getBalance, eth_call, eth_getLogs (EVM); getBalance, getAccountInfo (Solana); starknet_call (Starknet)",
    ),
  params: z
    .union([z.array(z.any()), z.record(z.string(), z.any()), z.string()])
    .nullish()
    .describe('JSON-RPC params: usually an array, e.g. ["0xabc...", "latest"] (a JSON string of it is accepted too)'),
});

export class CryptoRpcTool extends CryptoTool<typeof rpcSchema> {
  static override lc_name() {
    return "CryptoRpcTool";
  }
  name = "crypto_rpc";
  description: string;
  schema = rpcSchema;

  constructor(options: CryptoToolOptions) {
    super(options);
    this.description =
      "Send one JSON-RPC call to a blockchain node through the crypto RPC proxy and get its result. " +
      (this.s.policy.allowWrites
        ? "Writes are enabled (e.g. eth_sendRawTransaction of an already signed transaction). "
        : "Read-only: state-changing, signing and node-admin methods are refused. ") +
      "Hex quantities come back with a decimal copy (fieldDecimal). eth_getLogs needs a bounded block range. " +
      "Prefer the typed tools (native_balance, erc20_balance, transaction_status, latest_block, contract_read) when they fit.";
  }

  protected async _call(input: z.infer<typeof rpcSchema>, _run?: unknown, config?: ToolRunnableConfig): Promise<ToolResult> {
    const signal = config?.signal;
    return guard(async () => {
      const info = await network(this.s, input.network, signal);
      const decision = checkMethod(info.family, input.method, this.s.policy);
      if (!decision.allowed) {
        throw new ToolInputError(decision.code, `${decision.reason}. Read methods here include ${exampleReads(info.family).join(", ")}.`);
      }
      let params = parseParams(input.params);
      if (input.method === "eth_getLogs") params = await this.boundedLogParams(input.network, params, signal);
      const request: JsonRpcRequest = {
        method: input.method,
        ...(params !== undefined ? { params: params as JsonRpcRequest["params"] } : {}),
      };
      const res = await cryptoRpc(this.s.client, input.network, request, {
        networks: this.s.networks,
        signal,
        // a write retried by the stack must not run twice
        idempotencyKey: decision.kind === "write" ? true : undefined,
      });
      const artifact = { network: input.network, request, response: res.response, ...billing(res) };
      if (res.error) {
        return [
          JSON.stringify({
            error: {
              code: "RPC_ERROR",
              rpcCode: res.error.code,
              message: res.error.message,
              ...(res.error.data !== undefined ? { data: res.error.data } : {}),
            },
          }),
          artifact,
        ];
      }
      const result = res.result;
      const body: Record<string, unknown> = { network: input.network, method: input.method, result: withDecimals(result) };
      if (QUANTITY_METHODS.has(input.method) && isHexQuantity(result)) body.resultDecimal = hexToDecimal(result);
      if (Array.isArray(result)) body.count = result.length;
      return this.content(body, artifact, logsHint(input.method));
    });
  }

  /** eth_getLogs over a bounded range: providers cap it, and a wide range floods the model's context. */
  private async boundedLogParams(slug: string, params: unknown, signal: AbortSignal | undefined): Promise<unknown> {
    const filter = Array.isArray(params) ? params[0] : undefined;
    if (!filter || typeof filter !== "object" || Array.isArray(filter) || (params as unknown[]).length !== 1) {
      throw new ToolInputError(
        "INVALID_PARAMS",
        'eth_getLogs takes one filter object: [{"address": "0x...", "fromBlock": "0x...", "toBlock": "0x...", "topics": [...]}]',
      );
    }
    const f = { ...(filter as Record<string, unknown>) };
    if (f.blockHash !== undefined) return [f];
    const tags = ["latest", "safe", "finalized", "pending"];
    const norm = (v: unknown, name: string): string => {
      if (v === undefined) return "latest";
      if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) return quantity(BigInt(v));
      if (typeof v === "string") {
        if (v === "earliest" || tags.includes(v) || isHexQuantity(v)) return v;
        if (/^\d+$/.test(v)) return quantity(BigInt(v));
      }
      throw new ToolInputError(
        "INVALID_PARAMS",
        `eth_getLogs ${name} ${JSON.stringify(v)} must be a block number (0x-hex) or a tag like "latest"`,
      );
    };
    f.fromBlock = norm(f.fromBlock, "fromBlock");
    f.toBlock = norm(f.toBlock, "toBlock");
    let latest: bigint | undefined;
    const resolve = async (tag: string): Promise<bigint> => {
      if (tag === "earliest") return 0n;
      if (isHexQuantity(tag)) return BigInt(tag);
      latest ??= BigInt(
        single(await cryptoRpc<string>(this.s.client, slug, { method: "eth_blockNumber" }, { networks: this.s.networks, signal })),
      );
      return latest;
    };
    const from = await resolve(f.fromBlock as string);
    const to = await resolve(f.toBlock as string);
    if (to < from) throw new ToolInputError("INVALID_PARAMS", `eth_getLogs toBlock (${to}) is before fromBlock (${from})`);
    const span = to - from + 1n;
    if (span > BigInt(this.s.maxLogBlockRange)) {
      throw new ToolInputError(
        "RANGE_TOO_WIDE",
        `eth_getLogs spans ${span} blocks (${from}..${to}); the limit is ${this.s.maxLogBlockRange}. Narrow fromBlock/toBlock (latest block is ${latest ?? "unknown"}).`,
      );
    }
    return [f];
  }
}

function logsHint(method: string): string | undefined {
  return method === "eth_getLogs"
    ? "output was cut; narrow the block range or filter by address/topics"
    : method.startsWith("eth_getBlockBy")
      ? "output was cut; pass false as the second param to get transaction hashes only"
      : undefined;
}

function parseParams(params: unknown): unknown {
  if (params === null) return undefined;
  if (typeof params !== "string") return params;
  const text = params.trim();
  if (text === "") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ToolInputError("INVALID_PARAMS", `params must be a JSON array or object; got text that is not JSON: ${text.slice(0, 80)}`);
  }
  if (!parsed || typeof parsed !== "object") throw new ToolInputError("INVALID_PARAMS", "params must be a JSON array or object");
  return parsed;
}
