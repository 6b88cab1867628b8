/**
 * Builds signed x402 v2 payment payloads with the reference packages: `@x402/core`'s `x402Client` with
 * `@x402/evm`'s `ExactEvmScheme` (EIP-3009 transferWithAuthorization) or `@x402/svm`'s `ExactSvmScheme`
 * (a partially signed SPL transfer). The policy has already decided what to pay; the x402Client's own spend
 * controls are set to exactly that asset and amount (its default refuses anything over $1).
 * All of it loads on the first payment, so importing the package costs nothing for API-key users.
 */
import { PaymentFailedError } from "../http/errors.js";
import { toBase64Json } from "./encoding.js";
import { loadWalletPeer } from "./peers.js";
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

// module promises kept: a dynamic import is re-resolved per call under some loaders
const load = {
  core: undefined as Promise<[typeof import("@x402/core/client"), typeof import("@x402/core/http")]> | undefined,
  evm: undefined as Promise<[typeof import("@x402/evm/exact/client"), typeof import("@x402/evm")]> | undefined,
  evmV1: undefined as Promise<typeof import("@x402/evm/v1")> | undefined,
  svm: undefined as Promise<typeof import("@x402/svm/exact/client")> | undefined,
};

async function evmSigner(wallet: EvmWallet) {
  const [, { toClientEvmSigner }] = await (load.evm ??= loadWalletPeer("evm", () => Promise.all([import("@x402/evm/exact/client"), import("@x402/evm")])));
  return toClientEvmSigner({
    address: wallet.address as `0x${string}`,
    signTypedData: (request) => wallet.signTypedData(request),
  });
}

async function schemeFor(wallet: X402Wallet, options: SignPaymentOptions): Promise<unknown> {
  if (wallet instanceof EvmWallet) {
    const [{ ExactEvmScheme }] = await (load.evm ??= loadWalletPeer("evm", () => Promise.all([import("@x402/evm/exact/client"), import("@x402/evm")])));
    return new ExactEvmScheme(await evmSigner(wallet));
  }
  if (wallet instanceof SolanaWallet) {
    const { ExactSvmScheme } = await (load.svm ??= loadWalletPeer("solana", () => import("@x402/svm/exact/client")));
    const signer = (await wallet.kitSigner()) as ConstructorParameters<typeof ExactSvmScheme>[0];
    return new ExactSvmScheme(signer, options.solanaRpcUrl ? { rpcUrl: options.solanaRpcUrl } : undefined);
  }
  throw new PaymentFailedError("unsupported wallet");
}

/** Signs the payment the policy decided on. Nothing is sent. */
export async function signPayment(wallet: X402Wallet, decision: PaymentDecision, options: SignPaymentOptions = {}): Promise<SignedPayment> {
  if (decision.form === "v1") return signLegacyV1(wallet, decision, options);
  const [{ x402Client }, { encodePaymentSignatureHeader }] = await (load.core ??= loadWalletPeer(wallet instanceof SolanaWallet ? "solana" : "evm", () => Promise.all([import("@x402/core/client"), import("@x402/core/http")])));
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

/** CAIP-2 -> the v1 network names (`base`), for the networks v1 payments are made on here. */
const V1_NETWORKS: Record<string, string> = { "eip155:8453": "base", "eip155:84532": "base-sepolia" };

/**
 * An owner-chosen amount above the offer, in the legacy x402 v1 form the service's own wallet SDK sends
 * (`maxAmountRequired` = the top-up sum, `network: "base"`), signed by `@x402/evm`'s own v1 scheme.
 */
async function signLegacyV1(wallet: X402Wallet, decision: PaymentDecision, options: SignPaymentOptions): Promise<SignedPayment> {
  const { requirement } = decision;
  const network = V1_NETWORKS[requirement.network];
  if (!(wallet instanceof EvmWallet) || !network) {
    throw new PaymentFailedError(`a top-up above the offered amount can only be paid on Base (not ${requirement.network})`);
  }
  const { ExactEvmSchemeV1 } = await (load.evmV1 ??= loadWalletPeer("evm", () => import("@x402/evm/v1")));
  const scheme = new ExactEvmSchemeV1(await evmSigner(wallet));
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
    payload = (await scheme.createPaymentPayload(1, v1Requirement as unknown as Parameters<typeof scheme.createPaymentPayload>[1])) as unknown as Record<string, unknown>;
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
