/**
 * The chain libraries users already have, pointed at the proxy through the one fetch stack, so API-key or
 * wallet auth (a fresh SIWX per request), retries and payments apply unchanged:
 * - ethers v6 `JsonRpcProvider` (a `FetchRequest` whose per-instance `getUrlFunc` is the stack);
 * (the `@solana/web3.js` 1.x `Connection` is in solana-connection.ts, its own entry: that library is an optional peer)
 */
import { FetchRequest, JsonRpcProvider, Network, type GetUrlResponse } from "ethers";
import { ConfigurationError, ValidationError } from "../http/errors.js";
import type { ServiceClient } from "../client.js";
import { label } from "./methods.js";
import { networkCacheFor, type NetworkCache } from "./networks.js";
import { MAX_BATCH_SIZE, cryptoRpc, validateSlug } from "./rpc.js";

export interface EthersProviderOptions {
  /** the chain id to pin; asked once with eth_chainId when absent (a slug's usual id is never assumed) */
  chainId?: number | bigint;
  /** JSON-RPC requests per HTTP request (default 1; the proxy takes up to 100) */
  batchMaxCount?: number;
  /** the network list to validate the slug against (default: the client's) */
  networks?: NetworkCache;
}

/** `init` for the stack from an ethers request (ethers keeps headers lowercase in a plain object). */
function ethersGetUrl(client: ServiceClient) {
  return async (req: FetchRequest, signal?: { addListener(listener: () => void): void }): Promise<GetUrlResponse> => {
    const controller = new AbortController();
    signal?.addListener(() => controller.abort());
    const response = await client.fetch(req.url, {
      method: req.method,
      headers: req.headers,
      body: req.body ? new Uint8Array(req.body) : undefined,
      signal: controller.signal,
    });
    const headers: Record<string, string> = {};
    response.headers.forEach((value, key) => {
      headers[key.toLowerCase()] = value;
    });
    const body = new Uint8Array(await response.arrayBuffer());
    return { statusCode: response.status, statusMessage: response.statusText, headers, body: body.length ? body : null };
  };
}

/**
 * An ethers `JsonRpcProvider` for an EVM slug of the proxy: static network (no chain-id polling), requests
 * sent through `client.fetch` (typed errors: auth, payment, rate limits surface as this package's errors).
 */
export async function createEthersProvider(
  client: ServiceClient,
  network: string,
  options: EthersProviderOptions = {},
): Promise<JsonRpcProvider> {
  validateSlug(network);
  const batchMaxCount = options.batchMaxCount ?? 1;
  if (!Number.isInteger(batchMaxCount) || batchMaxCount < 1 || batchMaxCount > MAX_BATCH_SIZE) {
    throw new ValidationError(`batchMaxCount must be an integer in 1..${MAX_BATCH_SIZE}`);
  }
  const cache = options.networks ?? networkCacheFor(client);
  const info = await cache.assertSupported(network);
  if (info.family !== "evm")
    throw new ValidationError(`${network} is a ${label(info.family)} network; an ethers provider needs an EVM network`);
  let chainId = options.chainId;
  if (chainId === undefined) {
    const res = await cryptoRpc<string>(client, network, { method: "eth_chainId" }, { networks: cache });
    if (res.error || typeof res.result !== "string") {
      throw new ConfigurationError(`cannot learn the chain id of ${network}: ${res.error?.message ?? "no result"}; pass { chainId }`);
    }
    chainId = BigInt(res.result);
  }
  const request = new FetchRequest(client.fetch.url(`/crypto/rpc/${encodeURIComponent(network)}`));
  request.getUrlFunc = ethersGetUrl(client);
  return new JsonRpcProvider(request, Network.from(chainId), { staticNetwork: true, batchMaxCount });
}
