/**
 * Solana payments: x402 v2 `exact` with `@x402/svm`'s `ExactSvmScheme` (a partially signed SPL TransferChecked; it
 * reads the mint and a recent blockhash from `solanaRpcUrl`). Its signer is any `@solana/kit` TransactionSigner.
 * Only the offer can be signed on Solana: the policy refuses a larger amount before it gets here.
 */
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { PaymentFailedError } from "../../http/errors.js";
import { signExact } from "../exact-payment.js";
import type { SignedPayment, SignPaymentOptions } from "../payment.js";
import type { PaymentDecision } from "../policy.js";
import type { KitSignerLike } from "../wallets.js";

/** Signs the payment the policy decided on. Nothing is sent. */
export function signSvmPayment(signer: KitSignerLike, decision: PaymentDecision, options: SignPaymentOptions = {}): Promise<SignedPayment> {
  if (decision.form === "v1") {
    return Promise.reject(
      new PaymentFailedError(`a top-up above the offered amount can only be paid on Base (not ${decision.requirement.network})`),
    );
  }
  const scheme = new ExactSvmScheme(
    signer as unknown as ConstructorParameters<typeof ExactSvmScheme>[0],
    options.solanaRpcUrl ? { rpcUrl: options.solanaRpcUrl } : undefined,
  );
  return signExact(scheme, decision, options);
}
