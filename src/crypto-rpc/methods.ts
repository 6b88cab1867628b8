/**
 * The crypto RPC proxy's JSON-RPC methods, per network family, as explicit names: the live proxy checks each
 * name against its family's list, not against a namespace (an unlisted `debug_*` or `zks_*` is a 400 like
 * `eth_sign`). One module for the `crypto_rpc` tool's policy and for the emulator's proxy, so the two cannot drift.
 *
 * The tool is read-only by default: a model with the generic tool can look at chains but cannot move funds,
 * sign, or poke node APIs. `allowWrites: true` opens the whole list the proxy accepts (billed 2× and 4× methods
 * among them); `extraMethods` adds names one by one, listed or not (a deployment may serve more). Filters and
 * subscriptions are refused always (the proxy is HTTP and load-balanced, so their state cannot live there).
 */
import type { NetworkFamily } from "./networks.js";

/** zkSync Era reads (`zks_*`); `zks_sendRawTransactionWithDetailedOutput` is the family's write. */
const ZKSYNC_READS = [
  "zks_estimateFee",
  "zks_estimateGasL1ToL2",
  "zks_L1ChainId",
  "zks_L1BatchNumber",
  "zks_getBlockDetails",
  "zks_getTransactionDetails",
  "zks_getRawBlockTransactions",
  "zks_getL1BatchDetails",
  "zks_getL1BatchBlockRange",
  "zks_getBytecodeByHash",
  "zks_getBridgeContracts",
  "zks_getBridgehubContract",
  "zks_getMainContract",
  "zks_getTestnetPaymaster",
  "zks_getAllAccountBalances",
  "zks_getL2ToL1MsgProof",
  "zks_getL2ToL1LogProof",
  "zks_getL1GasPrice",
  "zks_getFeeParams",
  "zks_getProtocolVersion",
  "zks_getProof",
  "zks_getBaseTokenL1Address",
  "zks_gasPerPubdata",
];
const LINEA_READS = ["linea_estimateGas", "linea_getProof", "linea_getTransactionExclusionStatusV1"];
const POLYGON_READS = [
  "bor_getAuthor",
  "bor_getCurrentValidators",
  "bor_getCurrentProposer",
  "bor_getRootHash",
  "bor_getSignersAtHash",
  "bor_getSnapshot",
  "bor_getSnapshotProposer",
  "bor_getSnapshotProposerSequence",
];

const EVM_READS = new Set([
  "eth_chainId",
  "eth_blockNumber",
  "eth_getBalance",
  "eth_getCode",
  "eth_getStorageAt",
  "eth_getTransactionCount",
  "eth_call",
  "eth_simulateV1",
  "eth_estimateGas",
  "eth_createAccessList",
  "eth_getProof",
  "eth_getBlockByNumber",
  "eth_getBlockByHash",
  "eth_getBlockReceipts",
  "eth_getBlockTransactionCountByNumber",
  "eth_getBlockTransactionCountByHash",
  "eth_getUncleCountByBlockNumber",
  "eth_getUncleCountByBlockHash",
  "eth_getTransactionByHash",
  "eth_getTransactionByBlockHashAndIndex",
  "eth_getTransactionByBlockNumberAndIndex",
  "eth_getTransactionReceipt",
  "eth_getLogs",
  "eth_gasPrice",
  "eth_maxPriorityFeePerGas",
  "eth_feeHistory",
  "eth_blobBaseFee",
  "eth_syncing",
  "eth_protocolVersion",
  // ERC-4337 bundler reads
  "eth_supportedEntryPoints",
  "eth_getUserOperationByHash",
  "eth_getUserOperationReceipt",
  "eth_estimateUserOperationGas",
  "pimlico_getUserOperationGasPrice",
  "pimlico_getUserOperationStatus",
  "net_version",
  "net_listening",
  "net_peerCount",
  "web3_clientVersion",
  "web3_sha3",
  ...ZKSYNC_READS,
  ...LINEA_READS,
  ...POLYGON_READS,
]);
const EVM_WRITES = ["eth_sendRawTransaction", "eth_sendUserOperation", "zks_sendRawTransactionWithDetailedOutput"];

/** Billed 2× (the "advanced" tier): traces and transaction-pool views. EVM only. */
const ADVANCED_METHODS = new Set([
  "trace_block",
  "trace_call",
  "trace_callMany",
  "trace_filter",
  "trace_transaction",
  "trace_rawTransaction",
  "debug_traceBlock",
  "debug_traceBlockByHash",
  "debug_traceBlockByNumber",
  "debug_traceCall",
  "debug_traceTransaction",
  "debug_storageRangeAt",
  "txpool_inspect",
  "txpool_status",
  "arbtrace_block",
  "arbtrace_call",
  "arbtrace_callMany",
  "arbtrace_filter",
  "arbtrace_transaction",
]);
/** Billed 4× (the "large" tier): replays and the whole transaction pool; on Solana, the whole-chain scans. */
const EVM_LARGE_METHODS = [
  "trace_replayBlockTransactions",
  "trace_replayTransaction",
  "txpool_content",
  "arbtrace_replayBlockTransactions",
  "arbtrace_replayTransaction",
];
const LARGE_METHODS = new Set([...EVM_LARGE_METHODS, "getLargestAccounts", "getSupply"]);

const SOLANA_READS = new Set([
  "getAccountInfo",
  "getBalance",
  "getBlock",
  "getBlockCommitment",
  "getBlockHeight",
  "getBlockProduction",
  "getBlockTime",
  "getBlocks",
  "getBlocksWithLimit",
  "getClusterNodes",
  "getEpochInfo",
  "getEpochSchedule",
  "getFeeForMessage",
  "getFirstAvailableBlock",
  "getGenesisHash",
  "getHealth",
  "getHighestSnapshotSlot",
  "getIdentity",
  "getInflationGovernor",
  "getInflationRate",
  "getInflationReward",
  "getLargestAccounts",
  "getLatestBlockhash",
  "getLeaderSchedule",
  "getMaxRetransmitSlot",
  "getMaxShredInsertSlot",
  "getMinimumBalanceForRentExemption",
  "getMultipleAccounts",
  "getProgramAccounts",
  "getRecentPerformanceSamples",
  "getRecentPrioritizationFees",
  "getSignatureStatuses",
  "getSignaturesForAddress",
  "getSlot",
  "getSlotLeader",
  "getSlotLeaders",
  "getStakeMinimumDelegation",
  "getSupply",
  "getTokenAccountBalance",
  "getTokenAccountsByDelegate",
  "getTokenAccountsByOwner",
  "getTokenLargestAccounts",
  "getTokenSupply",
  "getTransaction",
  "getTransactionCount",
  "getVersion",
  "getVoteAccounts",
  "isBlockhashValid",
  "minimumLedgerSlot",
]);
const SOLANA_WRITES = ["sendTransaction", "simulateTransaction"];

const STARKNET_READS = new Set([
  "starknet_specVersion",
  "starknet_getBlockWithTxHashes",
  "starknet_getBlockWithTxs",
  "starknet_getBlockWithReceipts",
  "starknet_getStateUpdate",
  "starknet_getStorageAt",
  "starknet_getTransactionStatus",
  "starknet_getTransactionByHash",
  "starknet_getTransactionByBlockIdAndIndex",
  "starknet_getTransactionReceipt",
  "starknet_getClass",
  "starknet_getClassHashAt",
  "starknet_getClassAt",
  "starknet_getBlockTransactionCount",
  "starknet_call",
  "starknet_estimateFee",
  "starknet_estimateMessageFee",
  "starknet_blockNumber",
  "starknet_blockHashAndNumber",
  "starknet_chainId",
  "starknet_syncing",
  "starknet_getEvents",
  "starknet_getNonce",
  "starknet_getStorageProof",
  "starknet_getMessagesStatus",
  "starknet_getCompiledCasm",
]);
const STARKNET_WRITES = [
  "starknet_addInvokeTransaction",
  "starknet_addDeclareTransaction",
  "starknet_addDeployAccountTransaction",
  "starknet_simulateTransactions",
  "starknet_traceTransaction",
  "starknet_traceBlockTransactions",
];

/** what the tool sends without `allowWrites` */
const READS: Record<NetworkFamily, ReadonlySet<string>> = { evm: EVM_READS, solana: SOLANA_READS, starknet: STARKNET_READS };
/** every method the proxy forwards, per family (the EVM list is shared by every EVM chain) */
const PROXY_METHODS: Record<NetworkFamily, ReadonlySet<string>> = {
  evm: new Set([...EVM_READS, ...EVM_WRITES, ...ADVANCED_METHODS, ...EVM_LARGE_METHODS]),
  solana: new Set([...SOLANA_READS, ...SOLANA_WRITES]),
  starknet: new Set([...STARKNET_READS, ...STARKNET_WRITES]),
};

/**
 * The pricing multiplier of a method: 4× and 2× for the methods the service names, else 1×. A name outside the
 * lists (only a deployment that checks namespaces forwards one) is priced by its namespace, as the published
 * description prices `trace_*`, `debug_*`, `arbtrace_*` (2×) and `arbtrace_replay*` (4×).
 */
export function methodTier(method: string): 1 | 2 | 4 {
  if (LARGE_METHODS.has(method) || method.startsWith("arbtrace_replay")) return 4;
  if (ADVANCED_METHODS.has(method) || /^(trace_|debug_|arbtrace_)/.test(method)) return 2;
  return 1;
}

/** Methods the proxy rejects whatever the flags: stateful filters and WebSocket subscriptions. */
const FILTER_METHODS = new Set([
  "eth_newFilter",
  "eth_newBlockFilter",
  "eth_newPendingTransactionFilter",
  "eth_getFilterChanges",
  "eth_getFilterLogs",
  "eth_uninstallFilter",
]);

function isFilter(method: string): boolean {
  return FILTER_METHODS.has(method);
}

function isSubscription(method: string): boolean {
  return (
    method === "eth_subscribe" ||
    method === "eth_unsubscribe" ||
    /Subscribe$|Unsubscribe$/.test(method) ||
    method.startsWith("starknet_subscribe")
  );
}

export function isFilterOrSubscription(method: string): boolean {
  return isFilter(method) || isSubscription(method);
}

/** Methods that need keys (or mining) held by the node: the proxy has none; transactions are signed locally and sent raw. */
export function needsNodeKeys(method: string): boolean {
  return /^eth_(sign|signTransaction|signTypedData\w*|sendTransaction|accounts|coinbase|mining|hashrate|submitWork|submitHashrate|getWork)$/.test(
    method,
  );
}
export const NODE_KEYS_REASON = "method needs keys held by the node; sign locally and use eth_sendRawTransaction";

export function familyOfMethod(method: string): NetworkFamily | undefined {
  if (/^(eth|net|web3|zks|linea|bor|debug|trace|txpool|arbtrace|pimlico|personal|admin|engine|miner|erigon|ots|parity)_/.test(method))
    return "evm";
  if (method.startsWith("starknet_")) return "starknet";
  if (/^[a-z]+[A-Z]/.test(method) || SOLANA_READS.has(method)) return "solana";
  return undefined;
}

/**
 * Why the proxy answers 400 to `method` on a network of `family` (its explicit lists), or undefined when it
 * forwards it. The reasons say what to do instead where there is something.
 */
export function unsupportedReason(family: NetworkFamily, method: string): string | undefined {
  if (isFilter(method)) return "stateful filter methods are not supported on the HTTP proxy; use eth_getLogs with a block range";
  if (isSubscription(method)) return "WebSocket-only method; this proxy is HTTP-only";
  const methodFamily = familyOfMethod(method);
  if (methodFamily && methodFamily !== family) return `${label(methodFamily)} method on ${aLabel(family)} network`;
  if (PROXY_METHODS[family].has(method)) return undefined;
  if (family === "evm" && needsNodeKeys(method)) return NODE_KEYS_REASON;
  if (family === "solana" && method.startsWith("getAsset")) return "DAS (digital asset) add-on methods are not served";
  if (family === "solana" && method.startsWith("getConfirmed"))
    return "deprecated alias; use getBlock, getBlocks, getTransaction or getSignaturesForAddress";
  return `not on the ${label(family)} method allowlist`;
}

export type MethodDecision =
  | { allowed: true; kind: "read" | "write" }
  | { allowed: false; code: "METHOD_NOT_ALLOWED" | "WRONG_FAMILY" | "UNSUPPORTED_METHOD"; reason: string };

export interface MethodPolicy {
  /** open the whole list the proxy accepts: writes, and the 2×/4× trace, debug and txpool methods */
  allowWrites?: boolean;
  /**
   * extra methods to allow, read-only mode or not: a listed one (e.g. `debug_traceTransaction`, billed 2×) without
   * opening writes, or one the lists lack that a deployment serves
   */
  extraMethods?: readonly string[];
}

/** Decides whether the generic tool may send `method` to a network of `family`. */
export function checkMethod(family: NetworkFamily, method: string, policy: MethodPolicy = {}): MethodDecision {
  const methodFamily = familyOfMethod(method);
  if (methodFamily && methodFamily !== family) {
    return {
      allowed: false,
      code: "WRONG_FAMILY",
      reason: `${method} is a ${label(methodFamily)} method, and this is ${aLabel(family)} network`,
    };
  }
  // filters and subscriptions cannot work on the proxy, even when named in extraMethods
  if (!isFilterOrSubscription(method) && (READS[family].has(method) || policy.extraMethods?.includes(method))) {
    return { allowed: true, kind: "read" };
  }
  // the proxy would answer 400: say so before sending, and why
  const unsupported = unsupportedReason(family, method);
  if (unsupported) return { allowed: false, code: "UNSUPPORTED_METHOD", reason: `${method} is not supported: ${unsupported}` };
  if (policy.allowWrites) return { allowed: true, kind: "write" };
  const tier = methodTier(method);
  return {
    allowed: false,
    code: "METHOD_NOT_ALLOWED",
    reason:
      tier > 1
        ? `${method} is billed ${tier}× and is not in this tool's read-only set (writes, signing and heavy trace methods are off)`
        : `${method} is not a read-only ${label(family)} method; this tool is read-only (writes, signing and node administration are off)`,
  };
}

export function label(family: NetworkFamily): string {
  return family === "evm" ? "EVM" : family === "solana" ? "Solana" : "Starknet";
}

function aLabel(family: NetworkFamily): string {
  return `${family === "evm" ? "an" : "a"} ${label(family)}`;
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

/** Credits the proxy bills an item that comes back with a JSON-RPC error (or an item of a node's 4xx). */
export const RPC_ERROR_CREDITS = 5;

/**
 * The credits of one item on `network`: base by chain (30 zkSync and Solana, else 20) × method tier, or the flat
 * error price. The fetch stack cuts a coalesced batch's cost per item by these weights.
 */
export function itemCredits(network: string, method: string, failed: boolean): number {
  if (failed) return RPC_ERROR_CREDITS;
  return (network.startsWith("zksync-") || network.startsWith("solana-") ? 30 : 20) * methodTier(method);
}
