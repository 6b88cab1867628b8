/**
 * A `@solana/web3.js` 1.x `Connection` pointed at the proxy through the one fetch stack (its `fetch` option), so
 * API-key or wallet auth, retries and payments apply unchanged.
 *
 * Why a subpath (`langchain-service/solana-connection`) with a static import, not an injected module or an
 * `import()`: a bundler resolves every literal `import()`, so the old lazy import broke the main entry's bundle
 * for anyone without web3.js; an injected module would make every caller pass the library and lose its types.
 * As its own entry, only a user who imports it resolves web3.js, and that user has it (as the wallets' entries).
 */
import { Connection } from "@solana/web3.js";
import { ValidationError } from "../http/errors.js";
import type { ServiceClient } from "../client.js";
import { label } from "./methods.js";
import { networkCacheFor, type NetworkCache } from "./networks.js";
import { validateSlug } from "./rpc.js";

export interface SolanaConnectionOptions {
  commitment?: "processed" | "confirmed" | "finalized";
  networks?: NetworkCache;
}

/**
 * A `Connection` for a Solana slug of the proxy (HTTP only: subscriptions are not served by the proxy). The slug
 * is checked against the network list before the Connection exists.
 */
export async function createSolanaConnection(
  client: ServiceClient,
  network: string,
  options: SolanaConnectionOptions = {},
): Promise<Connection> {
  validateSlug(network);
  const cache = options.networks ?? networkCacheFor(client);
  const info = await cache.assertSupported(network);
  if (info.family !== "solana")
    throw new ValidationError(`${network} is a ${label(info.family)} network; a Solana Connection needs a Solana network`);
  const url = client.fetch.url(`/crypto/rpc/${encodeURIComponent(network)}`);
  // web3.js types its fetch as the DOM fetch; the stack is fetch-compatible
  const stackFetch = ((input: string | URL | Request, init?: RequestInit) => client.fetch(input, init)) as typeof fetch;
  return new Connection(url, { commitment: options.commitment ?? "confirmed", fetch: stackFetch, disableRetryOnRateLimit: true });
}
