/**
 * A self-paying agent with an EVM wallet: no account, no API key. The wallet signs in on every request
 * (SIWX); when its credit runs out the service answers 402, and the client tops up USDC credit on Base by
 * itself (x402), within the owner's `PaymentPolicy`, then retries. One fetch stack is shared by the chat
 * model and the plain client, so they share one payment controller (one top-up at a time, one budget).
 *
 * Against the embedded emulator, the wallet is a funded account of a local chain that holds the emulator's
 * test USDC, which lives at the real USDC address on Base: the default policy (real USDC only) pays it as is.
 *
 *   npm run example:wallet-evm
 *   SERVICE_BASE_URL=https://.../api/v1 WALLET_PRIVATE_KEY=0x... SERVICE_MODEL=... npm run example:wallet-evm
 */
import { pathToFileURL } from "node:url";
import { Contract, JsonRpcProvider, Network } from "ethers";
import {
  ChatService,
  ServiceClient,
  createServiceFetch,
  type PaymentEvent,
  type PaymentPolicyOptions,
  type X402Transaction,
} from "../src/index.js";
import { startEmulator, type Emulator, type LedgerEntry } from "langchain-service-emulator";
import { EvmWallet } from "../src/evm/index.js";

export interface Options {
  baseUrl?: string;
  apiKey?: string;
  log?: (line: string) => void;
}

export interface Result {
  wallet: string;
  answers: string[];
  payments: PaymentEvent[];
  /** the wallet's credit as the service reports it after the run */
  balanceUsd: number;
  /** the service's ledger for the wallet: top-ups and charges, newest first */
  transactions: X402Transaction[];
  /** embedded run: USDC that left the wallet on the local chain, and the emulator's own ledger entries */
  paidOnChainUsd?: number;
  ledger?: LedgerEntry[];
}

/** Embedded run only: the wallet's test-USDC balance on the local chain, in USD. */
async function usdcOnChain(emulator: Emulator, address: string): Promise<number> {
  const chain = emulator.chain!;
  const provider = new JsonRpcProvider(chain.rpcUrl, Network.from(chain.chainId), { staticNetwork: true });
  try {
    const usdc = new Contract(chain.usdc.address, ["function balanceOf(address) view returns (uint256)"], provider);
    return Number((await usdc.getFunction("balanceOf")(address)) as bigint) / 1e6;
  } finally {
    provider.destroy();
  }
}

export async function main(options: Options = {}): Promise<Result> {
  const log = options.log ?? console.log;
  let baseUrl = options.baseUrl ?? process.env.SERVICE_BASE_URL;
  // `chain: true`: a local EVM chain with an EIP-3009 test USDC, where the emulator settles top-ups for real
  const emulator = baseUrl ? undefined : await startEmulator({ chain: true });
  try {
    let wallet: EvmWallet;
    // the owner's money rules: checked before anything is signed
    const policy: PaymentPolicyOptions = { amountUsd: 10, maxPerTopUpUsd: 10, maxPerPeriodUsd: 20 };
    if (emulator) {
      baseUrl = emulator.url;
      wallet = new EvmWallet(emulator.chain!.accounts[1]!.privateKey); // a funded account of the local chain
      policy.allowedPayees = [emulator.chain!.treasury];
    } else {
      const key = process.env.WALLET_PRIVATE_KEY;
      if (!key) throw new Error("set WALLET_PRIVATE_KEY (a Base wallet holding USDC) to run against SERVICE_BASE_URL");
      wallet = new EvmWallet(key); // default policy: real USDC on Base only
    }
    log(`wallet ${wallet.address}`);
    const usdcBefore = emulator ? await usdcOnChain(emulator, wallet.address) : undefined;

    const payments: PaymentEvent[] = [];
    const serviceFetch = createServiceFetch({
      baseUrl,
      wallet,
      payment: policy,
      onPayment: (event) => {
        payments.push(event);
        log(
          `  payment ${event.type}${event.amountUsd !== undefined ? ` $${event.amountUsd}` : ""}${event.transaction ? ` tx ${event.transaction}` : ""}`,
        );
      },
    });
    const model = new ChatService({ model: process.env.SERVICE_MODEL ?? "emu-s", serviceFetch });
    const client = new ServiceClient({ serviceFetch });

    const answers: string[] = [];
    for (const question of ["Hello! Who pays for this answer?", "And for this one?"]) {
      const message = await model.invoke(question); // the first one hits 402, tops up, and retries
      answers.push(message.text);
      log(`> ${question}\n< ${message.text}`);
    }

    const { balanceUsd } = await client.getX402Balance();
    log(`credit left: $${balanceUsd.toFixed(6)}`);
    const { transactions } = await client.getX402Transactions();
    log("ledger (service's view):");
    for (const t of transactions) log(`  ${t.type.padEnd(7)} ${t.amount.toFixed(6).padStart(11)}  balance ${t.balanceAfter.toFixed(6)}`);

    const result: Result = { wallet: wallet.address, answers, payments, balanceUsd, transactions };
    if (emulator && usdcBefore !== undefined) {
      result.paidOnChainUsd = usdcBefore - (await usdcOnChain(emulator, wallet.address));
      result.ledger = emulator.account(wallet.address)?.entries ?? [];
      log(`paid on chain: ${result.paidOnChainUsd} USDC`);
    }
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
