/**
 * The emulator's wallet routes as the live service's x402 guide describes them (its default `mode: "live"`), and
 * the seed contract's behaviour still there with `mode: "seed"` or each behaviour's own option:
 * - no `X-Balance-Remaining` (live) / on wallet answers (seed);
 * - `/x402/balance` and `/x402/transactions`: no sign-in is a 402 with nothing to pay, a bad one a generic 401;
 * - the x402 routes' own limits: a 429 with the guide's body and no rate-limit header;
 * - wallets linked to an account with staking-token credit: billed first, not in the wallet's transactions, a
 *   shortfall there refused whatever the wallet's own credit;
 * - the top-up's answers: 409 while settling, 504, 402 `SETTLEMENT_FAILED`, 503, the live 400 codes.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { startEmulator, type Emulator, type EmulatorOptions } from "langchain-service-emulator";
import type { X402EmulatorOptions } from "../../packages/langchain-service-emulator/src/x402/index.js";
import { createSiwxHeader } from "../../src/x402/siwx.js";
import { signPayment, type X402Wallet } from "../../src/x402/index.js";
import { EvmWallet } from "../../src/evm/index.js";
import { probeRoute, testClock } from "../emulator/helpers.js";
import { payer, startPaidEmulator } from "../x402/helpers.js";

const started: Emulator[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((e) => e.close()));
});

/** An emulator without a chain (wallets get $1 at first sight) and the probe inference route. */
async function start(options: EmulatorOptions = {}, x402: X402EmulatorOptions = {}): Promise<Emulator> {
  const emu = await startEmulator({
    routes: [probeRoute],
    walletStartingUsd: 1,
    ...options,
    x402: { solana: false, ...x402 } as Record<string, unknown>,
  });
  started.push(emu);
  return emu;
}

async function signedGet(emu: Emulator, wallet: X402Wallet, path: string): Promise<Response> {
  const url = `${emu.url}${path}`;
  return fetch(url, { headers: { "SIGN-IN-WITH-X": await createSiwxHeader(wallet, url) } });
}

async function probe(emu: Emulator, wallet: X402Wallet, usd = 0.001): Promise<Response> {
  const url = `${emu.url}/probe/inference`;
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "SIGN-IN-WITH-X": await createSiwxHeader(wallet, url) },
    body: JSON.stringify({ model: "emu-s", usd }),
  });
}

const rateLimitHeaders = (res: Response) => [...res.headers.keys()].filter((h) => h.startsWith("x-ratelimit") || h === "retry-after");

describe("X-Balance-Remaining", () => {
  it("live: never sent; seed: on a wallet's served answers; the option wins over the mode", async () => {
    const wallet = EvmWallet.random();
    const live = await start();
    const served = await probe(live, wallet);
    expect(served.status).toBe(200);
    expect(served.headers.get("x-balance-remaining")).toBeNull();
    const seed = await start({ mode: "seed" });
    expect((await probe(seed, wallet)).headers.get("x-balance-remaining")).toBe("0.999000");
    expect((await probe(await start({}, { balanceHeader: true }), wallet)).headers.get("x-balance-remaining")).toBe("0.999000");
    expect((await probe(await start({ mode: "seed" }, { balanceHeader: false }), wallet)).headers.get("x-balance-remaining")).toBeNull();
  });
});

describe("the read routes' sign-in", () => {
  it("live: none is the discovery 402 with nothing to pay; a bad one the generic 401. seed: 401 to both", async () => {
    const wallet = EvmWallet.random();
    const live = await start();
    for (const path of [`/x402/balance/${wallet.address}`, `/x402/transactions/${wallet.address}`]) {
      const none = await fetch(`${live.url}${path}`);
      expect(none.status).toBe(402);
      const body = (await none.json()) as Record<string, any>;
      expect(body).toMatchObject({ x402Version: 2, accepts: [] });
      expect(body.extensions["sign-in-with-x"].info.domain).toBe(new URL(live.url).host);
      expect(JSON.parse(Buffer.from(none.headers.get("payment-required")!, "base64").toString()).accepts).toEqual([]);
      const stale = await createSiwxHeader(wallet, `${live.url}${path}`, { now: Date.now() - 6 * 60_000, ttlMs: 60 * 60_000 });
      const bad = await fetch(`${live.url}${path}`, { headers: { "SIGN-IN-WITH-X": stale } });
      expect(bad.status).toBe(401);
      expect(await bad.json()).toEqual({ error: "Invalid Sign-in-with-x signature" });
    }
    // inference routes still name the reason, with the live code for it
    const url = `${live.url}/probe/inference`;
    const stale = await createSiwxHeader(wallet, url, { now: Date.now() - 6 * 60_000, ttlMs: 60 * 60_000 });
    const inference = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "SIGN-IN-WITH-X": stale },
      body: "{}",
    });
    expect(await inference.json()).toMatchObject({ code: "X402_SIGN_IN_EXPIRED", details: { reason: "stale" } });

    const seed = await start({ mode: "seed" });
    expect((await fetch(`${seed.url}/x402/balance/${wallet.address}`)).status).toBe(401);
    const stale2 = await createSiwxHeader(wallet, seed.url, { now: Date.now() - 6 * 60_000, ttlMs: 60 * 60_000 });
    const coded = await fetch(`${seed.url}/x402/balance/${wallet.address}`, { headers: { "SIGN-IN-WITH-X": stale2 } });
    expect(await coded.json()).toMatchObject({ code: "X402_INVALID_SIGN_IN", details: { reason: "stale" } });
    expect((await signedGet(seed, wallet, `/x402/balance/${wallet.address}`)).status).toBe(200);
  });
});

describe("the x402 routes' own limits", () => {
  it("live: balance and transactions per wallet, top-up per IP; the guide's 429, no rate-limit header; a rolling window", async () => {
    const clock = testClock(); // the window rolls on when the test moves the emulator's clock on
    const emu = await start({ now: clock.now }, { routeLimits: { balance: 3, transactions: 2, topUp: 2, windowMs: 600 } });
    const [a, b] = [EvmWallet.random(), EvmWallet.random()];
    const statuses = async (wallet: X402Wallet, path: string, n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await signedGet(emu, wallet, path)).status);
      return out;
    };
    expect(await statuses(a, `/x402/balance/${a.address}`, 4)).toEqual([200, 200, 200, 429]);
    expect(await statuses(a, `/x402/transactions/${a.address}`, 3)).toEqual([200, 200, 429]);
    // another wallet has windows of its own
    expect(await statuses(b, `/x402/balance/${b.address}`, 3)).toEqual([200, 200, 200]);
    const limited = await signedGet(emu, a, `/x402/balance/${a.address}`);
    expect(limited.status).toBe(429);
    expect(await limited.json()).toEqual({ error: "Rate limit exceeded. Please try again later." });
    expect(rateLimitHeaders(limited)).toEqual([]);
    const topUps: number[] = [];
    for (let i = 0; i < 3; i++) topUps.push((await fetch(`${emu.url}/x402/top-up`, { method: "POST" })).status);
    expect(topUps).toEqual([402, 402, 429]);
    // once the window has rolled past the first requests, the route answers again
    clock.advance(650);
    expect((await signedGet(emu, a, `/x402/balance/${a.address}`)).status).toBe(200);
  });

  it("live defaults: top-up 10 a minute per IP; seed: no limit", async () => {
    const live = await start();
    const liveStatuses: number[] = [];
    for (let i = 0; i < 11; i++) liveStatuses.push((await fetch(`${live.url}/x402/top-up`, { method: "POST" })).status);
    expect(liveStatuses.filter((s) => s === 429)).toHaveLength(1);
    expect(liveStatuses.at(-1)).toBe(429);
    const seed = await start({ mode: "seed" });
    for (let i = 0; i < 12; i++) expect((await fetch(`${seed.url}/x402/top-up`, { method: "POST" })).status).toBe(402);
    const wallet = EvmWallet.random();
    for (let i = 0; i < 31; i++) expect((await signedGet(seed, wallet, `/x402/balance/${wallet.address}`)).status).toBe(200);
  });
});

describe("wallets linked to an account with staking-token credit", () => {
  it("are billed to it first, off the wallet's own ledger; the balance shows it; a shortfall there is a 402 whatever the wallet's credit", async () => {
    const wallet = EvmWallet.random();
    const emu = await start({}, { linkedWallets: { [wallet.address]: 0.3 } });
    const balance = async () =>
      ((await (await signedGet(emu, wallet, `/x402/balance/${wallet.address}`)).json()) as { data: Record<string, unknown> }).data;
    expect(await balance()).toMatchObject({ balanceUsd: 1, canConsume: true, diemBalanceUsd: 0.3 });
    // served from DIEM: the wallet's credit and its transactions are untouched
    expect((await probe(emu, wallet, 0.15)).status).toBe(200);
    expect(emu.account(wallet.address)!.usd).toBe(1);
    expect(emu.account(wallet.address)!.entries).toEqual([]);
    const history = (await (await signedGet(emu, wallet, `/x402/transactions/${wallet.address}`)).json()) as {
      data: { transactions: unknown[] };
    };
    expect(history.data.transactions).toEqual([]);
    expect(await balance()).toMatchObject({ balanceUsd: 1, diemBalanceUsd: 0.15 });
    // DIEM left, but under the $0.10 a request needs: refused, although the wallet has $1
    expect((await probe(emu, wallet, 0.1)).status).toBe(200);
    const refused = await probe(emu, wallet);
    expect(refused.status).toBe(402);
    expect(await refused.json()).toMatchObject({ code: "PAYMENT_REQUIRED", currentBalanceUsd: 1 });
    // DIEM used up: the wallet's own credit pays again, and DIEM no longer shows
    emu.ledger.linkWallet(wallet.address, { diemUsd: 0 });
    expect((await probe(emu, wallet)).status).toBe(200);
    expect(emu.account(wallet.address)!.usd).toBe(0.999);
    const last = await balance();
    expect(last).toMatchObject({ balanceUsd: 0.999, canConsume: true });
    expect(last.diemBalanceUsd).toBeUndefined();
  });

  it("DIEM available lets a wallet without credit consume; only EVM wallets can be linked", async () => {
    const wallet = EvmWallet.random();
    const emu = await start({ walletStartingUsd: 0 }, { linkedWallets: { [wallet.address]: 2 } });
    expect((await probe(emu, wallet)).status).toBe(200);
    const other = EvmWallet.random();
    expect((await probe(emu, other)).status).toBe(402);
    expect(() => emu.ledger.linkWallet("5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", { diemUsd: 1 })).toThrow(/EVM/);
  });
});

describe("top-up answers", () => {
  it("409 while settling (live) or a wait (seed), 504 that lands or not, 402 SETTLEMENT_FAILED, 503, the live 400 codes", async () => {
    const x402: X402EmulatorOptions = {};
    const emu = await startPaidEmulator({ x402: x402 as Record<string, unknown> });
    started.push(emu);
    const wallet = payer(emu, 1);
    const topUpUrl = `${emu.url}/x402/top-up`;
    const offer = ((await (await fetch(topUpUrl, { method: "POST" })).json()) as { accepts: Record<string, any>[] }).accepts.find(
      (a) => a.network === "eip155:8453",
    )!;
    const sign = async (over: Record<string, unknown> = {}) => {
      const requirement = { ...offer, ...over } as any;
      const decision = {
        requirement,
        form: "v2" as const,
        offered: offer,
        amountUsd: Number(requirement.amount) / 1e6,
        amountAtomic: BigInt(requirement.amount),
        minimumUsd: 5,
        decimals: 6,
        network: requirement.network,
        asset: requirement.asset,
        payTo: requirement.payTo,
      };
      return (await signPayment(wallet, decision)).header;
    };
    const send = async (header: string) => {
      const res = await fetch(topUpUrl, { method: "POST", headers: { "PAYMENT-SIGNATURE": header } });
      return { status: res.status, error: ((await res.json()) as { error?: string }).error };
    };
    const credited = () => emu.account(wallet.address)?.entries.filter((e) => e.type === "TOP_UP").length ?? 0;

    // live: a re-send while the first still settles is told so at once; after, it is "already used"
    Object.assign(x402, { settleDelayMs: 400, delayedSettlements: 1 });
    const slow = await sign();
    const first = send(slow);
    await new Promise((r) => setTimeout(r, 100));
    expect(await send(slow)).toEqual({ status: 409, error: "PAYMENT_IN_PROGRESS" });
    expect((await first).status).toBe(200);
    // credited: live, 409 too ("already processed"); the seed's "already used" 400 with resendAfterSettled: "400"
    expect(await send(slow)).toEqual({ status: 409, error: "PAYMENT_IN_PROGRESS" });
    x402.resendAfterSettled = "400";
    expect(await send(slow)).toEqual({ status: 400, error: "PAYMENT_VERIFICATION_FAILED" });
    delete x402.resendAfterSettled;
    // the seed's way: the re-send waits for the settlement
    Object.assign(x402, { settleDelayMs: 300, delayedSettlements: 2, resendWhileSettling: "wait", resendAfterSettled: "400" });
    const waited = await sign();
    const firstWaited = send(waited);
    await new Promise((r) => setTimeout(r, 100));
    expect(await send(waited)).toEqual({ status: 400, error: "PAYMENT_VERIFICATION_FAILED" });
    expect((await firstWaited).status).toBe(200);
    delete x402.resendWhileSettling;
    delete x402.resendAfterSettled;
    delete x402.settleDelayMs;
    expect(credited()).toBe(2);

    // 504: it lands anyway (a re-send is then "already processed", live 409), or it never does (a re-send settles it)
    x402.settlementTimeouts = 2;
    const lands = await sign();
    expect(await send(lands)).toEqual({ status: 504, error: "SETTLEMENT_TIMEOUT" });
    // it lands in the background: waited for, not guessed (a loaded machine settles later than an idle one)
    await vi.waitFor(() => expect(credited()).toBe(3), { timeout: 10_000, interval: 50 });
    expect((await send(lands)).status).toBe(409);
    x402.settlementTimeoutLands = false;
    const lost = await sign();
    expect(await send(lost)).toEqual({ status: 504, error: "SETTLEMENT_TIMEOUT" });
    await new Promise((r) => setTimeout(r, 300));
    expect(credited()).toBe(3);
    expect((await send(lost)).status).toBe(200);
    expect(credited()).toBe(4);
    delete x402.settlementTimeouts;
    delete x402.settlementTimeoutLands;

    // 402 SETTLEMENT_FAILED: nothing moved
    x402.settlementFailures = 1;
    expect(await send(await sign())).toEqual({ status: 402, error: "SETTLEMENT_FAILED" });
    expect(credited()).toBe(4);
    delete x402.settlementFailures;

    // 400 codes: live names each; the seed one code for all
    // $4 signed while `accepted` names the $5 offer
    expect(await send(await sign({ amount: "4000000" }))).toMatchObject({ status: 400, error: "INVALID_AMOUNT" });
    expect(
      (await fetch(topUpUrl, { method: "POST", headers: { "X-402-Payment": "not base64 json" } }).then((r) => r.json())) as object,
    ).toMatchObject({ error: "INVALID_PAYMENT_FORMAT" });
    const tooLow = await signPayment(wallet, {
      requirement: { ...offer, amount: "4000000" } as any,
      form: "v1",
      offered: offer,
      amountUsd: 4,
      amountAtomic: 4_000_000n,
      minimumUsd: 5,
      decimals: 6,
      network: offer.network,
      asset: offer.asset,
      payTo: offer.payTo,
    });
    expect(await send2(topUpUrl, tooLow.header)).toMatchObject({ status: 400, error: "AMOUNT_TOO_LOW" });
    x402.refusalCodes = "seed";
    expect(await send2(topUpUrl, tooLow.header)).toMatchObject({ status: 400, error: "X402_INVALID_PAYMENT" });
    delete x402.refusalCodes;

    // 503: payments off, the requirements too
    x402.notConfigured = true;
    expect((await fetch(topUpUrl, { method: "POST" })).status).toBe(503);
    expect(await send(await sign())).toEqual({ status: 503, error: "X402_NOT_CONFIGURED" });
    delete x402.notConfigured;
    expect(credited()).toBe(4);
  });
});

async function send2(topUpUrl: string, header: string) {
  const res = await fetch(topUpUrl, { method: "POST", headers: { "X-402-Payment": header } });
  return { status: res.status, error: ((await res.json()) as { error?: string }).error };
}
