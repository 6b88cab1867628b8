/**
 * Builds signed x402 v2 payment payloads with the reference packages: `@x402/core`'s `x402Client` with
 * `@x402/evm`'s `ExactEvmScheme` (EIP-3009 transferWithAuthorization) or `@x402/svm`'s `ExactSvmScheme`
 * (a partially signed SPL transfer). The policy has already decided what to pay; the x402Client's own spend
 * controls are set to exactly that asset and amount (its default refuses anything over $1).
 * All of it loads on the first payment, so importing the package costs nothing for API-key users.
 */
import { PaymentFailedError } from "../http/errors.js";
import type { PaymentDecision } from "./policy.js";
import { EvmWallet, SolanaWallet, type X402Wallet } from "./wallets.js";

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
  /** base64 for the `PAYMENT-SIGNATURE` header */
  header: string;
  /** unix seconds after which the authorization can no longer settle (EVM), if known */
  validBefore?: number;
}

// module promises kept: a dynamic import is re-resolved per call under some loaders
const load = {
  core: undefined as Promise<[typeof import("@x402/core/client"), typeof import("@x402/core/http")]> | undefined,
  evm: undefined as Promise<[typeof import("@x402/evm/exact/client"), typeof import("@x402/evm")]> | undefined,
  svm: undefined as Promise<typeof import("@x402/svm/exact/client")> | undefined,
};

async function schemeFor(wallet: X402Wallet, options: SignPaymentOptions): Promise<unknown> {
  if (wallet instanceof EvmWallet) {
    const [{ ExactEvmScheme }, { toClientEvmSigner }] = await (load.evm ??= Promise.all([import("@x402/evm/exact/client"), import("@x402/evm")]));
    const signer = toClientEvmSigner({
      address: wallet.address as `0x${string}`,
      signTypedData: (request) => wallet.signTypedData(request),
    });
    return new ExactEvmScheme(signer);
  }
  if (wallet instanceof SolanaWallet) {
    const { ExactSvmScheme } = await (load.svm ??= import("@x402/svm/exact/client"));
    const signer = (await wallet.kitSigner()) as ConstructorParameters<typeof ExactSvmScheme>[0];
    return new ExactSvmScheme(signer, options.solanaRpcUrl ? { rpcUrl: options.solanaRpcUrl } : undefined);
  }
  throw new PaymentFailedError("unsupported wallet");
}

/** Signs the payment the policy decided on. Nothing is sent. */
export async function signPayment(wallet: X402Wallet, decision: PaymentDecision, options: SignPaymentOptions = {}): Promise<SignedPayment> {
  const [{ x402Client }, { encodePaymentSignatureHeader }] = await (load.core ??= Promise.all([import("@x402/core/client"), import("@x402/core/http")]));
  const scheme = await schemeFor(wallet, options);
  const { requirement } = decision;
  const client = new x402Client((_version, accepts) => accepts[0]!);
  client.register(requirement.network as `${string}:${string}`, scheme as Parameters<typeof client.register>[1]);
  // our policy already decided; let the x402Client sign exactly this asset up to exactly this amount
  client.setSpendControls({
    maxAmountPerPayment: false,
    allowedAssets: [{ network: requirement.network as `${string}:${string}`, asset: requirement.asset, maxAmountPerPayment: requirement.amount }],
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
    payload = (await client.createPaymentPayload(paymentRequired as Parameters<typeof client.createPaymentPayload>[0])) as unknown as Record<string, unknown>;
  } catch (cause) {
    // the reference packages' messages carry no secrets; keep them as the cause
    throw new PaymentFailedError(`could not sign the payment: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
  const authorization = (payload.payload as { authorization?: { validBefore?: string } } | undefined)?.authorization;
  return {
    payload,
    header: encodePaymentSignatureHeader(payload as unknown as Parameters<typeof encodePaymentSignatureHeader>[0]),
    validBefore: authorization?.validBefore ? Number(authorization.validBefore) : undefined,
  };
}
