/**
 * Fidelity: the emulator's test USDC lives at the real USDC addresses (Base `USDC_BASE`, Solana `USDC_SOLANA`),
 * so the DEFAULT money policy (real USDC only, no `allowedAssets`) pays against the emulator unchanged, as it
 * would against the real service. Read on chain: code, name/version/decimals and the EIP-712 domain at
 * `USDC_BASE` on ganache; the SPL mint account at `USDC_SOLANA` in LiteSVM. Then a wallet with
 * `new PaymentPolicy({ amountUsd: 5 })` pays its own way on each rail, and the chain moves exactly what the
 * ledger credits.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Contract, JsonRpcProvider, Network, TypedDataEncoder, Wallet, parseUnits } from "ethers";
import { findAssociatedTokenPda, getMintDecoder, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { address } from "@solana/kit";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ChatService } from "../../src/chat/chat-model.js";
import { PaymentPolicy, USDC_BASE, USDC_SOLANA, type PaymentEvent } from "../../src/x402/index.js";
import { EvmWallet } from "../../src/evm/index.js";
import { SolanaWallet } from "../../src/solana/index.js";

const USDC_READS = [
  "function name() view returns (string)",
  "function version() view returns (string)",
  "function symbol() view returns (string)",
  "function decimals() view returns (uint8)",
  "function DOMAIN_SEPARATOR() view returns (bytes32)",
  "function balanceOf(address) view returns (uint256)",
  "function transfer(address to, uint256 value) returns (bool)",
];

let emu: Emulator;
let provider: JsonRpcProvider;
let accepts: { network: string; asset: string; payTo: string }[];

beforeAll(async () => {
  emu = await startEmulator({ chain: true });
  provider = new JsonRpcProvider(emu.chain!.rpcUrl, Network.from(emu.chain!.chainId), {
    staticNetwork: true,
    batchMaxCount: 1,
    cacheTimeout: -1,
  });
  const res = await fetch(`${emu.url}/x402/top-up`, { method: "POST" });
  expect(res.status).toBe(402);
  accepts = ((await res.json()) as { accepts: typeof accepts }).accepts;
});
afterAll(async () => {
  provider?.destroy();
  await emu?.close();
});

async function solanaRpc(method: string, params: unknown[]): Promise<{ result?: any; error?: { code: number; message: string } }> {
  const res = await fetch(`${emu.url}/x402/solana/rpc`, {
    method: "POST",
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return (await res.json()) as { result?: any; error?: { code: number; message: string } };
}

const hasSolanaRail = () => accepts.some((a) => a.network.startsWith("solana:"));

describe("the test USDC is at the real addresses", () => {
  it("Base: the token's code, name, version, decimals and EIP-712 domain are at USDC_BASE on chain 8453", async () => {
    expect(emu.chain!.chainId).toBe(8453);
    expect(emu.chain!.usdc.address).toBe(USDC_BASE);
    expect((await provider.getCode(USDC_BASE)).length).toBeGreaterThan(2 + 1000);
    const usdc = new Contract(USDC_BASE, USDC_READS, provider);
    expect(await usdc.getFunction("name")()).toBe("USD Coin");
    expect(await usdc.getFunction("version")()).toBe("2");
    expect(await usdc.getFunction("symbol")()).toBe("USDC");
    expect(await usdc.getFunction("decimals")()).toBe(6n);
    // the domain a wallet signs for: the address the token lives at, not where it was compiled or deployed
    const domain = { name: "USD Coin", version: "2", chainId: 8453, verifyingContract: USDC_BASE };
    expect(await usdc.getFunction("DOMAIN_SEPARATOR")()).toBe(TypedDataEncoder.hashDomain(domain));
    // every funded account holds the token there
    expect((await usdc.getFunction("balanceOf")(emu.chain!.accounts[1]!.address)) as bigint).toBeGreaterThan(0n);
    // and the service offers it
    expect(accepts.find((a) => a.network === "eip155:8453")).toMatchObject({ asset: USDC_BASE, payTo: emu.chain!.treasury });
  });

  it("Solana: the SPL mint (6 decimals, Token program) is at USDC_SOLANA", async (ctx) => {
    if (!hasSolanaRail()) ctx.skip(); // litesvm not installed: the Solana rail is off
    const offer = accepts.find((a) => a.network.startsWith("solana:"))!;
    expect(offer.asset).toBe(USDC_SOLANA);
    const account = await solanaRpc("getAccountInfo", [USDC_SOLANA, { encoding: "base64" }]);
    expect(account.result.value.owner).toBe(TOKEN_PROGRAM_ADDRESS);
    const mint = getMintDecoder().decode(Buffer.from(account.result.value.data[0], "base64"));
    expect(mint).toMatchObject({ decimals: 6, isInitialized: true });
    expect((await solanaRpc("getTokenSupply", [USDC_SOLANA])).result.value.decimals).toBe(6);
  });
});

describe("a wallet with the default PaymentPolicy pays its own way", () => {
  it("on Base: the wallet loses and the treasury gains exactly what the ledger credits", async () => {
    const chain = emu.chain!;
    const key = Wallet.createRandom();
    const funder = new Wallet(chain.accounts[1]!.privateKey, provider);
    const usdc = new Contract(USDC_BASE, USDC_READS, funder);
    await (await usdc.getFunction("transfer")(key.address, parseUnits("25", 6))).wait();
    const balanceOf = async (a: string) => (await usdc.getFunction("balanceOf")(a)) as bigint;
    const walletBefore = await balanceOf(key.address);
    const treasuryBefore = await balanceOf(chain.treasury);

    const events: PaymentEvent[] = [];
    const model = new ChatService({
      model: "emu-xs",
      baseUrl: emu.url,
      wallet: new EvmWallet(key.privateKey),
      payment: new PaymentPolicy({ amountUsd: 5 }), // defaults: real USDC on Base and Solana only
      onPayment: (e) => events.push(e),
      retry: false,
    });
    const message = await model.invoke("Hello! Who pays for this answer?");
    expect(message.text.length).toBeGreaterThan(0);
    expect(events.map((e) => e.type)).toEqual(["payment.requested", "payment.signed", "payment.settled"]);

    const topUps = emu.account(key.address)!.entries.filter((e) => e.type === "TOP_UP");
    expect(topUps).toHaveLength(1);
    expect(topUps[0]).toMatchObject({ amount: 5, network: "eip155:8453", transaction: events[2]!.transaction });
    const credited = parseUnits(String(topUps[0]!.amount), 6);
    expect(walletBefore - (await balanceOf(key.address))).toBe(credited);
    expect((await balanceOf(chain.treasury)) - treasuryBefore).toBe(credited);
    // the settlement transaction called the token at USDC_BASE
    const tx = await provider.getTransaction(events[2]!.transaction!);
    expect(tx?.to).toBe(USDC_BASE);
  });

  it("on Solana: the wallet's token account and the treasury's move by exactly what the ledger credits", async (ctx) => {
    if (!hasSolanaRail()) ctx.skip();
    const offer = accepts.find((a) => a.network.startsWith("solana:"))!;
    const wallet = SolanaWallet.random();
    const ata = async (owner: string) =>
      (await findAssociatedTokenPda({ mint: address(USDC_SOLANA), owner: address(owner), tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];
    const balanceOf = async (owner: string) => {
      const r = await solanaRpc("getTokenAccountBalance", [await ata(owner)]);
      if (!r.result) throw new Error(`getTokenAccountBalance: ${r.error?.message}`);
      return BigInt((r.result as { value: { amount: string } }).value.amount);
    };
    const faucet = await fetch(`${emu.url}/x402/solana/faucet`, { method: "POST", body: JSON.stringify({ owner: wallet.address }) });
    expect(faucet.status).toBe(200);
    expect(((await faucet.json()) as { mint: string }).mint).toBe(USDC_SOLANA);
    const walletBefore = await balanceOf(wallet.address);
    const treasuryBefore = await balanceOf(offer.payTo);

    const events: PaymentEvent[] = [];
    const model = new ChatService({
      model: "emu-xs",
      baseUrl: emu.url,
      wallet,
      payment: new PaymentPolicy({ amountUsd: 5 }),
      solanaRpcUrl: `${emu.url}/x402/solana/rpc`,
      onPayment: (e) => events.push(e),
      retry: false,
    });
    const message = await model.invoke("Hello! Who pays for this answer?");
    expect(message.text.length).toBeGreaterThan(0);
    expect(events.map((e) => e.type)).toEqual(["payment.requested", "payment.signed", "payment.settled"]);

    const topUps = emu.account(wallet.address)!.entries.filter((e) => e.type === "TOP_UP");
    expect(topUps).toHaveLength(1);
    expect(topUps[0]).toMatchObject({ amount: 5, network: offer.network, transaction: events[2]!.transaction });
    const credited = parseUnits(String(topUps[0]!.amount), 6);
    expect(walletBefore - (await balanceOf(wallet.address))).toBe(credited);
    expect((await balanceOf(offer.payTo)) - treasuryBefore).toBe(credited);
  });
});
