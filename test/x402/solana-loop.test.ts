/**
 * The whole loop on the Solana rail: a Solana wallet signs in with Ed25519 SIWX, hits 402, builds a real
 * partially signed SPL TransferChecked with `@x402/svm` (mint and blockhash from the emulator's RPC, served
 * from LiteSVM), the reference facilitator verifies it, co-signs it and sends it into LiteSVM, and the on-chain
 * (LiteSVM) token balances move by exactly what was credited.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { address } from "@solana/kit";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { RunnableLambda } from "@langchain/core/runnables";
import { PaymentSpendHandler, withX402, type PaymentEvent } from "../../src/x402/index.js";
import { SolanaWallet } from "../../src/solana/index.js";
import { chatBody } from "./helpers.js";

let emu: Emulator;
let offer: { asset: string; payTo: string; extra: { feePayer: string } };

beforeAll(async () => {
  emu = await startEmulator({ rateLimits: { abuseMaxFailures: 10_000 } });
  const res = await fetch(`${emu.url}/x402/top-up`, { method: "POST" });
  const { accepts } = (await res.json()) as { accepts: { network: string }[] };
  offer = accepts.find((a) => a.network.startsWith("solana:")) as unknown as typeof offer;
});
afterAll(async () => {
  await emu?.close();
});

async function solanaRpc(method: string, params: unknown[]): Promise<{ result?: any; error?: { code: number; message: string } }> {
  const res = await fetch(`${emu.url}/x402/solana/rpc`, {
    method: "POST",
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return (await res.json()) as { result?: any; error?: { code: number; message: string } };
}

async function ataOf(owner: string): Promise<string> {
  return (await findAssociatedTokenPda({ mint: address(offer.asset), owner: address(owner), tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];
}

/** The owner's token balance as LiteSVM holds it (getTokenAccountBalance over the emulator's Solana RPC). */
async function tokenBalance(owner: string): Promise<bigint> {
  const answer = await solanaRpc("getTokenAccountBalance", [await ataOf(owner)]);
  if (!answer.result) throw new Error(`getTokenAccountBalance: ${answer.error?.message}`);
  return BigInt((answer.result as { value: { amount: string } }).value.amount);
}

/** Gives a wallet its starting test USDC explicitly (the emulator also does it on first sight). */
async function fund(owner: string): Promise<bigint> {
  const res = await fetch(`${emu.url}/x402/solana/faucet`, { method: "POST", body: JSON.stringify({ owner }) });
  expect(res.status).toBe(200);
  return BigInt(((await res.json()) as { amount: string }).amount);
}

function solanaFetch(wallet: SolanaWallet, events: PaymentEvent[]) {
  return withX402(fetch, {
    wallet,
    policy: { allowedPayees: [offer.payTo] },
    solanaRpcUrl: `${emu.url}/x402/solana/rpc`,
    onPayment: (e) => events.push(e),
  });
}

describe("x402 on Solana against the emulator", () => {
  it("offers a Solana requirement with a fee payer", () => {
    expect(offer).toMatchObject({ payTo: expect.any(String), extra: { feePayer: expect.any(String) } });
  });

  it("pays, retries and succeeds; the token balances moved by exactly what was credited", async () => {
    const wallet = SolanaWallet.random();
    const events: PaymentEvent[] = [];
    expect(await fund(wallet.address)).toBe(1_000_000_000_000n);
    const payerBefore = await tokenBalance(wallet.address);
    const treasuryBefore = await tokenBalance(offer.payTo);
    const f = solanaFetch(wallet, events);
    const res = await f(`${emu.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: chatBody(),
    });
    expect(res.status).toBe(200);
    // live: no X-Balance-Remaining; the credit left is read from GET /x402/balance when asked
    expect(res.headers.get("x-balance-remaining")).toBeNull();
    expect(String(await f.controller.currentBalanceUsd())).toMatch(/^4\.99/);
    expect(events.map((e) => e.type)).toEqual(["payment.requested", "payment.signed", "payment.settled"]);
    const topUps = emu.account(wallet.address)!.entries.filter((e) => e.type === "TOP_UP");
    expect(topUps).toHaveLength(1);
    expect(topUps[0]).toMatchObject({ amount: 5, network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", transaction: events[2]!.transaction });
    const moved = payerBefore - (await tokenBalance(wallet.address));
    expect(moved).toBe(5_000_000n);
    expect((await tokenBalance(offer.payTo)) - treasuryBefore).toBe(moved);
  });

  it("20 concurrent 402s from one Solana wallet make one payment", async () => {
    const wallet = SolanaWallet.random();
    const events: PaymentEvent[] = [];
    const before = await fund(wallet.address);
    const f = solanaFetch(wallet, events);
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        f(`${emu.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: chatBody() }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(events.filter((e) => e.type === "payment.signed")).toHaveLength(1);
    expect(before - (await tokenBalance(wallet.address))).toBe(5_000_000n);
  });

  it("payment events reach LangChain callbacks inside a run; PaymentSpendHandler sums the spend", async () => {
    const wallet = SolanaWallet.random();
    const f = solanaFetch(wallet, []);
    const handler = new PaymentSpendHandler();
    const agentStep = RunnableLambda.from(async () => {
      const res = await f(`${emu.url}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: chatBody(),
      });
      return res.status;
    });
    expect(await agentStep.invoke({}, { callbacks: [handler] })).toBe(200);
    expect(handler.payments).toBe(1);
    expect(handler.totalUsd).toBe(5);
    expect(handler.events.map((e) => e.type)).toEqual(["payment.requested", "payment.signed", "payment.settled"]);
  });
});
