/**
 * Wallet sign-in (SIWX) and self-paying top-ups (x402). The wallets themselves are imported from
 * `langchain-service/evm` (`EvmWallet`) and `langchain-service/solana` (`SolanaWallet`), with their chain libraries.
 */
export {
  isX402Wallet,
  BASE_MAINNET,
  BASE_CHAIN_ID,
  SOLANA_MAINNET,
  type X402Wallet,
  type WalletKind,
  type ViemAccountLike,
  type Eip1193Provider,
  type KitSignerLike,
} from "./wallets.js";
export {
  createSiwxHeader,
  createSiwxPayload,
  createWalletAuth,
  formatSolanaSiwxMessage,
  SIWX_HEADER,
  SIWX_LEGACY_HEADER,
  type SiwxPayload,
  type SiwxOptions,
} from "./siwx.js";
export {
  PaymentPolicy,
  USDC_BASE,
  USDC_SOLANA,
  MIN_TOP_UP_USD,
  type PaymentPolicyOptions,
  type PaymentDecision,
  type PaymentRequirement,
  type PolicyRule,
  type AllowedAsset,
  type PaymentApprovalRequest,
} from "./policy.js";
export { signPayment, type SignedPayment, type SignPaymentOptions } from "./payment.js";
export {
  X402PaymentController,
  x402PaymentLayer,
  paymentSourceOf,
  PAYMENT_SIGNATURE_HEADER,
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_RESPONSE_HEADER,
  BALANCE_REMAINING_HEADER,
  type X402PaymentOptions,
  type TopUpResult,
  type PaymentSource,
} from "./layer.js";
export { withX402, type X402Fetch } from "./with-x402.js";
export { BALANCE_MAX_AGE_MS, type X402Balance } from "./balance.js";
export { PaymentSpendHandler, PAYMENT_EVENT_NAME, type PaymentEvent, type PaymentEventType } from "./events.js";
export {
  topUp,
  getX402Transactions,
  type TopUpOptions,
  type TransactionsOptions,
  type X402Transaction,
  type X402Transactions,
} from "./client.js";
