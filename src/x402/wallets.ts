/**
 * What every wallet is, with no chain library loaded: the `X402Wallet` interface the x402 layer and sign-in use,
 * the networks, and the shapes of the signers wallets take. The wallets themselves live behind their own entries,
 * `langchain-service/evm` (`EvmWallet`: ethers, viem, `@x402/evm`) and `langchain-service/solana` (`SolanaWallet`:
 * `@solana/kit`, `@x402/svm`), so that a bundle of the main entry never has to resolve an optional peer.
 */
import type { PaymentDecision } from "./policy.js";
import type { SignedPayment, SignPaymentOptions } from "./payment.js";

export { BASE_MAINNET, SOLANA_MAINNET, BASE_CHAIN_ID } from "./networks.js";

export type WalletKind = "evm" | "solana";

/** The fields of a sign-in message (SIWX), as `signInMessage` formats them. */
export interface SiwxFields {
  domain: string;
  uri: string;
  address: string;
  nonce: string;
  issuedAt: string;
  expirationTime: string;
  statement?: string;
  /** EVM chain id (8453) or the Solana CAIP-2 id */
  chainId: number | string;
}

/** What the x402 layer needs from a wallet (`EvmWallet`, `SolanaWallet`). */
export interface X402Wallet {
  readonly kind: WalletKind;
  readonly address: string;
  /** signs a text message: EIP-191 hex for EVM, base58 Ed25519 for Solana */
  signMessage(message: string): Promise<string>;
  /** the sign-in text for these fields: EIP-4361 for EVM, the Solana SIWX text for Solana */
  signInMessage(fields: SiwxFields): Promise<string>;
  /** signs the payment the policy decided on with the chain's x402 scheme; nothing is sent */
  signPayment(decision: PaymentDecision, options?: SignPaymentOptions): Promise<SignedPayment>;
  toJSON(): { kind: WalletKind; address: string };
}

/** Typed-data signing as `@x402/evm`'s `ClientEvmSigner` wants it. */
export interface TypedDataRequest {
  domain: Record<string, unknown>;
  types: Record<string, unknown>;
  primaryType: string;
  message: Record<string, unknown>;
}

/**
 * A viem `Account` that signs itself (`type: "local"`): `privateKeyToAccount`, or `toAccount({ address,
 * signMessage, signTypedData, signTransaction })` whose signing happens elsewhere (a KMS, CDP, Privy, Turnkey).
 * Structural, so the main entry needs no viem import; a viem `LocalAccount` fits it.
 */
export interface ViemAccountLike {
  readonly address: string;
  readonly type: "local";
  signMessage(args: { message: string }): Promise<string>;
  signTypedData(request: TypedDataRequest): Promise<string>;
}

/** An EIP-1193 provider (a browser wallet's `window.ethereum`, WalletConnect, an embedded wallet). */
export interface Eip1193Provider {
  request(args: { method: string; params?: unknown }): Promise<unknown>;
}

/**
 * A `@solana/kit` signer that signs messages and transactions in place: a `KeyPairSigner`
 * (`generateKeyPairSigner`, `createKeyPairSignerFromBytes`), or any `MessagePartialSigner &
 * TransactionPartialSigner` (Privy, Turnkey, a remote signer). Structural: the main entry needs no kit import.
 */
export interface KitSignerLike {
  readonly address: string;
  signMessages(
    messages: readonly { content: Uint8Array; signatures: Readonly<Record<string, Uint8Array>> }[],
  ): Promise<readonly Readonly<Record<string, Uint8Array>>[]>;
  signTransactions(transactions: readonly never[]): Promise<readonly Readonly<Record<string, Uint8Array>>[]>;
}

/** A wallet of this package (or one shaped like it): duck-typed, so this module loads no wallet class. */
export function isX402Wallet(value: unknown): value is X402Wallet {
  const v = value as Partial<X402Wallet> | null;
  return (
    !!v &&
    typeof v === "object" &&
    (v.kind === "evm" || v.kind === "solana") &&
    typeof v.address === "string" &&
    typeof v.signMessage === "function" &&
    typeof v.signInMessage === "function" &&
    typeof v.signPayment === "function"
  );
}

/** The CAIP-2 network family a wallet can pay on. */
export function walletNamespace(wallet: X402Wallet): "eip155" | "solana" {
  return wallet.kind === "evm" ? "eip155" : "solana";
}
