/**
 * EVM settlement for the emulator: `@x402/evm`'s facilitator (`ExactEvmScheme`) through `x402Facilitator`,
 * over a viem client on the local chain. Verify recovers the EIP-712 signature and simulates
 * `transferWithAuthorization`; settle sends it and checks the Transfer log. Replays are stopped on chain
 * (`authorizationState`). Smart accounts pay too: EIP-1271 once deployed, ERC-6492 before (deployed by the
 * facilitator from the local chain's factory, then settled). The facilitator's gas payer is the chain's first account; settlements run one at
 * a time so its transaction nonces never collide.
 */
import { getAddress } from "ethers";
import type { LocalChain } from "../types.js";

export interface EvmRail {
  network: string;
  requirement(amountAtomic: bigint): Record<string, unknown>;
  verify(
    payload: Record<string, unknown>,
    requirement: Record<string, unknown>,
  ): Promise<{ isValid: boolean; invalidReason?: string; payer?: string }>;
  settle(
    payload: Record<string, unknown>,
    requirement: Record<string, unknown>,
  ): Promise<{ success: boolean; transaction: string; payer?: string; errorReason?: string }>;
}

function signatureOf(payload: Record<string, unknown>): `0x${string}` {
  const signature = (payload.payload as { signature?: unknown } | undefined)?.signature;
  return typeof signature === "string" && signature.startsWith("0x") ? (signature as `0x${string}`) : "0x";
}

export async function createEvmRail(chain: LocalChain, maxTimeoutSeconds = 300): Promise<EvmRail> {
  const [{ x402Facilitator }, { ExactEvmScheme }, { toFacilitatorEvmSigner }, viem, { privateKeyToAccount }] = await Promise.all([
    import("@x402/core/facilitator"),
    import("@x402/evm/exact/facilitator"),
    import("@x402/evm"),
    import("viem"),
    import("viem/accounts"),
  ]).catch((err: unknown) => {
    // optional peers: say what to install rather than Node's bare "Cannot find package"
    const code = (err as { code?: string } | undefined)?.code;
    if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") throw err;
    throw new Error(
      `The emulator's Base payment rail needs its optional packages: npm i -D @x402/core @x402/evm (${(err as Error).message})`,
    );
  });
  const network = `eip155:${chain.chainId}`;
  const gasPayer = chain.accounts[0];
  if (!gasPayer) throw new Error("the local chain has no accounts");
  const localChain = viem.defineChain({
    id: chain.chainId,
    name: "emulator-local",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [chain.rpcUrl] } },
  });
  const client = viem
    .createWalletClient({
      account: privateKeyToAccount(gasPayer.privateKey as `0x${string}`),
      chain: localChain,
      // ganache mines at once: poll receipts quickly
      pollingInterval: 20,
      transport: viem.http(chain.rpcUrl),
    })
    .extend(viem.publicActions);
  const signer = toFacilitatorEvmSigner(
    { ...(client as unknown as Parameters<typeof toFacilitatorEvmSigner>[0]), address: client.account.address },
    { confirmationTimeoutMs: 30_000 },
  );
  // smart accounts: a deployed one pays with its EIP-1271 signature (the facilitator asks the account, USDC does
  // too); one not deployed yet with an ERC-6492 signature, which the facilitator honours only for factories it
  // allows (it deploys the account, then settles): here, the local chain's own factory
  const eip6492AllowedFactories = chain.smartAccountFactory ? [chain.smartAccountFactory] : [];
  const facilitator = new x402Facilitator().register(
    network as `${string}:${string}`,
    new ExactEvmScheme(signer, { eip6492AllowedFactories }),
  );

  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(task: () => Promise<T>): Promise<T> => {
    const run = queue.then(task, task);
    queue = run.catch(() => undefined);
    return run;
  };
  type Payload = Parameters<typeof facilitator.verify>[0];
  type Requirements = Parameters<typeof facilitator.verify>[1];

  return {
    network,
    requirement(amountAtomic: bigint) {
      return {
        scheme: "exact",
        network,
        amount: amountAtomic.toString(),
        asset: getAddress(chain.usdc.address),
        payTo: getAddress(chain.treasury),
        maxTimeoutSeconds,
        extra: { name: chain.usdc.name, version: chain.usdc.version },
      };
    },
    verify: (payload, requirement) =>
      serial(() => facilitator.verify(payload as unknown as Payload, requirement as unknown as Requirements)),
    settle: (payload, requirement) =>
      serial(async () => {
        // The facilitator's settle checks no signature of a counterfactual account before deploying it: a server
        // verifies first (x402's verify, then settle), so a wrong ERC-6492 signature is refused with nothing
        // deployed, credited or moved. verify simulates the deployment and the transfer in one call.
        if (viem.isErc6492Signature(signatureOf(payload))) {
          const v = await facilitator.verify(payload as unknown as Payload, requirement as unknown as Requirements);
          if (!v.isValid) return { success: false, transaction: "", payer: v.payer, errorReason: v.invalidReason ?? "invalid_payload" };
        }
        const r = await facilitator.settle(payload as unknown as Payload, requirement as unknown as Requirements);
        return { success: r.success, transaction: r.transaction, payer: r.payer, errorReason: r.errorReason };
      }),
  };
}
