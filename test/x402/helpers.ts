/** Shared setup for the x402 tests: an emulator with a local chain, wallets funded with its test USDC. */
import { authorizationTypes } from "@x402/evm";
import { Contract, JsonRpcProvider, Network } from "ethers";
import { startEmulator, type Emulator, type EmulatorOptions } from "langchain-service-emulator";
import { EvmWallet } from "../../src/evm/index.js";
import type { PaymentPolicyOptions } from "../../src/x402/policy.js";

/**
 * The x402 routes' own limits (top-up 10 a minute per IP, live) are off unless `options.x402.routeLimits` asks for
 * them: payment tests pay more often than that (test/x402/route-limits.test.ts covers the limits). The caller's
 * `x402` object is kept (tests change it on a running emulator).
 */
export async function startPaidEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const x402 = (options.x402 ?? {}) as { routeLimits?: unknown };
  x402.routeLimits ??= false;
  return startEmulator({
    chain: true,
    // 50 concurrent 402s are 50 failures: keep the abuse block out of the way of payment tests
    rateLimits: { abuseMaxFailures: 10_000, enabled: true, ...options.rateLimits },
    ...options,
    x402,
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

/** Client pacing for payment tests: the top-up route's 10 a minute is not paced (see startPaidEmulator). */
export const unpacedRoutes = { routeLimits: false as const };

/** An EIP-3009 transfer authorization's message (bigints, as @x402/evm asks a wallet to sign it). */
export type TransferAuthorization = {
  from: `0x${string}`;
  to: `0x${string}`;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: `0x${string}`;
};

/** The EIP-712 domain of a USDC-like token (name, version, chain, address). */
export type TokenDomain = {
  name: string;
  version: string;
  chainId: number;
  verifyingContract: `0x${string}`;
};

/** @x402/evm's EIP-712 types of an EIP-3009 authorization, in plain arrays: ethers' `signTypedData` takes no readonly ones. */
export const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: authorizationTypes.TransferWithAuthorization.map((field) => ({ ...field })),
};

/** USDC's `TransferWithAuthorization` typed data over `domain`, with @x402/evm's own types (what a payment signs). */
export function transferWithAuthorization(domain: TokenDomain, message: TransferAuthorization) {
  return {
    domain,
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: "TransferWithAuthorization" as const,
    message,
  };
}
