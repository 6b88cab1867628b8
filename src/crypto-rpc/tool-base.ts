/**
 * What the crypto tools share (./tools.ts: `crypto_networks`, `crypto_rpc`; ./read-tools.ts: `native_balance`,
 * `erc20_balance`, `transaction_status`, `latest_block`, `contract_read`): their options, the checks of the model's
 * arguments, and the base class.
 *
 * Every tool answers with compact JSON text for the model and the raw JSON-RPC exchange as the ToolMessage
 * artifact (`responseFormat: "content_and_artifact"`).
 *
 * Errors: what the MODEL got wrong (bad params, unknown network, a refused method, a JSON-RPC error, a 400
 * from the proxy) comes back as `{"error": {"code", "message"}}` text so it can correct itself. What the
 * SYSTEM got wrong (auth, payment, rate limits after retries, network down, 5xx) is thrown: no rephrasing of
 * the arguments fixes those, and the caller's error handling must see them.
 */
import { StructuredTool, type ToolParams } from "@langchain/core/tools";
import { decodeBase58, isAddress, getAddress } from "ethers";
import { z } from "zod";
import { UnsupportedNetworkError, ValidationError } from "../http/errors.js";
import type { ServiceClient } from "../client.js";
import { DEFAULT_MAX_OUTPUT_CHARS, capOutput } from "./format.js";
import { exampleReads, label, type MethodPolicy } from "./methods.js";
import { ToolInputError, errorContent, guard as guardTool, type ToolResult } from "../tools/results.js";
import { networkCacheFor, type NetworkCache, type NetworkFamily, type NetworkInfo } from "./networks.js";
import type { CryptoRpcBatchResult, CryptoRpcSingleResult } from "./rpc.js";

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

export interface Shared {
  client: ServiceClient;
  networks: NetworkCache;
  maxOutputChars: number;
  maxLogBlockRange: number;
  policy: MethodPolicy;
}

export function shared(options: CryptoToolOptions): Shared {
  if (!options?.client) throw new ValidationError("crypto tools need a `client` (a ServiceClient)");
  const max = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  if (!(Number.isInteger(max) && max >= 200)) throw new ValidationError("maxOutputChars must be an integer >= 200");
  const range = options.maxLogBlockRange;
  if (range !== undefined && !(Number.isInteger(range) && range >= 1))
    throw new ValidationError("maxLogBlockRange must be a positive integer");
  const ttl = options.networksTtlMs;
  if (ttl !== undefined && !(typeof ttl === "number" && ttl >= 0))
    throw new ValidationError("networksTtlMs must be a non-negative number of ms");
  return {
    client: options.client,
    networks: options.networks ?? networkCacheFor(options.client, { ttlMs: options.networksTtlMs }),
    maxOutputChars: max,
    maxLogBlockRange: options.maxLogBlockRange ?? DEFAULT_MAX_LOG_BLOCK_RANGE,
    policy: { allowWrites: options.allowWrites ?? false, extraMethods: options.extraMethods },
  };
}

// --- shared helpers -----------------------------------------------------------------------------------

export const networkField = z.string().describe('network slug from crypto_networks, e.g. "base-mainnet" or "ethereum-sepolia"');
export const evmAddressField = (what: string) => z.string().describe(`${what}: a 0x-prefixed 20-byte hex address`);
// Optional fields are `.nullish()`: OpenAI strict mode sends null for every optional field it leaves out,
// and models send block numbers as numbers.
export const blockTagField = z
  .union([z.string(), z.number()])
  .nullish()
  .describe('block to read at: "latest" (default), "safe", "finalized", "earliest", a block number, or 0x-hex');

/** Runs a tool body; turns the model's mistakes (an unknown network among them) into `{error}` text. */
export function guard(body: () => Promise<ToolResult>): Promise<ToolResult> {
  return guardTool(body, (err) =>
    err instanceof UnsupportedNetworkError
      ? errorContent("UNSUPPORTED_NETWORK", err.message, { validNetworks: err.validNetworks })
      : undefined,
  );
}

export async function network(
  s: Shared,
  slug: string,
  signal: AbortSignal | undefined,
  family?: NetworkFamily,
  what?: string,
): Promise<NetworkInfo> {
  const info = await s.networks.assertSupported(slug, { signal });
  if (family && info.family !== family) {
    throw new ToolInputError(
      "UNSUPPORTED_FAMILY",
      `${what ?? "this tool"} works on ${label(family)} networks; ${slug} is a ${label(info.family)} network (use crypto_rpc with ${exampleReads(info.family).slice(0, 3).join(", ")})`,
    );
  }
  return info;
}

export function evmAddress(value: string, what: string): string {
  if (typeof value !== "string" || !isAddress(value)) {
    throw new ToolInputError(
      "INVALID_ADDRESS",
      `${what} ${JSON.stringify(value)} is not a valid EVM address (0x + 40 hex characters, checksum must match if mixed-case)`,
    );
  }
  return getAddress(value);
}

/**
 * Solana addresses are base58 of 32 bytes. Checked with ethers' base58 decoder (already loaded) rather than
 * pulling a Solana SDK into every import of the tools.
 */
export function solanaAddress(value: string, what: string): string {
  const ok = typeof value === "string" && /^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(value) && decodeBase58(value) < 1n << 256n;
  if (!ok) throw new ToolInputError("INVALID_ADDRESS", `${what} ${JSON.stringify(value)} is not a valid Solana address (base58, 32 bytes)`);
  return value;
}

/**
 * A JSON-RPC QUANTITY: 0x + hex without leading zeros. (ethers' `toBeHex` pads to whole bytes, "0x01", which
 * geth and most providers reject as "hex number with leading zero digits"; ganache lets it pass.)
 */
export function quantity(n: bigint): string {
  return `0x${n.toString(16)}`;
}

/** "latest" | "safe" | 123 | "123" | "0x7b" | "0x007b" -> a JSON-RPC block parameter. */
export function blockTag(value: string | number | null | undefined): string {
  if (value === undefined || value === null || value === "") return "latest";
  if (typeof value === "number") {
    if (Number.isSafeInteger(value) && value >= 0) return quantity(BigInt(value));
  } else {
    const v = value.trim().toLowerCase();
    if (["latest", "safe", "finalized", "earliest", "pending"].includes(v)) return v;
    if (/^\d+$/.test(v)) return quantity(BigInt(v));
    if (/^0x[0-9a-f]{1,64}$/.test(v)) return quantity(BigInt(v));
  }
  throw new ToolInputError(
    "INVALID_PARAMS",
    `blockTag ${JSON.stringify(value)} must be "latest", "safe", "finalized", "earliest", a block number or 0x-hex`,
  );
}

export function nativeUnit(slug: string): { symbol: string; decimals: number } {
  // a display label only; validity of a slug is the endpoint's business
  const prefix = slug.split("-")[0];
  const symbol = prefix === "polygon" ? "POL" : prefix === "bsc" ? "BNB" : prefix === "avalanche" ? "AVAX" : "ETH";
  return { symbol, decimals: 18 };
}

export function single<T>(res: CryptoRpcSingleResult<T>): T {
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

export function batchResult(res: CryptoRpcBatchResult, i: number): unknown {
  const r = res.responses[i];
  if (!r) throw new ToolInputError("RPC_ERROR", `no answer for request ${i}`);
  if (r.error) throw new RpcCallError(r.error.code, r.error.message, r.error.data);
  return r.result;
}

export function billing(res: CryptoRpcSingleResult | CryptoRpcBatchResult) {
  return { credits: res.credits, costUsd: res.costUsd, requestId: res.requestId, idempotentReplayed: res.idempotentReplayed };
}

/**
 * Each tool's `_call` takes the run's `signal` (LangChain's third argument: `invoke(x, { signal })`, an agent's
 * timeout) and hands it to every request, so an abort ends a stalled call at once.
 */
export abstract class CryptoTool<S extends z.ZodObject> extends StructuredTool<S> {
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
