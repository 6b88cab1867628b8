/**
 * The x402 v2 `exact` payment both chains sign, through `@x402/core`'s `x402Client` and the chain's scheme
 * (`@x402/evm`'s `ExactEvmScheme`: EIP-3009 transferWithAuthorization; `@x402/svm`'s `ExactSvmScheme`: a partially
 * signed SPL transfer). The policy has already decided what to pay; the x402Client's own spend controls are set to
 * exactly that asset and amount (its default refuses anything over $1). Loaded by the chain entries only.
 */
import { x402Client } from "@x402/core/client";
import { encodePaymentSignatureHeader } from "@x402/core/http";
import { PaymentFailedError } from "../http/errors.js";
import type { SignedPayment, SignPaymentOptions } from "./payment.js";
import type { PaymentDecision } from "./policy.js";

/** Signs an x402 v2 `exact` payment for the decided requirement with the chain's scheme. Nothing is sent. */
export async function signExact(scheme: unknown, decision: PaymentDecision, options: SignPaymentOptions): Promise<SignedPayment> {
  const { requirement } = decision;
  const client = new x402Client((_version, accepts) => accepts[0]!);
  client.register(requirement.network as `${string}:${string}`, scheme as Parameters<typeof client.register>[1]);
  // our policy already decided; let the x402Client sign exactly this asset up to exactly this amount
  client.setSpendControls({
    maxAmountPerPayment: false,
    allowedAssets: [
      { network: requirement.network as `${string}:${string}`, asset: requirement.asset, maxAmountPerPayment: requirement.amount },
    ],
  });
  const paymentRequired = {
    x402Version: 2,
    resource: {
      url: options.resource?.url ?? "",
      description: options.resource?.description ?? "x402 top-up",
      mimeType: options.resource?.mimeType ?? "application/json",
    },
    accepts: [requirement],
    ...(options.extensions ? { extensions: options.extensions } : {}),
  };
  let payload: Record<string, unknown>;
  try {
    payload = (await client.createPaymentPayload(
      paymentRequired as Parameters<typeof client.createPaymentPayload>[0],
    )) as unknown as Record<string, unknown>;
  } catch (cause) {
    // the reference packages' messages carry no secrets; keep them as the cause
    throw new PaymentFailedError(`could not sign the payment: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
  // `accepted` is the offer exactly as the service made it (the x402 rule a strict server checks); the signature
  // itself may expire sooner than the offer allows (the owner's maxValiditySeconds), which no server refuses
  payload.accepted = decision.offered;
  const authorization = (payload.payload as { authorization?: { validBefore?: string } } | undefined)?.authorization;
  return {
    payload,
    headerName: "PAYMENT-SIGNATURE",
    header: encodePaymentSignatureHeader(payload as unknown as Parameters<typeof encodePaymentSignatureHeader>[0]),
    validBefore: authorization?.validBefore ? Number(authorization.validBefore) : undefined,
  };
}
