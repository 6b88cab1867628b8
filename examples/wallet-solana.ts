/**
 * A self-paying agent with a Solana wallet: it signs in with Ed25519 (SIWX), and on 402 it builds a partially
 * signed SPL `TransferChecked` of USDC (x402 `exact` scheme on Solana; the service's fee payer co-signs),
 * tops up its credit within the owner's `PaymentPolicy`, and retries.
 *
 * Against the embedded emulator: a fresh random wallet; the emulator's Solana test rail gives every wallet
 * test USDC of a mint at the real USDC mint address, so the default policy (real USDC only) pays it as is;
 * the payee is pinned to the one in the emulator's public top-up offer.
 *
 *   npm run example:wallet-solana
 *   SERVICE_BASE_URL=https://.../api/v1 SOLANA_SECRET_KEY=<base58 or JSON array> SERVICE_MODEL=... \
 *     [SOLANA_RPC_URL=https://api.mainnet-beta.solana.com] npm run example:wallet-solana
 */
import { pathToFileURL } from "node:url";
import { createAgent } from "langchain";
import { HumanMessage, ToolMessage } from "@langchain/core/messages";
import {
  ChatService,
  CryptoRpcToolkit,
  ServiceClient,
  createServiceFetch,
  type PaymentEvent,
  type PaymentPolicyOptions,
  type X402Transaction,
} from "../src/index.js";
import { startEmulator, type LedgerEntry } from "langchain-service-emulator";
import { SolanaWallet } from "../src/solana/index.js";

export interface Options {
  baseUrl?: string;
  apiKey?: string;
  log?: (line: string) => void;
}

export interface Result {
  wallet: string;
  answer: string;
  /** the tools the agent called, with what they answered */
  toolCalls: { name: string; content: string }[];
  payments: PaymentEvent[];
  balanceUsd: number;
  transactions: X402Transaction[];
  /** embedded run: the emulator's own ledger entries for the wallet */
  ledger?: LedgerEntry[];
}

/** The Solana entry of the service's public top-up offer (a 402 listing what it accepts). */
async function solanaOffer(baseUrl: string): Promise<{ network: string; asset: string; payTo: string }> {
  const res = await fetch(`${baseUrl}/x402/top-up`, { method: "POST" });
  const { accepts } = (await res.json()) as { accepts: { network: string; asset: string; payTo: string }[] };
  const offer = accepts.find((a) => a.network.startsWith("solana"));
  if (!offer) throw new Error("the service offers no Solana payment");
  return offer;
}

export async function main(options: Options = {}): Promise<Result> {
  const log = options.log ?? console.log;
  let baseUrl = options.baseUrl ?? process.env.SERVICE_BASE_URL;
  const emulator = baseUrl ? undefined : await startEmulator();
  try {
    let wallet: SolanaWallet;
    let solanaRpcUrl: string;
    const policy: PaymentPolicyOptions = { amountUsd: 5, maxPerTopUpUsd: 5, maxPerPeriodUsd: 10 };
    if (emulator) {
      baseUrl = emulator.url;
      wallet = SolanaWallet.random();
      solanaRpcUrl = `${emulator.url}/x402/solana/rpc`; // the emulator's Solana JSON-RPC (mint, blockhash)
      const offer = await solanaOffer(emulator.url);
      policy.allowedPayees = [offer.payTo];
      // something to ask about: 1.5 SOL airdropped to the wallet on the emulator's local SVM
      await fetch(solanaRpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "requestAirdrop", params: [wallet.address, 1_500_000_000] }),
      });
    } else {
      const key = process.env.SOLANA_SECRET_KEY;
      if (!key) throw new Error("set SOLANA_SECRET_KEY (a Solana wallet holding USDC) to run against SERVICE_BASE_URL");
      wallet = new SolanaWallet(key); // default policy: real USDC on Solana only
      solanaRpcUrl = process.env.SOLANA_RPC_URL ?? "https://api.mainnet-beta.solana.com";
    }
    log(`wallet ${wallet.address}`);

    const payments: PaymentEvent[] = [];
    const serviceFetch = createServiceFetch({
      baseUrl,
      wallet,
      payment: policy,
      solanaRpcUrl,
      onPayment: (event) => {
        payments.push(event);
        log(
          `  payment ${event.type}${event.amountUsd !== undefined ? ` $${event.amountUsd}` : ""}${event.transaction ? ` tx ${event.transaction}` : ""}`,
        );
      },
    });
    const model = new ChatService({ model: process.env.SERVICE_MODEL ?? "emu-m", serviceFetch });
    const client = new ServiceClient({ serviceFetch });

    // An agent with the crypto tools: its inference and its chain reads are paid from the same wallet credit.
    const agent = createAgent({ model, tools: new CryptoRpcToolkit({ client }).getTools() });
    const question = `What is the SOL balance of my wallet ${wallet.address} on solana-mainnet?`;
    const { messages } = await agent.invoke({ messages: [new HumanMessage(question)] });
    const toolCalls = messages
      .filter((m): m is ToolMessage => m instanceof ToolMessage)
      .map((m) => ({ name: m.name ?? "tool", content: String(m.content) }));
    for (const t of toolCalls) log(`  tool ${t.name} -> ${t.content.slice(0, 160)}`);
    const answer = messages.at(-1)!.text;
    log(`> ${question}\n< ${answer}`);

    const { balanceUsd } = await client.getX402Balance();
    log(`credit left: $${balanceUsd.toFixed(6)}`);
    const { transactions } = await client.getX402Transactions();
    log("ledger (service's view):");
    for (const t of transactions) log(`  ${t.type.padEnd(7)} ${t.amount.toFixed(6).padStart(11)}  balance ${t.balanceAfter.toFixed(6)}`);

    const result: Result = { wallet: wallet.address, answer, toolCalls, payments, balanceUsd, transactions };
    if (emulator) result.ledger = emulator.account(wallet.address)?.entries ?? [];
    return result;
  } finally {
    await emulator?.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  main().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}
