/**
 * `CryptoRpcToolkit`: the crypto tools built from one `ServiceClient` (so API-key or wallet auth, retries and
 * payments apply unchanged), sharing one network list.
 */
import { BaseToolkit, type StructuredToolInterface } from "@langchain/core/tools";
import { NetworkCache, networkCacheFor } from "./networks.js";
import { CryptoNetworksTool, CryptoRpcTool } from "./tools.js";
import { ContractReadTool, Erc20BalanceTool, LatestBlockTool, NativeBalanceTool, TransactionStatusTool } from "./read-tools.js";
import type { CryptoToolOptions } from "./tool-base.js";

export type CryptoRpcToolkitOptions = CryptoToolOptions;

export class CryptoRpcToolkit extends BaseToolkit {
  tools: StructuredToolInterface[];

  constructor(options: CryptoRpcToolkitOptions) {
    super();
    // one list for all the tools: the client's shared one, or a dedicated one when a TTL is asked for
    const networks =
      options.networks ??
      (options.client
        ? options.networksTtlMs !== undefined
          ? new NetworkCache(options.client, { ttlMs: options.networksTtlMs })
          : networkCacheFor(options.client)
        : undefined);
    const shared: CryptoToolOptions = { ...options, ...(networks ? { networks } : {}) };
    this.tools = [
      new CryptoNetworksTool(shared),
      new CryptoRpcTool(shared),
      new NativeBalanceTool(shared),
      new Erc20BalanceTool(shared),
      new TransactionStatusTool(shared),
      new LatestBlockTool(shared),
      new ContractReadTool(shared),
    ];
  }
}
