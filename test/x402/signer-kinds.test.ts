/**
 * Bring your own signer: the same money rules for every kind of EVM signer an agent holds, over loopback HTTP
 * against the emulator and a real local chain. Each kind signs in (a SIWX header on every request) and pays
 * (EIP-3009) through `ServiceClient`: a raw key, an ethers Signer, a viem local Account, a viem custom Account whose
 * key lives in another process (a signing service on loopback, as a KMS or managed wallet is), and an EIP-1193
 * provider. For each: a burst of 402s pays once; a payee not allowed is refused before anything is signed; a
 * top-up whose answer times out is re-sent with the same bytes, never re-signed; the period budget ($12, $10 spent) refuses the next.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Contract, JsonRpcProvider, Network, Wallet, getBytes } from "ethers";
import { privateKeyToAccount } from "viem/accounts";
import type { Emulator } from "langchain-service-emulator";
import type { X402EmulatorOptions } from "../../packages/langchain-service-emulator/src/x402/index.js";
import { PaymentPolicyError } from "../../src/http/errors.js";
import { ServiceClient } from "../../src/client.js";
import type { PaymentEvent, PaymentPolicyOptions } from "../../src/x402/index.js";
import type { Eip1193Provider } from "../../src/x402/wallets.js";
import { EvmWallet } from "../../src/evm/index.js";
import { chatBody, startPaidEmulator, testPolicy, unpacedRoutes, usdcBalance } from "./helpers.js";
import { startSigningService, type SigningService } from "./remote-signer.js";

let emu: Emulator;
let service: SigningService;
const x402Options: X402EmulatorOptions = {};

beforeAll(async () => {
  [emu, service] = await Promise.all([
    startPaidEmulator({ chain: { accounts: 12 }, x402: x402Options as Record<string, unknown> }),
    startSigningService(),
  ]);
  // the signing service's address starts with no USDC: pay it some from a funded account (its key stays there)
  const provider = new JsonRpcProvider(emu.chain!.rpcUrl, Network.from(emu.chain!.chainId), { staticNetwork: true });
  try {
    const funder = new Wallet(emu.chain!.accounts[9]!.privateKey, provider);
    const usdc = new Contract(emu.chain!.usdc.address, ["function transfer(address to, uint256 value) returns (bool)"], funder);
    await (await usdc.getFunction("transfer")(service.evmAccount.address, 100_000_000n)).wait();
  } finally {
    provider.destroy();
  }
}, 60_000);
afterAll(async () => {
  service?.close();
  await emu?.close();
});

/** A small EIP-1193 provider over a key held by ethers (a browser wallet's shape); records the methods asked. */
function eip1193Over(privateKey: string, asked: string[]): Eip1193Provider {
  const wallet = new Wallet(privateKey);
  return {
    async request({ method, params }) {
      asked.push(method);
      const args = (params ?? []) as unknown[];
      if (method === "eth_accounts" || method === "eth_requestAccounts") return [wallet.address];
      if (method === "personal_sign") return wallet.signMessage(getBytes(args[0] as string));
      if (method === "eth_signTypedData_v4") {
        const { domain, types, message } = JSON.parse(args[1] as string) as {
          domain: Record<string, unknown>;
          types: Record<string, never>;
          message: Record<string, unknown>;
        };
        const { EIP712Domain: _domainType, ...rest } = types; // v4 sends the domain's type; ethers derives it
        return wallet.signTypedData(domain, rest, message);
      }
      throw Object.assign(new Error(`unsupported method ${method}`), { code: 4200 });
    },
  };
}

const eip1193Asked: string[] = [];
let timedOut = 0;
const key = (index: number) => emu.chain!.accounts[index]!.privateKey;
const kinds: [string, () => Promise<EvmWallet> | EvmWallet][] = [
  ["a raw private key", () => new EvmWallet(key(1))],
  ["an ethers Signer", () => new EvmWallet(new Wallet(key(2)))],
  ["a viem local Account (privateKeyToAccount)", () => new EvmWallet(privateKeyToAccount(key(3) as `0x${string}`))],
  ["a viem custom Account signing in another process (toAccount)", () => new EvmWallet(service.evmAccount)],
  ["an EIP-1193 provider (EvmWallet.fromEip1193)", () => EvmWallet.fromEip1193(eip1193Over(key(4), eip1193Asked))],
];

const topUps = (address: string) => emu.account(address)?.entries.filter((e) => e.type === "TOP_UP") ?? [];

function clientOf(wallet: EvmWallet, policy: PaymentPolicyOptions = {}, topUp: Record<string, number> = {}) {
  const events: PaymentEvent[] = [];
  const client = new ServiceClient({
    baseUrl: emu.url,
    wallet,
    payment: testPolicy(emu, policy),
    onPayment: (e) => events.push(e),
    abuseGuard: false,
    pacing: unpacedRoutes,
    retry: { baseDelayMs: 1, maxDelayMs: 5 },
    topUp: { resendDelayMs: 20, ...topUp },
  });
  const signed = () => events.filter((e) => e.type === "payment.signed").length;
  return { client, events, signed, chat: () => client.request("/chat/completions", { body: JSON.parse(chatBody()) }) };
}

for (const [kind, make] of kinds) {
  describe(`the money rules with ${kind}`, () => {
    let wallet: EvmWallet;
    beforeAll(async () => {
      wallet = await make();
    });

    it("20 concurrent requests of an empty wallet: each signed in, 1 payment, 20 answers, 5 USDC moved on chain", async () => {
      const { chat, signed } = clientOf(wallet);
      const before = await usdcBalance(emu, wallet.address);
      const results = await Promise.all(Array.from({ length: 20 }, () => chat()));
      expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
      expect(signed()).toBe(1);
      expect(topUps(wallet.address)).toHaveLength(1);
      expect(before - (await usdcBalance(emu, wallet.address))).toBe(5_000_000n);
    });

    it("a payee not allowed is refused before anything is signed", async () => {
      const { client, events, signed } = clientOf(wallet, { allowedPayees: ["0x9999999999999999999999999999999999999999"] });
      const err = await client.topUp(5).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PaymentPolicyError);
      expect((err as PaymentPolicyError).rule).toBe("payee");
      expect(signed()).toBe(0);
      expect(events.map((e) => e.type)).toContain("payment.refused");
      expect(topUps(wallet.address)).toHaveLength(1);
    });

    it("a top-up whose answer times out is re-sent with the same bytes, credited once; the period budget ($12, $10 spent) refuses the next", async () => {
      // the emulator counts its timed-out and slow settlements over its life: one more of each for this kind
      timedOut += 1;
      Object.assign(x402Options, { settlementTimeouts: timedOut, settleDelayMs: 600, delayedSettlements: timedOut });
      try {
        const { client, signed } = clientOf(wallet, { maxPerPeriodUsd: 12 }, { maxResends: 1 });
        const before = await usdcBalance(emu, wallet.address);
        const result = await client.topUp(5);
        // its outcome came from a re-send of the same bytes or from the wallet's transactions, never a new signature
        expect(result.resends >= 1 || result.reconciled === true).toBe(true);
        expect(signed()).toBe(1);
        await expect(client.topUp(5)).rejects.toBeInstanceOf(PaymentPolicyError);
        expect(signed()).toBe(1);
        await expect.poll(() => topUps(wallet.address).length, { timeout: 5_000 }).toBe(2);
        expect(before - (await usdcBalance(emu, wallet.address))).toBe(5_000_000n);
      } finally {
        delete x402Options.settlementTimeouts;
        delete x402Options.settleDelayMs;
        delete x402Options.delayedSettlements;
      }
    });
  });
}

describe("through the signing service in another process", () => {
  it("the agent's wallet signed in and paid with no key in this process: every signature was asked of the service", async () => {
    const log = await service.log();
    // sign-ins: one per request attempt; payments: the burst's and the re-sent top-up's (re-sends are not re-signed)
    expect(log.filter((r) => r === "POST /evm/sign-message").length).toBeGreaterThanOrEqual(20);
    expect(log.filter((r) => r === "POST /evm/sign-typed-data")).toHaveLength(2);
    expect(emu.chain!.accounts.map((a) => a.address.toLowerCase())).not.toContain(service.evmAccount.address.toLowerCase());
  });

  it("the EIP-1193 wallet was asked for its accounts, personal_sign and eth_signTypedData_v4 only", () => {
    expect([...new Set(eip1193Asked)].sort()).toEqual(["eth_accounts", "eth_signTypedData_v4", "personal_sign"]);
    expect(eip1193Asked.filter((m) => m === "eth_signTypedData_v4")).toHaveLength(2);
  });
});
