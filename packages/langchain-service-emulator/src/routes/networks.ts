/**
 * GET /crypto/rpc/networks (spec 4.2): public, the alphabetically sorted slugs the proxy serves. The published
 * description makes the list the set of valid `:network` values, so a slug with no node behind it (no local
 * chain, no upstream) is left out: a client refuses it at once instead of retrying a 500.
 * Live mode (the default) publishes the live service's 27 slugs, seed mode the spec's 23; `networks` replaces either.
 */
import { describeNetwork } from "langchain-service";
import { isLiveMode, type EmulatorContext, type EmulatorOptions, type RouteSpec } from "../types.js";

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

/** The live service's slugs (its guide, 2026-11): the spec's 23 and Blast and Robinhood Chain (an Arbitrum Orbit L2), all EVM. */
export const LIVE_NETWORKS: readonly string[] = [
  ...DEFAULT_NETWORKS,
  "blast-mainnet",
  "blast-sepolia",
  "robinhood-mainnet",
  "robinhood-testnet",
].sort();

/** The slugs this emulator would serve given a node for each: the live list or the spec's (`mode`). */
export function publishedNetworks(options: Pick<EmulatorOptions, "mode">): readonly string[] {
  return isLiveMode(options) ? LIVE_NETWORKS : DEFAULT_NETWORKS;
}

/** The JSON-RPC node behind a slug: its configured upstream, else the local chain for an EVM slug; undefined when none. */
export function upstreamOf(ctx: Pick<EmulatorContext, "options" | "chain">, slug: string): string | undefined {
  return ctx.options.upstreams?.[slug] ?? (describeNetwork(slug).family === "evm" ? ctx.chain?.rpcUrl : undefined);
}

/**
 * The slugs this emulator serves, sorted and without duplicates (the crypto RPC route checks against it). An
 * explicit `networks` option is the deployment the caller describes, taken as given; the published list keeps
 * only the slugs with a node behind them.
 */
export function cryptoNetworks(ctx: Pick<EmulatorContext, "options" | "chain">): string[] {
  const listed = ctx.options.networks ?? publishedNetworks(ctx.options).filter((slug) => upstreamOf(ctx, slug) !== undefined);
  return [...new Set(listed)].sort();
}

export const networkRoutes = {
  networks: {
    auth: "public",
    handler: (_req, ctx) => ({ status: 200, body: { networks: cryptoNetworks(ctx) } }),
  },
} satisfies Record<string, RouteSpec>;
