/**
 * `langchain-service/evm`: the EVM wallet. `EvmWallet` signs in (EIP-4361) and pays (x402 `exact`, EIP-3009 USDC)
 * with a raw key, an ethers `Signer`, a viem `Account` or an EIP-1193 provider; give it as `wallet` to any face of
 * the main entry. Needs the optional peers `viem`, `@x402/core` and `@x402/evm`, imported here statically: the
 * main entry never names them, so a bundle of it resolves none.
 */
export { EvmWallet } from "../x402/evm/wallet.js";
export {
  smartAccountSigner,
  type SmartAccountSignerOptions,
  type SmartAccountOwner,
  type SmartAccountSigner,
} from "../x402/evm/smart-account.js";
export {
  BASE_MAINNET,
  BASE_CHAIN_ID,
  type Eip1193Provider,
  type TypedDataRequest,
  type ViemAccountLike,
  type X402Wallet,
} from "../x402/wallets.js";
