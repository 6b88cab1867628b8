/** Shared setup for the x402 tests: an emulator with a local chain, wallets funded with its test USDC. */
import { Contract, JsonRpcProvider, Network } from "ethers";
import { startEmulator, type Emulator, type EmulatorOptions } from "../../src/emulator/index.js";
import { EvmWallet } from "../../src/x402/wallets.js";
import type { PaymentPolicyOptions } from "../../src/x402/policy.js";

export async function startPaidEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  return startEmulator({
    chain: true,
    // 50 concurrent 402s are 50 failures: keep the abuse block out of the way of payment tests
    rateLimits: { abuseMaxFailures: 10_000, enabled: true, ...options.rateLimits },
    ...options,
  });
}

/** A payer wallet: one of the chain's funded accounts (not the gas payer 0, not the treasury). */
export function payer(emu: Emulator, index = 1): EvmWallet {
  const account = emu.chain!.accounts[index];
  if (!account) throw new Error(`no chain account ${index}`);
  return new EvmWallet(account.privateKey);
}

/** A policy that pays only the emulator's treasury (default assets: its test token is at the real USDC address). */
export function testPolicy(emu: Emulator, extra: PaymentPolicyOptions = {}): PaymentPolicyOptions {
  return {
    allowedPayees: [emu.chain!.treasury],
    ...extra,
  };
}

export async function usdcBalance(emu: Emulator, address: string): Promise<bigint> {
  const provider = new JsonRpcProvider(emu.chain!.rpcUrl, Network.from(emu.chain!.chainId), { staticNetwork: true });
  try {
    const token = new Contract(emu.chain!.usdc.address, ["function balanceOf(address) view returns (uint256)"], provider);
    return (await token.getFunction("balanceOf")(address)) as bigint;
  } finally {
    provider.destroy();
  }
}

export function chatBody(model = "emu-xs") {
  return JSON.stringify({ model, messages: [{ role: "user", content: "hello" }] });
}
