/**
 * EVM settlement for the emulator: `@x402/evm`'s facilitator (`ExactEvmScheme`) through `x402Facilitator`,
 * over a viem client on the local chain. Verify recovers the EIP-712 signature and simulates
 * `transferWithAuthorization`; settle sends it and checks the Transfer log. Replays are stopped on chain
 * (`authorizationState`). The facilitator's gas payer is the chain's first account; settlements run one at
 * a time so its transaction nonces never collide.
 */
import { getAddress } from "ethers";
import type { LocalChain } from "../types.js";

export interface EvmRail {
  network: string;
  requirement(amountAtomic: bigint): Record<string, unknown>;
  verify(payload: Record<string, unknown>, requirement: Record<string, unknown>): Promise<{ isValid: boolean; invalidReason?: string; payer?: string }>;
  settle(payload: Record<string, unknown>, requirement: Record<string, unknown>): Promise<{ success: boolean; transaction: string; payer?: string; errorReason?: string }>;
}

export const BASE_NETWORK = "eip155:8453";

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
    throw new Error(`The emulator's Base payment rail needs its optional packages: npm i -D @x402/core @x402/evm (${(err as Error).message})`);
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
  const facilitator = new x402Facilitator().register(network as `${string}:${string}`, new ExactEvmScheme(signer));

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
    verify: (payload, requirement) => serial(() => facilitator.verify(payload as unknown as Payload, requirement as unknown as Requirements)),
    settle: (payload, requirement) =>
      serial(async () => {
        const r = await facilitator.settle(payload as unknown as Payload, requirement as unknown as Requirements);
        return { success: r.success, transaction: r.transaction, payer: r.payer, errorReason: r.errorReason };
      }),
  };
}
