/**
 * Which JSON-RPC methods the `crypto_rpc` tool sends, per network family. Read-only by default: a model
 * with the generic tool can look at chains but cannot move funds, sign, or poke node admin APIs. Writes are
 * opened with `allowWrites: true`; filters and subscriptions are refused always (the proxy is HTTP and
 * load-balanced, so their state cannot live there: it answers 400).
 */
import type { NetworkFamily } from "./networks.js";

const EVM_READS = new Set([
  "eth_chainId", "eth_blockNumber", "eth_getBalance", "eth_getCode", "eth_getStorageAt", "eth_getTransactionCount",
  "eth_call", "eth_estimateGas", "eth_createAccessList", "eth_getProof",
  "eth_getBlockByNumber", "eth_getBlockByHash", "eth_getBlockReceipts",
  "eth_getBlockTransactionCountByNumber", "eth_getBlockTransactionCountByHash",
  "eth_getUncleCountByBlockNumber", "eth_getUncleCountByBlockHash",
  "eth_getTransactionByHash", "eth_getTransactionByBlockHashAndIndex", "eth_getTransactionByBlockNumberAndIndex",
  "eth_getTransactionReceipt", "eth_getLogs",
  "eth_gasPrice", "eth_maxPriorityFeePerGas", "eth_feeHistory", "eth_blobBaseFee", "eth_syncing", "eth_protocolVersion",
  "eth_supportedEntryPoints", "eth_getUserOperationByHash", "eth_getUserOperationReceipt", "eth_estimateUserOperationGas",
  "net_version", "net_listening", "net_peerCount", "web3_clientVersion", "web3_sha3",
]);
/** chain-family read namespaces (zkSync, Linea, Polygon PoS); anything that sends is excluded below */
const EVM_READ_PREFIXES = ["zks_", "linea_", "bor_"];

const SOLANA_READS = new Set([
  "getAccountInfo", "getBalance", "getBlock", "getBlockCommitment", "getBlockHeight", "getBlockProduction", "getBlockTime",
  "getBlocks", "getBlocksWithLimit", "getClusterNodes", "getEpochInfo", "getEpochSchedule", "getFeeForMessage",
  "getFirstAvailableBlock", "getGenesisHash", "getHealth", "getHighestSnapshotSlot", "getIdentity", "getInflationGovernor",
  "getInflationRate", "getInflationReward", "getLargestAccounts", "getLatestBlockhash", "getLeaderSchedule",
  "getMaxRetransmitSlot", "getMaxShredInsertSlot", "getMinimumBalanceForRentExemption", "getMultipleAccounts",
  "getProgramAccounts", "getRecentPerformanceSamples", "getRecentPrioritizationFees", "getSignatureStatuses",
  "getSignaturesForAddress", "getSlot", "getSlotLeader", "getSlotLeaders", "getStakeMinimumDelegation", "getSupply",
  "getTokenAccountBalance", "getTokenAccountsByDelegate", "getTokenAccountsByOwner", "getTokenLargestAccounts",
  "getTokenSupply", "getTransaction", "getTransactionCount", "getVersion", "getVoteAccounts", "isBlockhashValid",
  "minimumLedgerSlot",
]);

const STARKNET_READS = new Set([
  "starknet_specVersion", "starknet_getBlockWithTxHashes", "starknet_getBlockWithTxs", "starknet_getBlockWithReceipts",
  "starknet_getStateUpdate", "starknet_getStorageAt", "starknet_getTransactionStatus", "starknet_getTransactionByHash",
  "starknet_getTransactionByBlockIdAndIndex", "starknet_getTransactionReceipt", "starknet_getClass",
  "starknet_getClassHashAt", "starknet_getClassAt", "starknet_getBlockTransactionCount", "starknet_call",
  "starknet_estimateFee", "starknet_estimateMessageFee", "starknet_blockNumber", "starknet_blockHashAndNumber",
  "starknet_chainId", "starknet_syncing", "starknet_getEvents", "starknet_getNonce", "starknet_getStorageProof",
  "starknet_getMessagesStatus", "starknet_getCompiledCasm",
]);

/** Methods the proxy rejects whatever the flags: stateful filters and WebSocket subscriptions. */
const EVM_FILTERS = new Set([
  "eth_newFilter", "eth_newBlockFilter", "eth_newPendingTransactionFilter", "eth_getFilterChanges", "eth_getFilterLogs",
  "eth_uninstallFilter", "eth_subscribe", "eth_unsubscribe",
]);

export function isFilterOrSubscription(method: string): boolean {
  return EVM_FILTERS.has(method) || /Subscribe$|Unsubscribe$/.test(method) || /^starknet_subscribe/.test(method);
}

export type MethodDecision =
  | { allowed: true; kind: "read" | "write" }
  | { allowed: false; code: "METHOD_NOT_ALLOWED" | "WRONG_FAMILY" | "UNSUPPORTED_METHOD"; reason: string };

export function familyOfMethod(method: string): NetworkFamily | undefined {
  if (/^(eth|net|web3|zks|linea|bor|debug|trace|txpool|arbtrace|personal|admin|engine|miner|erigon|ots|parity)_/.test(method)) return "evm";
  if (method.startsWith("starknet_")) return "starknet";
  if (/^[a-z]+[A-Z]/.test(method) || SOLANA_READS.has(method)) return "solana";
  return undefined;
}

function isRead(family: NetworkFamily, method: string): boolean {
  switch (family) {
    case "evm":
      return EVM_READS.has(method) || (EVM_READ_PREFIXES.some((p) => method.startsWith(p)) && !/send|submit/i.test(method));
    case "solana":
      return SOLANA_READS.has(method);
    case "starknet":
      return STARKNET_READS.has(method);
  }
}

export interface MethodPolicy {
  /** lift the read-only allowlist (writes, signing, node APIs go to the proxy, which has the last word) */
  allowWrites?: boolean;
  /** extra methods to allow in read-only mode (e.g. `debug_traceTransaction`: billed 2×) */
  extraMethods?: readonly string[];
}

/** Decides whether the generic tool may send `method` to a network of `family`. */
export function checkMethod(family: NetworkFamily, method: string, policy: MethodPolicy = {}): MethodDecision {
  if (isFilterOrSubscription(method)) {
    return {
      allowed: false,
      code: "UNSUPPORTED_METHOD",
      reason: `${method} is not supported: the proxy is plain HTTP without filter or subscription state${family === "evm" ? "; use eth_getLogs with a block range instead" : ""}`,
    };
  }
  const methodFamily = familyOfMethod(method);
  if (methodFamily && methodFamily !== family) {
    return { allowed: false, code: "WRONG_FAMILY", reason: `${method} is a ${label(methodFamily)} method, and this is a ${label(family)} network` };
  }
  if (isRead(family, method) || policy.extraMethods?.includes(method)) return { allowed: true, kind: "read" };
  if (policy.allowWrites) return { allowed: true, kind: "write" };
  return {
    allowed: false,
    code: "METHOD_NOT_ALLOWED",
    reason: `${method} is not a read-only ${label(family)} method; this tool is read-only (writes, signing and node administration are off)`,
  };
}

export function label(family: NetworkFamily): string {
  return family === "evm" ? "EVM" : family === "solana" ? "Solana" : "Starknet";
}

/** A few read methods per family, for tool descriptions and error hints. */
export function exampleReads(family: NetworkFamily): string[] {
  switch (family) {
    case "evm":
      return ["eth_blockNumber", "eth_getBalance", "eth_call", "eth_getTransactionReceipt", "eth_getLogs", "eth_getBlockByNumber"];
    case "solana":
      return ["getBalance", "getAccountInfo", "getSlot", "getTransaction", "getSignaturesForAddress", "getTokenAccountsByOwner"];
    case "starknet":
      return ["starknet_blockNumber", "starknet_chainId", "starknet_call", "starknet_getTransactionReceipt", "starknet_getStorageAt"];
  }
}
