/**
 * The live service's top-up answers, and its balance, from a scripted service on loopback: each answer maps to
 * what a client must do with the money (see src/x402/settlement.ts), and a 402 whose cure is not a top-up is not
 * paid (src/x402/balance.ts).
 */
import { describe, expect, it } from "vitest";
import { ServiceClient } from "../../src/client.js";
import { PaymentNotCurableError, PaymentsUnavailableError, TopUpRejectedError } from "../../src/http/errors.js";
import type { PaymentEvent } from "../../src/x402/index.js";
import { EvmWallet } from "../../src/evm/index.js";
import {
  authorizationOf,
  completed,
  hostileServers,
  json,
  offer,
  paymentRequired,
  PAYEE_A,
  toppedUp,
  type HostileServer,
} from "./server.js";

const hostile = hostileServers();
const quick = { topUp: { topUpTimeoutMs: 5_000, maxResends: 1, resendDelayMs: 10 }, retry: false as const, pacing: false as const };
const isTopUp = (url: string) => url.split("?")[0]!.endsWith("/x402/top-up");
const signedTopUps = (s: HostileServer) => s.to("/x402/top-up").filter((r) => authorizationOf(r));
const ROUTE_429 = { error: "Rate limit exceeded. Please try again later." };

function balance(balanceUsd: number, extra: Record<string, unknown> = {}) {
  return {
    success: true,
    data: { walletAddress: "0x", balanceUsd, canConsume: balanceUsd >= 0.1, minimumTopUpUsd: 5, suggestedTopUpUsd: 10, ...extra },
  };
}

function walletClient(svc: HostileServer) {
  const events: PaymentEvent[] = [];
  const client = new ServiceClient({
    baseUrl: svc.url,
    wallet: EvmWallet.random(),
    payment: { allowedPayees: [PAYEE_A] },
    onPayment: (e) => events.push(e),
    ...quick,
  });
  return { client, events, chat: () => client.request("/chat/completions", { body: {} }) };
}

describe("before a second top-up the balance is read", () => {
  it("credit already at the minimum: the 402 is not paid (credit_sufficient), and the first 402 of a wallet is paid unread", async () => {
    let balanceUsd = 7;
    const svc = await hostile((req, res) => {
      if (req.url.includes("/x402/balance/")) return json(res, balance(balanceUsd));
      if (isTopUp(req.url)) return authorizationOf(req) ? toppedUp(res, 5) : json(res, { x402Version: 2, accepts: [offer()] }, {}, 402);
      paymentRequired(res, [offer()], { minimumBalanceUsd: 0.1 });
    });
    const { chat } = walletClient(svc);
    // the wallet's first top-up is paid without a read; the retry meets this lying 402 again: an error, not a
    // payment, and the balance then says why
    await expect(chat()).rejects.toMatchObject({ name: "PaymentNotCurableError", reason: "credit_sufficient" });
    expect(signedTopUps(svc)).toHaveLength(1);
    const order = svc.requests.map((r) => (authorizationOf(r) ? "paid" : r.url.includes("/x402/balance/") ? "read" : "other"));
    expect(order.indexOf("paid")).toBeLessThan(order.indexOf("read"));
    // a second one within the period: the balance says $7 is there, so paying would not cure this 402
    const err = await chat().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PaymentNotCurableError);
    expect(err).toMatchObject({ reason: "credit_sufficient", balanceUsd: 7 });
    expect(signedTopUps(svc)).toHaveLength(1);
    // under the minimum the 402 names, it is paid
    balanceUsd = 0.05;
    await chat().catch(() => undefined);
    expect(signedTopUps(svc)).toHaveLength(2);
  });

  it("the bar is the 402's own minimumBalanceUsd; a balance that cannot be read says nothing (the payment goes ahead within the caps)", async () => {
    let balanceUp = true;
    const svc = await hostile((req, res) => {
      if (req.url.includes("/x402/balance/")) return balanceUp ? json(res, balance(0.5)) : json(res, { error: "down" }, {}, 503);
      if (isTopUp(req.url)) return authorizationOf(req) ? toppedUp(res, 5) : json(res, { x402Version: 2, accepts: [offer()] }, {}, 402);
      paymentRequired(res, [offer()], { minimumBalanceUsd: 1 });
    });
    const { client, chat } = walletClient(svc);
    await client.topUp(5);
    await chat().catch(() => undefined); // $0.50 is under this service's $1: paid
    expect(signedTopUps(svc)).toHaveLength(2);
    balanceUp = false;
    await chat().catch(() => undefined);
    expect(signedTopUps(svc)).toHaveLength(3);
  });
});

describe("top-up answers", () => {
  /** A service whose signed top-ups get `answer` (the n-th signed send); chat is served once credit was added. */
  async function answering(answer: (n: number, res: Parameters<typeof json>[0]) => void) {
    let n = 0;
    let credited = false;
    return hostile((req, res) => {
      if (isTopUp(req.url)) {
        if (!authorizationOf(req)) return json(res, { x402Version: 2, accepts: [offer()] }, {}, 402);
        answer(++n, res);
        credited ||= res.statusCode === 200;
        return;
      }
      return credited ? completed(res) : paymentRequired(res, [offer()]);
    });
  }

  it("a 400 with a code is TopUpRejectedError with that code: nothing moved, nothing kept to re-send", async () => {
    const svc = await answering((_n, res) => json(res, { error: "AMOUNT_TOO_LOW", message: "Top-ups start at $5" }, {}, 400));
    const { client, chat } = walletClient(svc);
    const err = await chat().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TopUpRejectedError);
    expect(err).toMatchObject({ code: "AMOUNT_TOO_LOW", fundsMoved: false, status: 400 });
    expect((await client.fetch.paymentController())!.hasPendingPayment).toBe(false);
    expect(signedTopUps(svc)).toHaveLength(1);
  });

  it("503 X402_NOT_CONFIGURED to a payment sent for the first time: PaymentsUnavailableError, and the payment was not taken", async () => {
    const svc = await answering((_n, res) => json(res, { error: "X402_NOT_CONFIGURED", message: "payments are off" }, {}, 503));
    const { client, chat } = walletClient(svc);
    await expect(chat()).rejects.toBeInstanceOf(PaymentsUnavailableError);
    expect((await client.fetch.paymentController())!.hasPendingPayment).toBe(false);
    expect(signedTopUps(svc)).toHaveLength(1); // answered at once, not re-sent
  });

  it("the route's 429 (no rate-limit headers) on the requirements and on the payment is waited out: one signature, served", async () => {
    let asks = 0;
    let sends = 0;
    let credited = false;
    const svc = await hostile((req, res) => {
      if (isTopUp(req.url)) {
        if (!authorizationOf(req))
          return ++asks === 1 ? json(res, ROUTE_429, {}, 429) : json(res, { x402Version: 2, accepts: [offer()] }, {}, 402);
        if (++sends === 1) return json(res, ROUTE_429, {}, 429);
        credited = true;
        return toppedUp(res, 5);
      }
      return credited ? completed(res) : paymentRequired(res, [offer()]);
    });
    const { chat, events } = walletClient(svc);
    expect((await chat()).status).toBe(200);
    expect(new Set(signedTopUps(svc).map((r) => authorizationOf(r)!.nonce)).size).toBe(1);
    expect(signedTopUps(svc)).toHaveLength(2);
    expect(events.filter((e) => e.type === "payment.failed")).toEqual([]);
  });
});
