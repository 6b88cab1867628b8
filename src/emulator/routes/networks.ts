/** GET /crypto/rpc/networks (spec 4.2): public, the alphabetically sorted slugs the proxy serves. */
import type { EmulatorContext, Route } from "../types.js";

/** The 23 slugs of spec 4.2. Deployments differ: `EmulatorOptions.networks` replaces the list. */
export const DEFAULT_NETWORKS: readonly string[] = [
  "arbitrum-mainnet",
  "arbitrum-sepolia",
  "avalanche-fuji",
  "avalanche-mainnet",
  "base-mainnet",
  "base-sepolia",
  "bsc-mainnet",
  "bsc-testnet",
  "ethereum-holesky",
  "ethereum-mainnet",
  "ethereum-sepolia",
  "linea-mainnet",
  "linea-sepolia",
  "optimism-mainnet",
  "optimism-sepolia",
  "polygon-amoy",
  "polygon-mainnet",
  "solana-devnet",
  "solana-mainnet",
  "starknet-mainnet",
  "starknet-sepolia",
  "zksync-mainnet",
  "zksync-sepolia",
];

/** The slugs this emulator serves, sorted and without duplicates (the crypto RPC route checks against it). */
export function cryptoNetworks(ctx: Pick<EmulatorContext, "options">): string[] {
  return [...new Set(ctx.options.networks ?? DEFAULT_NETWORKS)].sort();
}

export const networkRoutes: Route[] = [
  {
    method: "GET",
    pattern: "/crypto/rpc/networks",
    auth: "public",
    handler: (_req, ctx) => ({ status: 200, body: { networks: cryptoNetworks(ctx) } }),
  },
];
