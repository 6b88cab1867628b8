/**
 * A signed x402 payment and how it is asked for. The signing itself is the wallet's (`wallet.signPayment`): the
 * EVM and Solana schemes (`@x402/evm`, `@x402/svm`) live behind `langchain-service/evm` and `/solana`, so this
 * module, which the main entry loads, imports none of them.
 */
import type { PaymentDecision } from "./policy.js";

export interface SignPaymentOptions {
  /** Solana RPC for `ExactSvmScheme` (mint lookup, recent blockhash) */
  solanaRpcUrl?: string;
  /** x402 `resource` of the payment (the 402's own, else the top-up URL) */
  resource?: { url: string; description?: string; mimeType?: string };
  /** extensions the service declared with its 402 */
  extensions?: Record<string, unknown>;
}

export interface SignedPayment {
  /** the decoded PaymentPayload */
  payload: Record<string, unknown>;
  /** where it goes: `PAYMENT-SIGNATURE` (v2) or `X-402-Payment` (the legacy v1 form) */
  headerName: "PAYMENT-SIGNATURE" | "X-402-Payment";
  /** base64 of the payload, the header's value */
  header: string;
  /** unix seconds after which the authorization can no longer settle (EVM), if known */
  validBefore?: number;
}

/** The signed authorization's nonce (EVM `transferWithAuthorization`), when the payload has one. */
export function nonceOf(signed: SignedPayment): string | undefined {
  const inner = signed.payload.payload as { authorization?: { nonce?: unknown } } | undefined;
  const nonce = inner?.authorization?.nonce;
  return typeof nonce === "string" ? nonce : undefined;
}

/** Signs the payment the policy decided on with the wallet's own scheme. Nothing is sent. */
export function signPayment(
  wallet: { signPayment(decision: PaymentDecision, options?: SignPaymentOptions): Promise<SignedPayment> },
  decision: PaymentDecision,
  options: SignPaymentOptions = {},
): Promise<SignedPayment> {
  return wallet.signPayment(decision, options);
}
