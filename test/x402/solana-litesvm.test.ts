/**
 * The emulator's Solana side on LiteSVM: the RPC serves real SVM state (SPL mint and token accounts in the Token
 * program's layouts), the facilitator's signer settles through `svm.sendTransaction` and the SVM itself refuses a
 * replay, the crypto RPC's `solana-mainnet` reads the same LiteSVM, and without `litesvm` the Solana rail is off
 * with a one-line notice while Base keeps working.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ToolMessage } from "@langchain/core/messages";
import { getMintDecoder, getTokenDecoder } from "@solana-program/token";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import {
  LITESVM_MISSING_MESSAGE,
  SOLANA_STARTING_USDC_ATOMIC,
  type SolanaRail,
} from "../../packages/langchain-service-emulator/src/x402/solana.js";
import { ServiceClient } from "../../src/client.js";
import { UnsupportedNetworkError } from "../../src/http/errors.js";
import { CryptoRpcToolkit } from "../../src/crypto-rpc/index.js";
import { withX402 } from "../../src/x402/index.js";
import { SolanaWallet } from "../../src/solana/index.js";
import { chatBody, payer, testPolicy } from "./helpers.js";

const KEY = "litesvm-key";
let emu: Emulator;
let rail: SolanaRail;

beforeAll(async () => {
  emu = await startEmulator({ apiKeys: [KEY] });
  rail = (emu.context.x402 as unknown as { solana?: SolanaRail }).solana!;
  expect(rail).toBeDefined();
});
afterAll(async () => {
  await emu?.close();
});

async function rpc(method: string, params: unknown[] = []): Promise<{ result?: any; error?: { code: number; message: string } }> {
  const res = await fetch(`${emu.url}/x402/solana/rpc`, {
    method: "POST",
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { result?: any; error?: { code: number; message: string } };
}

/** A client payment for `amount` atomic units, built by @x402/svm's client against the emulator's RPC. */
async function clientPayment(wallet: SolanaWallet, amount: bigint): Promise<string> {
  const { ExactSvmScheme } = await import("@x402/svm/exact/client");
  const scheme = new ExactSvmScheme((await wallet.kitSigner()) as ConstructorParameters<typeof ExactSvmScheme>[0], {
    rpcUrl: `${emu.url}/x402/solana/rpc`,
  });
  const payload = await scheme.createPaymentPayload(2, rail.requirement(amount) as any);
  return (payload.payload as { transaction: string }).transaction;
}

describe("LiteSVM behind /x402/solana/rpc", () => {
  it("serves the mint and token accounts in the SPL Token program's own layouts", async () => {
    const owner = SolanaWallet.random().address;
    const faucet = await fetch(`${emu.url}/x402/solana/faucet`, { method: "POST", body: JSON.stringify({ owner }) });
    const { tokenAccount, amount } = (await faucet.json()) as { tokenAccount: string; amount: string };
    expect(BigInt(amount)).toBe(SOLANA_STARTING_USDC_ATOMIC);

    const account = await rpc("getAccountInfo", [tokenAccount, { encoding: "base64" }]);
    expect(account.result.value.owner).toBe("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
    const decoded = getTokenDecoder().decode(Buffer.from(account.result.value.data[0], "base64"));
    expect(decoded).toMatchObject({ mint: rail.mint, owner, amount: SOLANA_STARTING_USDC_ATOMIC });
    expect(account.result.value.lamports).toBe((await rpc("getMinimumBalanceForRentExemption", [165])).result);

    const mint = await rpc("getAccountInfo", [rail.mint, { encoding: "base64" }]);
    const m = getMintDecoder().decode(Buffer.from(mint.result.value.data[0], "base64"));
    expect(m.decimals).toBe(6);
    // the supply follows what was handed out
    expect((await rpc("getTokenSupply", [rail.mint])).result.value.amount).toBe(m.supply.toString());
    expect(m.supply).toBeGreaterThanOrEqual(SOLANA_STARTING_USDC_ATOMIC);

    // real RPC errors: an unknown token account, an unknown method
    expect((await rpc("getTokenAccountBalance", [SolanaWallet.random().address])).error?.message).toMatch(/could not find account/);
    expect((await rpc("eth_blockNumber")).error?.code).toBe(-32601);
    const { result: hash } = await rpc("getLatestBlockhash");
    expect(hash.value.blockhash).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    expect(hash.value.lastValidBlockHeight).toBeGreaterThan(await rpc("getSlot").then((r) => r.result));
  });

  it("settles through svm.sendTransaction; a replay is refused by the SVM itself", async () => {
    const wallet = SolanaWallet.random();
    const tx = await clientPayment(wallet, 5_000_000n);
    const treasuryBefore = await rail.balanceOf(rail.payTo);
    // simulation is where a payer is first seen: its token account gets the starting test USDC
    await rail.facilitatorSigner.simulateTransaction(tx);
    expect(await rail.balanceOf(wallet.address)).toBe(SOLANA_STARTING_USDC_ATOMIC);
    const slotBefore = (await rpc("getSlot")).result as number;
    const full = await rail.facilitatorSigner.signTransaction(tx, rail.feePayer);
    const signature = await rail.facilitatorSigner.sendTransaction(full);
    await rail.facilitatorSigner.confirmTransaction(signature);
    expect(await rail.balanceOf(wallet.address)).toBe(SOLANA_STARTING_USDC_ATOMIC - 5_000_000n);
    expect((await rail.balanceOf(rail.payTo)) - treasuryBefore).toBe(5_000_000n);
    expect((await rpc("getSlot")).result).toBeGreaterThan(slotBefore);
    expect((await rpc("getSignatureStatuses", [[signature]])).result.value[0]).toMatchObject({ err: null });

    await expect(rail.facilitatorSigner.sendTransaction(full)).rejects.toThrow(/AlreadyProcessed/);
    expect(await rail.balanceOf(wallet.address)).toBe(SOLANA_STARTING_USDC_ATOMIC - 5_000_000n);
  });

  it("the SVM refuses a transfer over the balance and a transaction the payer did not sign", async () => {
    const wallet = SolanaWallet.random();
    const tooMuch = await clientPayment(wallet, SOLANA_STARTING_USDC_ATOMIC + 1n);
    await expect(rail.facilitatorSigner.simulateTransaction(tooMuch)).rejects.toThrow(/insufficient funds/);
    // flip a byte of the client's signature (the first signature slot is the fee payer's, the second the client's)
    const bytes = Buffer.from(await clientPayment(wallet, 5_000_000n), "base64");
    bytes[1 + 64 + 5] = bytes[1 + 64 + 5]! ^ 0xff;
    await expect(rail.facilitatorSigner.simulateTransaction(bytes.toString("base64"))).rejects.toThrow(/SignatureFailure/);
    expect(await rail.balanceOf(wallet.address)).toBe(SOLANA_STARTING_USDC_ATOMIC);
  });

  it("a Solana wallet's first sign-in gives its token account the starting test USDC", async () => {
    const wallet = SolanaWallet.random();
    const f = withX402(fetch, {
      wallet,
      policy: { allowedPayees: [rail.payTo], dryRun: true },
      solanaRpcUrl: `${emu.url}/x402/solana/rpc`,
    });
    // a read that needs sign-in but no credit
    const res = await f(`${emu.url}/x402/balance/${wallet.address}`);
    expect(res.status).toBe(200);
    expect(await rail.balanceOf(wallet.address)).toBe(SOLANA_STARTING_USDC_ATOMIC);
  });
});

describe("crypto RPC on solana-mainnet reads the same LiteSVM", () => {
  it("crypto_rpc and native_balance see lamports airdropped in LiteSVM", async () => {
    const owner = SolanaWallet.random().address;
    const airdrop = await rpc("requestAirdrop", [owner, 2_500_000_000]);
    expect(airdrop.result).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/);

    const client = new ServiceClient({ baseUrl: emu.url, apiKey: KEY, retry: false });
    const answer = await client.cryptoRpc("solana-mainnet", { jsonrpc: "2.0", id: 1, method: "getBalance", params: [owner] });
    expect((answer.result as { value: number }).value).toBe(2_500_000_000);

    const tool = new CryptoRpcToolkit({ client }).getTools().find((t) => t.name === "native_balance")!;
    const message = (await tool.invoke({
      type: "tool_call",
      id: "c1",
      name: "native_balance",
      args: { network: "solana-mainnet", address: owner },
    })) as ToolMessage;
    expect(JSON.parse(message.content as string).balance).toEqual({ lamports: "2500000000", sol: "2.5", symbol: "SOL" });

    const devnet = await client.cryptoRpc("solana-devnet", {
      jsonrpc: "2.0",
      id: 2,
      method: "getTokenAccountBalance",
      params: [await rail.ledger.tokenAccountOf(rail.payTo)],
    });
    expect((devnet.result as { value: { amount: string; decimals: number } }).value).toMatchObject({
      decimals: 6,
      amount: (await rail.balanceOf(rail.payTo)).toString(),
    });
  });
});

describe("without litesvm", () => {
  it("the Solana rail is off with a one-line notice; the Base rail keeps working", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const missing = () =>
      Promise.reject(Object.assign(new Error("Cannot find package 'litesvm' imported from x"), { code: "ERR_MODULE_NOT_FOUND" }));
    const noSvm = await startEmulator({ chain: true, apiKeys: [KEY], x402: { solanaImporter: missing } });
    try {
      expect(LITESVM_MISSING_MESSAGE).not.toContain("\n");
      expect(warn.mock.calls.map((c) => String(c[0]))).toEqual([LITESVM_MISSING_MESSAGE]);
      const offer = await fetch(`${noSvm.url}/x402/top-up`, { method: "POST" });
      const { accepts } = (await offer.json()) as { accepts: { network: string }[] };
      expect(accepts.map((a) => a.network)).toEqual(["eip155:8453"]);
      expect((await fetch(`${noSvm.url}/x402/solana/rpc`, { method: "POST", body: "{}" })).status).toBe(404);
      const client = new ServiceClient({ baseUrl: noSvm.url, apiKey: KEY, retry: false });
      // no node for the Solana slugs: not listed, so a typed error at once (it used to be a 500)
      await expect(client.cryptoRpc("solana-mainnet", { jsonrpc: "2.0", id: 1, method: "getSlot" })).rejects.toBeInstanceOf(
        UnsupportedNetworkError,
      );

      // Base: an empty wallet pays and is served
      const f = withX402(fetch, { wallet: payer(noSvm, 5), policy: testPolicy(noSvm) });
      const res = await f(`${noSvm.url}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: chatBody(),
      });
      expect(res.status).toBe(200);
    } finally {
      warn.mockRestore();
      await noSvm.close();
    }
  });
});
