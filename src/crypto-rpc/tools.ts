/**
 * LangChain tools over the crypto RPC proxy. Names are stable: `crypto_networks`, `crypto_rpc`,
 * `native_balance`, `erc20_balance`, `transaction_status`, `latest_block`, `contract_read`.
 *
 * Every tool answers with compact JSON text for the model and the raw JSON-RPC exchange as the ToolMessage
 * artifact (`responseFormat: "content_and_artifact"`).
 *
 * Errors: what the MODEL got wrong (bad params, unknown network, a refused method, a JSON-RPC error, a 400
 * from the proxy) comes back as `{"error": {"code", "message"}}` text so it can correct itself. What the
 * SYSTEM got wrong (auth, payment, rate limits after retries, network down, 5xx) is thrown: no rephrasing of
 * the arguments fixes those, and the caller's error handling must see them.
 */
import { StructuredTool, type ToolParams, type ToolRunnableConfig } from "@langchain/core/tools";
import { Interface, decodeBase58, formatUnits, isAddress, isHexString, getAddress, decodeBytes32String } from "ethers";
import { z } from "zod";
import { UnsupportedNetworkError, ValidationError } from "../http/errors.js";
import type { ServiceClient } from "../client.js";
import { DEFAULT_MAX_OUTPUT_CHARS, QUANTITY_METHODS, capOutput, hexToDecimal, isHexQuantity, plain, withDecimals } from "./format.js";
import { checkMethod, exampleReads, label, type MethodPolicy } from "./methods.js";
import { ToolInputError, errorContent, guard as guardTool, type ToolResult } from "../tools/results.js";
import { describeNetwork, groupNetworks, networkCacheFor, type NetworkCache, type NetworkFamily, type NetworkInfo } from "./networks.js";
import { cryptoRpc, type CryptoRpcBatchResult, type CryptoRpcSingleResult, type JsonRpcRequest, type JsonRpcResponse } from "./rpc.js";

export const DEFAULT_MAX_LOG_BLOCK_RANGE = 10_000;

export interface CryptoToolOptions extends MethodPolicy {
  client: ServiceClient;
  /** cap on the text a tool hands the model (default 6000 characters) */
  maxOutputChars?: number;
  /** network list TTL in ms (default 5 minutes); ignored when `networks` is given */
  networksTtlMs?: number;
  /** a shared network list (default: the client's) */
  networks?: NetworkCache;
  /** widest `eth_getLogs` block range the generic tool sends (default 10,000) */
  maxLogBlockRange?: number;
  /** LangChain tool params (callbacks, tags, ...) */
  toolParams?: ToolParams;
}

export { ToolInputError, type ToolResult } from "../tools/results.js";


interface Shared {
  client: ServiceClient;
  networks: NetworkCache;
  maxOutputChars: number;
  maxLogBlockRange: number;
  policy: MethodPolicy;
}

function shared(options: CryptoToolOptions): Shared {
  if (!options?.client) throw new ValidationError("crypto tools need a `client` (a ServiceClient)");
  const max = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  if (!(Number.isInteger(max) && max >= 200)) throw new ValidationError("maxOutputChars must be an integer >= 200");
  const range = options.maxLogBlockRange;
  if (range !== undefined && !(Number.isInteger(range) && range >= 1)) throw new ValidationError("maxLogBlockRange must be a positive integer");
  const ttl = options.networksTtlMs;
  if (ttl !== undefined && !(typeof ttl === "number" && ttl >= 0)) throw new ValidationError("networksTtlMs must be a non-negative number of ms");
  return {
    client: options.client,
    networks: options.networks ?? networkCacheFor(options.client, { ttlMs: options.networksTtlMs }),
    maxOutputChars: max,
    maxLogBlockRange: options.maxLogBlockRange ?? DEFAULT_MAX_LOG_BLOCK_RANGE,
    policy: { allowWrites: options.allowWrites ?? false, extraMethods: options.extraMethods },
  };
}

// --- shared helpers -----------------------------------------------------------------------------------

const networkField = z
  .string()
  .describe('network slug from crypto_networks, e.g. "base-mainnet" or "ethereum-sepolia"');
const evmAddressField = (what: string) => z.string().describe(`${what}: a 0x-prefixed 20-byte hex address`);
// Optional fields are `.nullish()`: OpenAI strict mode sends null for every optional field it leaves out,
// and models send block numbers as numbers.
const blockTagField = z
  .union([z.string(), z.number()])
  .nullish()
  .describe('block to read at: "latest" (default), "safe", "finalized", "earliest", a block number, or 0x-hex');

/** Runs a tool body; turns the model's mistakes (an unknown network among them) into `{error}` text. */
function guard(body: () => Promise<ToolResult>): Promise<ToolResult> {
  return guardTool(body, (err) =>
    err instanceof UnsupportedNetworkError ? errorContent("UNSUPPORTED_NETWORK", err.message, { validNetworks: err.validNetworks }) : undefined,
  );
}

async function network(s: Shared, slug: string, signal: AbortSignal | undefined, family?: NetworkFamily, what?: string): Promise<NetworkInfo> {
  const info = await s.networks.assertSupported(slug, { signal });
  if (family && info.family !== family) {
    throw new ToolInputError(
      "UNSUPPORTED_FAMILY",
      `${what ?? "this tool"} works on ${label(family)} networks; ${slug} is a ${label(info.family)} network (use crypto_rpc with ${exampleReads(info.family).slice(0, 3).join(", ")})`,
    );
  }
  return info;
}

function evmAddress(value: string, what: string): string {
  if (typeof value !== "string" || !isAddress(value)) {
    throw new ToolInputError("INVALID_ADDRESS", `${what} ${JSON.stringify(value)} is not a valid EVM address (0x + 40 hex characters, checksum must match if mixed-case)`);
  }
  return getAddress(value);
}

/**
 * Solana addresses are base58 of 32 bytes. Checked with ethers' base58 decoder (already loaded) rather than
 * pulling a Solana SDK into every import of the tools.
 */
function solanaAddress(value: string, what: string): string {
  const ok = typeof value === "string" && /^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(value) && decodeBase58(value) < 1n << 256n;
  if (!ok) throw new ToolInputError("INVALID_ADDRESS", `${what} ${JSON.stringify(value)} is not a valid Solana address (base58, 32 bytes)`);
  return value;
}

/**
 * A JSON-RPC QUANTITY: 0x + hex without leading zeros. (ethers' `toBeHex` pads to whole bytes, "0x01", which
 * geth and most providers reject as "hex number with leading zero digits"; ganache lets it pass.)
 */
function quantity(n: bigint): string {
  return `0x${n.toString(16)}`;
}

/** "latest" | "safe" | 123 | "123" | "0x7b" | "0x007b" -> a JSON-RPC block parameter. */
function blockTag(value: string | number | null | undefined): string {
  if (value === undefined || value === null || value === "") return "latest";
  if (typeof value === "number") {
    if (Number.isSafeInteger(value) && value >= 0) return quantity(BigInt(value));
  } else {
    const v = value.trim().toLowerCase();
    if (["latest", "safe", "finalized", "earliest", "pending"].includes(v)) return v;
    if (/^\d+$/.test(v)) return quantity(BigInt(v));
    if (/^0x[0-9a-f]{1,64}$/.test(v)) return quantity(BigInt(v));
  }
  throw new ToolInputError("INVALID_PARAMS", `blockTag ${JSON.stringify(value)} must be "latest", "safe", "finalized", "earliest", a block number or 0x-hex`);
}

function nativeUnit(slug: string): { symbol: string; decimals: number } {
  // a display label only; validity of a slug is the endpoint's business
  const prefix = slug.split("-")[0];
  const symbol = prefix === "polygon" ? "POL" : prefix === "bsc" ? "BNB" : prefix === "avalanche" ? "AVAX" : "ETH";
  return { symbol, decimals: 18 };
}

function single<T>(res: CryptoRpcSingleResult<T>): T {
  if (res.error) throw new RpcCallError(res.error.code, res.error.message, res.error.data);
  return res.result as T;
}

/** A JSON-RPC error inside a 200: the node refused the call (the model's params, usually). */
class RpcCallError extends ToolInputError {
  constructor(
    readonly rpcCode: number,
    message: string,
    readonly data?: unknown,
  ) {
    super("RPC_ERROR", `node error ${rpcCode}: ${message}`);
  }
}

function batchResult(res: CryptoRpcBatchResult, i: number): unknown {
  const r = res.responses[i];
  if (!r) throw new ToolInputError("RPC_ERROR", `no answer for request ${i}`);
  if (r.error) throw new RpcCallError(r.error.code, r.error.message, r.error.data);
  return r.result;
}

function billing(res: CryptoRpcSingleResult | CryptoRpcBatchResult) {
  return { credits: res.credits, costUsd: res.costUsd, requestId: res.requestId, idempotentReplayed: res.idempotentReplayed };
}

/**
 * Each tool's `_call` takes the run's `signal` (LangChain's third argument: `invoke(x, { signal })`, an agent's
 * timeout) and hands it to every request, so an abort ends a stalled call at once.
 */
abstract class CryptoTool<S extends z.ZodObject> extends StructuredTool<S> {
  override responseFormat = "content_and_artifact" as const;
  protected readonly s: Shared;
  constructor(options: CryptoToolOptions) {
    super(options.toolParams);
    this.s = shared(options);
  }
  protected content(value: unknown, artifact: unknown, hint?: string): ToolResult {
    return [capOutput(value, this.s.maxOutputChars, hint).text, artifact];
  }
}

// --- crypto_networks ----------------------------------------------------------------------------------

const networksSchema = z.object({
  family: z.enum(["evm", "solana", "starknet"]).nullish().describe("only this family (default: all)"),
  includeTestnets: z.union([z.boolean(), z.enum(["true", "false"])]).nullish().describe("include testnets and devnets (default true)"),
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
  method: z.string().describe("JSON-RPC method, e.g. eth_getBalance, eth_call, eth_getLogs (EVM); getBalance, getAccountInfo (Solana); starknet_call (Starknet)"),
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
      const request: JsonRpcRequest = { method: input.method, ...(params !== undefined ? { params: params as JsonRpcRequest["params"] } : {}) };
      const res = await cryptoRpc(this.s.client, input.network, request, {
        networks: this.s.networks,
        signal,
        // a write retried by the stack must not run twice
        idempotencyKey: decision.kind === "write" ? true : undefined,
      });
      const artifact = { network: input.network, request, response: res.response, ...billing(res) };
      if (res.error) {
        return [JSON.stringify({ error: { code: "RPC_ERROR", rpcCode: res.error.code, message: res.error.message, ...(res.error.data !== undefined ? { data: res.error.data } : {}) } }), artifact];
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
      throw new ToolInputError("INVALID_PARAMS", 'eth_getLogs takes one filter object: [{"address": "0x...", "fromBlock": "0x...", "toBlock": "0x...", "topics": [...]}]');
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
      throw new ToolInputError("INVALID_PARAMS", `eth_getLogs ${name} ${JSON.stringify(v)} must be a block number (0x-hex) or a tag like "latest"`);
    };
    f.fromBlock = norm(f.fromBlock, "fromBlock");
    f.toBlock = norm(f.toBlock, "toBlock");
    let latest: bigint | undefined;
    const resolve = async (tag: string): Promise<bigint> => {
      if (tag === "earliest") return 0n;
      if (isHexQuantity(tag)) return BigInt(tag);
      latest ??= BigInt(single(await cryptoRpc<string>(this.s.client, slug, { method: "eth_blockNumber" }, { networks: this.s.networks, signal })));
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
        const res = await cryptoRpc<{ value: number; context?: { slot?: number } }>(this.s.client, input.network, request, { networks: this.s.networks, signal });
        const value = single(res);
        const lamports = BigInt(value.value);
        return this.content(
          { balance: { lamports: lamports.toString(), sol: formatUnits(lamports, 9), symbol: "SOL" }, address, network: input.network, slot: value.context?.slot },
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
        { balance: { wei: wei.toString(), formatted: formatUnits(wei, unit.decimals), symbol: unit.symbol }, address, network: input.network, blockTag: tag },
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
          JSON.stringify({ error: { code: "NOT_A_TOKEN", message: `no ERC-20 contract answered balanceOf at ${token} on ${input.network} (no code there, or not a token)` } }),
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
    throw new ToolInputError("INVALID_ARGS", `args must be an array of arguments in order, e.g. ["0xabc...", "1000"]; got text that is not a JSON array: ${text.slice(0, 80)}`);
  }
  if (!Array.isArray(parsed)) throw new ToolInputError("INVALID_ARGS", 'args must be an array of arguments in order, e.g. ["0xabc...", "1000"]');
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
        return this.content({ network: input.network, hash: input.hash, status: "not_found", note: "no such transaction on this network (check the network and the hash)" }, artifact);
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
  description = "The newest block of a network: number, hash, time, transaction count (EVM); slot and block height (Solana); number and hash (Starknet).";
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
        const res = await cryptoRpc<{ block_hash: string; block_number: number }>(this.s.client, input.network, request, { networks: this.s.networks, signal });
        const r = single(res);
        return this.content(
          { network: input.network, number: String(r.block_number), hash: r.block_hash },
          { network: input.network, request, response: res.response, ...billing(res) },
        );
      }
      const request: JsonRpcRequest = { method: "eth_getBlockByNumber", params: ["latest", false] };
      const res = await cryptoRpc<Record<string, unknown> | null>(this.s.client, input.network, request, { networks: this.s.networks, signal });
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
        throw new ToolInputError("INVALID_ABI", `cannot parse ABI fragment ${JSON.stringify(input.function)}: ${(err as Error).message.split(" (")[0]}`);
      }
      const fn = iface.fragments.find((f) => f.type === "function") as import("ethers").FunctionFragment | undefined;
      if (!fn) throw new ToolInputError("INVALID_ABI", "the fragment must describe a function");
      if (fn.outputs.length === 0) {
        throw new ToolInputError("INVALID_ABI", `add the return types to the fragment, e.g. "${fn.format("sighash")} view returns (uint256)"`);
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
        throw new ToolInputError("EMPTY_RESULT", `the call returned no data: no contract at ${address} on ${input.network}, or it has no ${fn.name} function`);
      }
      let decoded;
      try {
        decoded = iface.decodeFunctionResult(fn, raw);
      } catch (err) {
        throw new ToolInputError("DECODE_FAILED", `the result does not decode as (${fn.outputs.map((o) => o.type).join(", ")}): ${(err as Error).message.split(" (")[0]}`);
      }
      const values = fn.outputs.map((o, i) => plain(decoded[i]));
      const named = fn.outputs.every((o) => o.name) ? Object.fromEntries(fn.outputs.map((o, i) => [o.name, values[i]])) : undefined;
      return this.content(
        { network: input.network, address, function: fn.format("sighash"), blockTag: tag, result: values.length === 1 ? values[0] : (named ?? values) },
        artifact,
      );
    });
  }
}

export type { JsonRpcResponse };
