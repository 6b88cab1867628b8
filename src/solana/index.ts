/**
 * `langchain-service/solana`: the Solana wallet. `SolanaWallet` signs in (Ed25519 SIWX) and pays (x402 `exact`, a
 * partially signed SPL transfer) with a raw key, a `@solana/kit` signer or a wallet-standard wallet
 * (`SolanaWallet.fromWalletStandard`); give it as `wallet` to any face of the main entry. Needs the optional peers `@solana/kit` (5 or later), `@x402/core` and `@x402/svm`, imported here
 * statically: the main entry never names them, so a bundle of it resolves none.
 */
export { SolanaWallet } from "../x402/solana/wallet.js";
export type { FromWalletStandardOptions, WalletStandardAccount, WalletStandardWallet } from "../x402/solana/wallet-standard.js";
export { SOLANA_MAINNET, type KitSignerLike, type X402Wallet } from "../x402/wallets.js";
