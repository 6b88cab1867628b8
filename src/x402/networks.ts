/** The networks wallets pay on, in a module of their own so the policy needs nothing of the wallets. */
export const BASE_MAINNET = "eip155:8453";
export const SOLANA_MAINNET = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
export const BASE_CHAIN_ID = 8453;
