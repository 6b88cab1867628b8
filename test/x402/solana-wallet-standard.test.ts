/**
 * A browser's Solana wallet through the Wallet Standard: `SolanaWallet.fromWalletStandard(wallet)` signs in with the
 * wallet's `solana:signMessage` and pays with its `solana:signTransaction` (the partially signed SPL transfer
 * `@x402/svm` builds), against the emulator's Solana ledger (LiteSVM: the token balances move on its chain). The
 * wallet is an in-process wallet-standard object over a real key, as an extension gives one: its key never leaves
 * it. A wallet without the features or the account is refused before anything is asked of it; a wallet that
 * signs something else than asked (a prefixed message, a rewritten transaction, another key) is refused before
 * anything is sent.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { address } from "@solana/kit";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ChatService } from "../../src/chat/index.js";
import { ConfigurationError, PaymentFailedError } from "../../src/http/errors.js";
import { withX402, type PaymentEvent } from "../../src/x402/index.js";
import { SolanaWallet, type WalletStandardWallet } from "../../src/solana/index.js";
import { chatBody } from "./helpers.js";
import { randomSolanaKey, testWalletStandardWallet } from "./wallet-standard-wallet.js";

let emu: Emulator;
let offer: { asset: string; payTo: string };
let rpcUrl: string;

beforeAll(async () => {
  // the top-up route's own limit (10 a minute per IP) is off, as in the other payment tests
  emu = await startEmulator({ rateLimits: { abuseMaxFailures: 10_000 }, x402: { routeLimits: false } });
  rpcUrl = `${emu.url}/x402/solana/rpc`;
  const { accepts } = (await (await fetch(`${emu.url}/x402/top-up`, { method: "POST" })).json()) as {
    accepts: { network: string; asset: string; payTo: string }[];
  };
  offer = accepts.find((a) => a.network.startsWith("solana:"))!;
}, 60_000);
afterAll(async () => {
  await emu?.close();
});

/** The owner's test USDC as LiteSVM holds it (through the emulator's Solana RPC). */
async function tokenBalance(owner: string): Promise<bigint> {
  const [ata] = await findAssociatedTokenPda({ mint: address(offer.asset), owner: address(owner), tokenProgram: TOKEN_PROGRAM_ADDRESS });
  const res = await fetch(rpcUrl, {
    method: "POST",
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getTokenAccountBalance", params: [ata] }),
  });
  return BigInt(((await res.json()) as { result: { value: { amount: string } } }).result.value.amount);
}
async function fund(owner: string): Promise<bigint> {
  const res = await fetch(`${emu.url}/x402/solana/faucet`, { method: "POST", body: JSON.stringify({ owner }) });
  return BigInt(((await res.json()) as { amount: string }).amount);
}

const solanaFetch = (wallet: SolanaWallet, events: PaymentEvent[]) =>
  withX402(fetch, { wallet, policy: { allowedPayees: [offer.payTo] }, solanaRpcUrl: rpcUrl, onPayment: (e) => events.push(e) });
const chat = (f: typeof fetch) =>
  f(`${emu.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: chatBody() });
const topUps = (owner: string) => emu.account(owner)?.entries.filter((e) => e.type === "TOP_UP") ?? [];
const asWallet = (w: unknown) => w as WalletStandardWallet;

describe("SolanaWallet.fromWalletStandard", () => {
  it("signs in and tops up through the wallet's features: 5 concurrent requests, 1 payment, the tokens moved on LiteSVM", async () => {
    const { wallet: standard, address: owner, asked } = testWalletStandardWallet(randomSolanaKey());
    const wallet = await SolanaWallet.fromWalletStandard(asWallet(standard));
    expect(wallet.address).toBe(owner);
    expect(asked).toEqual([]); // making the wallet asks the wallet nothing
    const before = await fund(owner);
    const events: PaymentEvent[] = [];
    const results = await Promise.all(Array.from({ length: 5 }, () => chat(solanaFetch(wallet, events))));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(events.filter((e) => e.type === "payment.signed")).toHaveLength(1);
    expect(topUps(owner).map((e) => [e.amount, e.network])).toEqual([[5, "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"]]);
    expect(before - (await tokenBalance(owner))).toBe(5_000_000n);
    // every sign-in was the wallet's signMessage; the one payment its signTransaction, told the chain
    expect(asked.filter((a) => a === "solana:signMessage").length).toBeGreaterThanOrEqual(5);
    expect(asked.filter((a) => a.startsWith("solana:signTransaction"))).toEqual(["solana:signTransaction solana:mainnet"]);
    expect(JSON.stringify(wallet)).toBe(JSON.stringify({ kind: "solana", address: owner }));
  });

  it("is a wallet for ChatService: a Solana sign-in and a top-up through a wallet the page had not connected yet", async () => {
    const { wallet: standard, address: owner, asked } = testWalletStandardWallet(randomSolanaKey(), { connected: false });
    const wallet = await SolanaWallet.fromWalletStandard(asWallet(standard));
    expect(asked).toEqual(["standard:connect"]);
    const events: PaymentEvent[] = [];
    const model = new ChatService({
      model: "emu-xs",
      baseUrl: emu.url,
      wallet,
      payment: { allowedPayees: [offer.payTo] },
      solanaRpcUrl: rpcUrl,
      onPayment: (e) => events.push(e),
    });
    const message = await model.invoke("hello from a browser wallet");
    expect(message.text.length).toBeGreaterThan(0);
    expect(events.map((e) => e.type)).toEqual(["payment.requested", "payment.signed", "payment.settled"]);
    expect(topUps(owner)).toHaveLength(1);
  });

  it("takes the account asked for by address, and the chain asked for", async () => {
    const { wallet: standard, address: owner, asked } = testWalletStandardWallet(randomSolanaKey());
    const wallet = await SolanaWallet.fromWalletStandard(asWallet(standard), { account: owner, chain: "solana:devnet" });
    const events: PaymentEvent[] = [];
    expect((await chat(solanaFetch(wallet, events))).status).toBe(200);
    expect(asked.filter((a) => a.startsWith("solana:signTransaction"))).toEqual(["solana:signTransaction solana:devnet"]);
  });
});

describe("SolanaWallet.fromWalletStandard refuses, before asking the wallet anything", () => {
  const refusals: [string, () => Promise<unknown>, RegExp][] = [];
  const add = (
    what: string,
    make: () => { wallet: unknown; asked: string[] },
    options: Parameters<typeof SolanaWallet.fromWalletStandard>[1],
    message: RegExp,
  ) => {
    refusals.push([
      what,
      async () => {
        const { wallet, asked } = make();
        const err = await SolanaWallet.fromWalletStandard(asWallet(wallet), options).catch((e: unknown) => e);
        expect(asked).toEqual([]);
        return err;
      },
      message,
    ]);
  };
  const key = randomSolanaKey();
  add(
    "a wallet without solana:signTransaction",
    () => testWalletStandardWallet(key, { without: ["solana:signTransaction"] }),
    {},
    /lacks solana:signTransaction/,
  );
  add(
    "a wallet without solana:signMessage",
    () => testWalletStandardWallet(key, { without: ["solana:signMessage"] }),
    {},
    /lacks solana:signMessage/,
  );
  add(
    "a wallet with no account and no standard:connect",
    () => testWalletStandardWallet(key, { connected: false, without: ["standard:connect"] }),
    {},
    /no Solana account/,
  );
  add(
    "an account the wallet does not have",
    () => testWalletStandardWallet(key),
    { account: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin" },
    /not one of the wallet's accounts/,
  );
  add("a chain the account is not on", () => testWalletStandardWallet(key), { chain: "solana:testnet" }, /not on solana:testnet/);
  add(
    "a wallet that cannot sign version 0 transactions",
    () => {
      const made = testWalletStandardWallet(key);
      (made.wallet.features["solana:signTransaction"] as { supportedTransactionVersions: unknown[] }).supportedTransactionVersions = [
        "legacy",
      ];
      return made;
    },
    {},
    /version 0/,
  );
  add(
    "an account whose publicKey is not its address",
    () => {
      const made = testWalletStandardWallet(key);
      const other = { ...made.account, publicKey: randomSolanaKey().slice(32) };
      return { ...made, wallet: { ...made.wallet, accounts: [other] } };
    },
    {},
    /publicKey is not its address/,
  );
  add(
    "an account that does not allow signing transactions",
    () => {
      const made = testWalletStandardWallet(key);
      const other = { ...made.account, features: ["solana:signMessage"] };
      return { ...made, wallet: { ...made.wallet, accounts: [other] } };
    },
    {},
    /does not allow solana:signTransaction/,
  );
  add(
    "not a wallet (an EIP-1193 provider)",
    () => ({ wallet: { request: async () => [] }, asked: [] }),
    {},
    /expected a wallet-standard Wallet/,
  );

  for (const [what, run, message] of refusals) {
    it(what, async () => {
      const err = await run();
      expect(err).toBeInstanceOf(ConfigurationError);
      expect((err as Error).message).toMatch(message);
    });
  }
});

describe("a wallet that signs something else than asked is refused before anything is sent", () => {
  it("a prefixed sign-in message: no request is signed in with it", async () => {
    const { wallet: standard, address: owner } = testWalletStandardWallet(randomSolanaKey(), { misbehave: "prefix-message" });
    const wallet = await SolanaWallet.fromWalletStandard(asWallet(standard));
    const err = await chat(solanaFetch(wallet, [])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigurationError);
    expect((err as Error).message).toMatch(/signed another message than the one asked/);
    expect(emu.account(owner)).toBeUndefined();
  });

  it("a rewritten payment transaction: refused, nothing paid, no token moved", async () => {
    const { wallet: standard, address: owner } = testWalletStandardWallet(randomSolanaKey(), { misbehave: "rewrite-transaction" });
    const wallet = await SolanaWallet.fromWalletStandard(asWallet(standard));
    const before = await fund(owner);
    const events: PaymentEvent[] = [];
    const err = await chat(solanaFetch(wallet, events)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PaymentFailedError);
    expect((err as Error).message).toMatch(/changed the payment transaction/);
    expect(events.map((e) => e.type)).toEqual(["payment.requested", "payment.failed"]);
    expect(topUps(owner)).toEqual([]);
    expect(await tokenBalance(owner)).toBe(before);
  });

  it("a signature by another key: refused at sign-in", async () => {
    const { wallet: standard } = testWalletStandardWallet(randomSolanaKey(), { misbehave: "other-key" });
    const wallet = await SolanaWallet.fromWalletStandard(asWallet(standard));
    const err = await chat(solanaFetch(wallet, [])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigurationError);
    expect((err as Error).message).toMatch(/does not verify for its account/);
  });
});
