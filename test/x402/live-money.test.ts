/**
 * Wallet money against the emulator in live mode (its default), over loopback HTTP and a real local chain:
 * - a 402 that a top-up cannot cure (a wallet linked to an account with staking-token credit) is not paid again;
 * - a top-up still settling (`409 PAYMENT_IN_PROGRESS`) or timed out (`504 SETTLEMENT_TIMEOUT`) is waited for and
 *   re-sent with the same bytes, never failed and never re-signed; `402 SETTLEMENT_FAILED` lets a new one be signed;
 *   a 409 that means "already processed" (a re-send of a payment credited, its first answer lost) ends the re-sends
 *   once the balance shows the credit;
 *   `503 X402_NOT_CONFIGURED` is `PaymentsUnavailableError`;
 * - the credit left comes from `GET /x402/balance`, read when asked and stale, never on the request path.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Emulator } from "langchain-service-emulator";
import type { X402EmulatorOptions } from "../../packages/langchain-service-emulator/src/x402/index.js";
import { PaymentNotCurableError, PaymentsUnavailableError, TopUpRejectedError } from "../../src/http/errors.js";
import type { FetchLike } from "../../src/http/fetch-stack.js";
import { ServiceClient } from "../../src/client.js";
import type { PaymentEvent } from "../../src/x402/index.js";
import { createSiwxHeader } from "../../src/x402/siwx.js";
import { EvmWallet } from "../../src/evm/index.js";
import { chatBody, payer, startPaidEmulator, testPolicy, unpacedRoutes, usdcBalance } from "./helpers.js";

let emu: Emulator;
/** read by the emulator on every request: each test sets what it needs and takes it back */
const x402Options: X402EmulatorOptions = {};

beforeAll(async () => {
  // payers 1..12 (0 deploys, the last is the treasury)
  emu = await startPaidEmulator({ chain: { accounts: 14 }, x402: x402Options as Record<string, unknown> });
});
afterAll(async () => {
  await emu?.close();
});

interface Sent {
  path: string;
  status?: number;
  /** the signed payment a top-up carried */
  payment?: string;
}

/** A wallet client (chain account `index`) that records what it sent and how each answer came back. */
function walletClient(index: number, topUp: Record<string, number> = {}, on: Emulator = emu) {
  const wallet = payer(on, index);
  const events: PaymentEvent[] = [];
  const sent: Sent[] = [];
  const recording: FetchLike = async (input, init) => {
    const payment = new Headers(init?.headers).get("payment-signature") ?? undefined;
    const entry: Sent = { path: `${init?.method ?? "GET"} ${new URL(String(input)).pathname}`, ...(payment ? { payment } : {}) };
    sent.push(entry);
    const res = await globalThis.fetch(input, init);
    entry.status = res.status;
    return res;
  };
  const client = new ServiceClient({
    baseUrl: on.url,
    wallet,
    payment: testPolicy(on),
    onPayment: (e) => events.push(e),
    fetch: recording,
    abuseGuard: false,
    pacing: unpacedRoutes,
    retry: { baseDelayMs: 1, maxDelayMs: 5 },
    topUp: { resendDelayMs: 20, ...topUp },
  });
  const chat = () => client.request("/chat/completions", { body: JSON.parse(chatBody()) });
  const signed = () => events.filter((e) => e.type === "payment.signed").length;
  const paid = () => sent.filter((s) => s.path.endsWith("/x402/top-up") && s.status !== 402);
  return { wallet, events, sent, client, chat, signed, paid };
}

const topUps = (address: string) => emu.account(address)?.entries.filter((e) => e.type === "TOP_UP") ?? [];

interface Offer {
  amount: string;
  network: string;
}

/** The `accepts` of an inference 402's PAYMENT-REQUIRED header, for a signed-in wallet with no credit. */
async function challengeOffers(wallet: EvmWallet): Promise<Offer[]> {
  const url = `${emu.url}/chat/completions`;
  const res = await globalThis.fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "SIGN-IN-WITH-X": await createSiwxHeader(wallet, url) },
    body: chatBody(),
  });
  expect(res.status).toBe(402);
  await res.body?.cancel();
  return (JSON.parse(Buffer.from(res.headers.get("payment-required")!, "base64").toString()) as { accepts: Offer[] }).accepts;
}

describe("an inference 402's header is a hint, not the offer to sign", () => {
  it("live: it prices the suggested $10 and names Solana bare, unlike the top-up route; the client pays the route's $5, once", async () => {
    const { wallet, chat, signed } = walletClient(11);
    const hinted = await challengeOffers(wallet);
    const route = ((await (await globalThis.fetch(`${emu.url}/x402/top-up`, { method: "POST" })).json()) as { accepts: Offer[] }).accepts;
    expect(hinted.map((o) => o.amount)).toEqual(route.map(() => "10000000"));
    expect(route.map((o) => o.amount)).toEqual(route.map(() => "5000000"));
    expect(hinted.map((o) => o.network)).toEqual(route.map((o) => (o.network.startsWith("solana:") ? "solana" : o.network)));
    expect(route.every((o) => /^(eip155|solana):/.test(o.network))).toBe(true);

    expect((await chat()).status).toBe(200);
    expect(signed()).toBe(1);
    expect(topUps(wallet.address).map((e) => e.amount)).toEqual([5]);
  });

  it("seed: the header repeats the top-up route's offer", async () => {
    x402Options.challengeOffer = "seed";
    try {
      const hinted = await challengeOffers(EvmWallet.random()); // signed in, no credit
      expect(hinted.map((o) => o.amount).every((a) => a === "5000000")).toBe(true);
    } finally {
      delete x402Options.challengeOffer;
    }
  });
});

describe("a 402 that a top-up cannot cure is not paid", () => {
  it("a wallet linked to an account with too little staking-token credit: five sequential requests, at most 1 payment", async () => {
    const { wallet, chat, signed } = walletClient(1);
    emu.ledger.linkWallet(wallet.address, { diemUsd: 0.05 }); // billed first, under the $0.10 it needs
    const errors: unknown[] = [];
    for (let i = 0; i < 5; i++) errors.push(await chat().catch((e: unknown) => e));
    // the first 402 is paid (nothing said yet it would not help); from then on the balance says why not
    expect(signed()).toBe(1);
    expect(topUps(wallet.address)).toHaveLength(1);
    for (const err of errors) {
      expect(err).toBeInstanceOf(PaymentNotCurableError);
      expect(err).toMatchObject({ reason: "linked_account", diemBalanceUsd: 0.05, balanceUsd: 5 });
    }
  });

  it("a wallet that paid once and is linked since: five sequential requests, no payment", async () => {
    const { wallet, client, chat, signed, sent } = walletClient(2);
    await client.topUp(5);
    emu.ledger.linkWallet(wallet.address, { diemUsd: 0.02 });
    const before = await usdcBalance(emu, wallet.address);
    for (let i = 0; i < 5; i++) await expect(chat()).rejects.toMatchObject({ name: "PaymentNotCurableError", reason: "linked_account" });
    expect(signed()).toBe(1); // the explicit top-up only
    expect(await usdcBalance(emu, wallet.address)).toBe(before);
    // each 402 cost one balance read, never a top-up request
    expect(sent.filter((s) => s.path.includes("/x402/balance/"))).toHaveLength(5);
    expect(sent.filter((s) => s.path.endsWith("/x402/top-up"))).toHaveLength(2);
  });

  it("a linked account with enough staking-token credit is billed, and the wallet's own credit is not touched", async () => {
    const { wallet, client, chat, signed } = walletClient(3);
    await client.topUp(5);
    emu.ledger.linkWallet(wallet.address, { diemUsd: 1 });
    expect((await chat()).status).toBe(200);
    expect(signed()).toBe(1);
    expect(emu.account(wallet.address)!.usd).toBe(5);
    expect(emu.ledger.linked.get(wallet.address.toLowerCase())!.diemUsd).toBeLessThan(1);
    expect(await client.getX402Balance()).toMatchObject({
      balanceUsd: 5,
      canConsume: true,
      diemBalanceUsd: emu.ledger.linked.get(wallet.address.toLowerCase())!.diemUsd,
    });
  });
});

describe("slow settlement", () => {
  it("409 PAYMENT_IN_PROGRESS while the facilitator settles: the same bytes re-sent until it lands; one payment, the request served", async () => {
    Object.assign(x402Options, { settleDelayMs: 1_500, delayedSettlements: 1 });
    try {
      // the first send gives up before the settlement ends; its re-sends meet the payment still settling
      const { wallet, chat, signed, paid } = walletClient(4, { topUpTimeoutMs: 400, maxResends: 2 });
      expect((await chat()).status).toBe(200);
      expect(signed()).toBe(1);
      expect(paid().some((s) => s.status === 409)).toBe(true);
      expect(topUps(wallet.address)).toHaveLength(1);
    } finally {
      delete x402Options.settleDelayMs;
      delete x402Options.delayedSettlements;
    }
  });

  it("409 for a payment already processed (its first answer lost): the balance shows the credit, so no more re-sends; one payment, served", async () => {
    x402Options.topUpFailures = 1; // the first payment settles, then its answer is a 503
    try {
      const { wallet, chat, signed, paid, sent } = walletClient(12);
      // the re-send of the credited payment: 409 live (seed: a 400 saying its nonce was used)
      expect((await chat()).status).toBe(200);
      expect(signed()).toBe(1);
      // one send, one re-send: the 409 was not re-sent again (before, it was until the payment's validity ended)
      expect(paid().map((s) => s.status)).toEqual([503, 409]);
      expect(sent.filter((s) => s.path.includes("/x402/balance/")).length).toBeGreaterThanOrEqual(1);
      expect(topUps(wallet.address)).toHaveLength(1);
      // the emulator: the same bytes once more are 409 live, and 400 (nonce used) with resendAfterSettled: "400"
      const bytes = sent.find((s) => s.payment)!.payment!;
      const again = async () => {
        const res = await globalThis.fetch(`${emu.url}/x402/top-up`, { method: "POST", headers: { "PAYMENT-SIGNATURE": bytes } });
        return [res.status, ((await res.json()) as { error: string }).error];
      };
      expect(await again()).toEqual([409, "PAYMENT_IN_PROGRESS"]);
      x402Options.resendAfterSettled = "400";
      expect(await again()).toEqual([400, "PAYMENT_VERIFICATION_FAILED"]);
      expect(topUps(wallet.address)).toHaveLength(1);
    } finally {
      delete x402Options.topUpFailures;
      delete x402Options.resendAfterSettled;
    }
  }, 20_000);

  it("504 SETTLEMENT_TIMEOUT, the payment landing later: re-sent, never re-signed; credited once", async () => {
    Object.assign(x402Options, { settlementTimeouts: 1, settleDelayMs: 600, delayedSettlements: 1 });
    try {
      const { wallet, chat, signed, paid } = walletClient(5, { maxResends: 1 });
      const before = await usdcBalance(emu, wallet.address);
      expect((await chat()).status).toBe(200);
      expect(signed()).toBe(1);
      expect(paid()[0]!.status).toBe(504);
      expect(topUps(wallet.address)).toHaveLength(1);
      expect(before - (await usdcBalance(emu, wallet.address))).toBe(5_000_000n);
    } finally {
      delete x402Options.settlementTimeouts;
      delete x402Options.settleDelayMs;
      delete x402Options.delayedSettlements;
    }
  });

  it("402 SETTLEMENT_FAILED: no funds moved, TopUpRejectedError; the next request may sign a new payment", async () => {
    x402Options.settlementFailures = 1;
    try {
      const { wallet, chat, signed, client } = walletClient(6);
      const before = await usdcBalance(emu, wallet.address);
      const err = await chat().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TopUpRejectedError);
      expect(err).toMatchObject({ code: "SETTLEMENT_FAILED", fundsMoved: false });
      expect(await usdcBalance(emu, wallet.address)).toBe(before);
      expect((await client.fetch.paymentController())!.hasPendingPayment).toBe(false);
      expect((await chat()).status).toBe(200);
      expect(signed()).toBe(2);
      expect(topUps(wallet.address)).toHaveLength(1);
      expect(before - (await usdcBalance(emu, wallet.address))).toBe(5_000_000n);
    } finally {
      delete x402Options.settlementFailures;
    }
  });

  it("503 X402_NOT_CONFIGURED: PaymentsUnavailableError, nothing signed", async () => {
    x402Options.notConfigured = true;
    try {
      const { chat, signed, paid } = walletClient(7);
      await expect(chat()).rejects.toBeInstanceOf(PaymentsUnavailableError);
      expect(signed()).toBe(0);
      expect(paid().every((s) => s.status === 503)).toBe(true);
    } finally {
      delete x402Options.notConfigured;
    }
  });
});

describe("the credit left, without X-Balance-Remaining", () => {
  it("is read from GET /x402/balance when asked and stale, never on the request path", async () => {
    const { wallet, client, chat, sent } = walletClient(8);
    const reads = () => sent.filter((s) => s.path.includes("/x402/balance/")).length;
    for (let i = 0; i < 4; i++) expect((await chat()).status).toBe(200);
    expect(reads()).toBe(0);
    const left = await client.lastBalanceUsd();
    expect(left).toBe(emu.account(wallet.address)!.usd);
    expect(left).toBeLessThan(5);
    expect(reads()).toBe(1);
    // nothing served since: the figure stands
    expect(await client.lastBalanceUsd()).toBe(left);
    expect(reads()).toBe(1);
    // another client of the same wallet shares it; a paid request makes it stale
    const other = new ServiceClient({
      baseUrl: emu.url,
      wallet: payer(emu, 8),
      payment: testPolicy(emu),
      abuseGuard: false,
      pacing: unpacedRoutes,
    });
    expect(await other.lastBalanceUsd()).toBe(left);
    await chat();
    const after = await other.lastBalanceUsd();
    expect(after).toBe(emu.account(wallet.address)!.usd);
    expect(after).toBeLessThan(left!);
  });

  it("uses X-Balance-Remaining when the service sends it (no read)", async () => {
    x402Options.balanceHeader = true;
    try {
      const { wallet, client, chat, sent } = walletClient(9);
      expect((await chat()).status).toBe(200);
      expect(await client.lastBalanceUsd()).toBe(emu.account(wallet.address)!.usd);
      expect(sent.filter((s) => s.path.includes("/x402/balance/"))).toHaveLength(0);
    } finally {
      delete x402Options.balanceHeader;
    }
  });
});

describe("the seed contract too", () => {
  it("a slow settlement is waited for by the service, and X-Balance-Remaining is used: served, one payment, no balance read", async () => {
    // chain accounts are the same keys on every emulator: a payer none of the tests above used (its money state is per process)
    const seed = await startPaidEmulator({ mode: "seed", chain: { accounts: 12 }, x402: { settleDelayMs: 800, delayedSettlements: 1 } });
    try {
      const { wallet, client, chat, signed, sent } = walletClient(10, { topUpTimeoutMs: 300, maxResends: 6 }, seed);
      expect((await chat()).status).toBe(200);
      expect(signed()).toBe(1);
      expect(seed.account(wallet.address)!.entries.filter((e) => e.type === "TOP_UP")).toHaveLength(1);
      expect(await client.lastBalanceUsd()).toBe(seed.account(wallet.address)!.usd);
      expect(sent.filter((s) => s.path.includes("/x402/balance/"))).toHaveLength(0);
    } finally {
      await seed.close();
    }
  });
});
