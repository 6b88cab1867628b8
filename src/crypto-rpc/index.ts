/** Crypto RPC: the network list, JSON-RPC calls through the proxy, LangChain tools, and library adapters. */
export {
  NetworkCache,
  networkCacheFor,
  describeNetwork,
  groupNetworks,
  unsupportedNetwork,
  DEFAULT_NETWORKS_TTL_MS,
  type NetworkCacheOptions,
  type NetworkFamily,
  type NetworkInfo,
  type GroupedNetworks,
} from "./networks.js";
export {
  cryptoRpc,
  normalizeRequest,
  MAX_BATCH_SIZE,
  type JsonRpcId,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type JsonRpcErrorObject,
  type CryptoRpcOptions,
  type CryptoRpcBilling,
  type CryptoRpcSingleResult,
  type CryptoRpcBatchResult,
} from "./rpc.js";
export {
  checkMethod,
  isFilterOrSubscription,
  methodTier,
  needsNodeKeys,
  unsupportedReason,
  NODE_KEYS_REASON,
  type MethodPolicy,
  type MethodDecision,
} from "./methods.js";
export { capOutput, withDecimals, DEFAULT_MAX_OUTPUT_CHARS } from "./format.js";
export { CryptoNetworksTool, CryptoRpcTool } from "./tools.js";
export { NativeBalanceTool, Erc20BalanceTool, TransactionStatusTool, LatestBlockTool, ContractReadTool } from "./read-tools.js";
export { ToolInputError, DEFAULT_MAX_LOG_BLOCK_RANGE, type CryptoToolOptions } from "./tool-base.js";
export { CryptoRpcToolkit, type CryptoRpcToolkitOptions } from "./toolkit.js";
export { createEthersProvider, type EthersProviderOptions } from "./adapters.js";
