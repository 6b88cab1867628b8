/**
 * EVM payments: x402 v2 `exact` with `@x402/evm`'s `ExactEvmScheme` (EIP-3009), and an owner-chosen larger top-up
 * in the legacy v1 form with its `ExactEvmSchemeV1`. The signer is anything with an address and EIP-712 signing.
 */
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { toClientEvmSigner } from "@x402/evm";
import { ExactEvmSchemeV1 } from "@x402/evm/v1";
import { PaymentFailedError } from "../../http/errors.js";
import { toBase64Json } from "../encoding.js";
import { signExact } from "../exact-payment.js";
import type { SignedPayment, SignPaymentOptions } from "../payment.js";
import type { PaymentDecision } from "../policy.js";
import type { TypedDataRequest } from "../wallets.js";

/** What signs an EVM payment (an `EvmWallet`). */
export interface EvmPaymentSigner {
  readonly address: string;
  signTypedData(request: TypedDataRequest): Promise<`0x${string}`>;
}

function clientSigner(wallet: EvmPaymentSigner) {
  return toClientEvmSigner({
    address: wallet.address as `0x${string}`,
    signTypedData: (request) => wallet.signTypedData(request as TypedDataRequest),
  });
}

/** Signs the payment the policy decided on. Nothing is sent. */
export function signEvmPayment(
  wallet: EvmPaymentSigner,
  decision: PaymentDecision,
  options: SignPaymentOptions = {},
): Promise<SignedPayment> {
  if (decision.form === "v1") return signLegacyV1(wallet, decision, options);
  return signExact(new ExactEvmScheme(clientSigner(wallet)), decision, options);
}

/** CAIP-2 -> the v1 network names (`base`), for the networks v1 payments are made on here. */
const V1_NETWORKS: Record<string, string> = { "eip155:8453": "base", "eip155:84532": "base-sepolia" };

/**
 * An owner-chosen amount above the offer, in the legacy x402 v1 form the service's own wallet SDK sends
 * (`maxAmountRequired` = the top-up sum, `network: "base"`), signed by `@x402/evm`'s own v1 scheme.
 */
async function signLegacyV1(wallet: EvmPaymentSigner, decision: PaymentDecision, options: SignPaymentOptions): Promise<SignedPayment> {
  const { requirement } = decision;
  const network = V1_NETWORKS[requirement.network];
  if (!network) {
    throw new PaymentFailedError(`a top-up above the offered amount can only be paid on Base (not ${requirement.network})`);
  }
  const scheme = new ExactEvmSchemeV1(clientSigner(wallet));
  const v1Requirement = {
    scheme: "exact",
    network,
    maxAmountRequired: requirement.amount,
    resource: options.resource?.url ?? "",
    description: options.resource?.description ?? "x402 top-up",
    mimeType: options.resource?.mimeType ?? "application/json",
    payTo: requirement.payTo,
    maxTimeoutSeconds: requirement.maxTimeoutSeconds,
    asset: requirement.asset,
    extra: requirement.extra,
  };
  let payload: Record<string, unknown>;
  try {
    payload = (await scheme.createPaymentPayload(
      1,
      v1Requirement as unknown as Parameters<typeof scheme.createPaymentPayload>[1],
    )) as unknown as Record<string, unknown>;
  } catch (cause) {
    throw new PaymentFailedError(`could not sign the payment: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
  const authorization = (payload.payload as { authorization?: { validBefore?: string } } | undefined)?.authorization;
  return {
    payload,
    headerName: "X-402-Payment",
    // the v1 header is base64 of the JSON payload, as `X-PAYMENT` always was
    header: toBase64Json(payload),
    validBefore: authorization?.validBefore ? Number(authorization.validBefore) : undefined,
  };
}
