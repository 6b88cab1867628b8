/**
 * Reconciling a payment whose answers were all lost reads the wallet's transactions. In a fleet every top-up is
 * the same amount, so another top-up made before this payment was signed (another process's, settled before the
 * lease was taken) must never be taken for this one: that would clear a payment that can still settle, and the
 * next top-up would sign a second one beside it.
 */
import { describe, expect, it } from "vitest";
import { PaymentFailedError } from "../../src/http/errors.js";
import { EvmWallet } from "../../src/evm/index.js";
import { withX402 } from "../../src/x402/with-x402.js";
import { authorizationOf, hostileServers, json, offer, paymentRequired } from "./server.js";

const hostile = hostileServers();

/** A service whose top-ups never answer but 503, and whose transactions show one $5 top-up made `agoMs` ago. */
async function lostAnswers(agoMs: number) {
  return hostile((req, res) => {
    const path = req.url.split("?")[0]!;
    if (path.endsWith("/x402/top-up")) {
      if (!authorizationOf(req)) return json(res, { x402Version: 2, accepts: [offer()] }, {}, 402);
      return json(res, { error: "Service temporarily unavailable" }, {}, 503);
    }
    if (path.includes("/x402/transactions/")) {
      const createdAt = new Date(Date.now() - agoMs).toISOString();
      return json(res, { success: true, data: { transactions: [{ type: "TOP_UP", amount: 5, createdAt }] } });
    }
    paymentRequired(res, [offer()]);
  });
}

describe("reconcile: only a top-up made after this payment was signed is taken for it", () => {
  it("a $5 top-up dated 30 s before the signature is another payment: the outcome stays unknown, nothing is reported settled", async () => {
    const svc = await lostAnswers(30_000);
    const events: string[] = [];
    const f = withX402(fetch, {
      wallet: EvmWallet.random(),
      baseUrl: svc.url,
      onPayment: (e) => events.push(e.type),
      maxResends: 1,
      resendDelayMs: 5,
    });
    const err = await f(`${svc.url}/chat/completions`, { method: "POST", body: "{}" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PaymentFailedError);
    expect((err as Error).message).toMatch(/outcome unknown/);
    expect(events).not.toContain("payment.settled");
    // the transactions were read, and did not decide it
    expect(svc.requests.filter((r) => r.url.includes("/x402/transactions/")).length).toBeGreaterThan(0);
  });

  it("a $5 top-up dated just after the signature is this payment: settled, reconciled", async () => {
    const svc = await lostAnswers(-1_000);
    const events: string[] = [];
    const f = withX402(fetch, {
      wallet: EvmWallet.random(),
      baseUrl: svc.url,
      onPayment: (e) => events.push(e.type),
      maxResends: 1,
      resendDelayMs: 5,
    });
    // the retry still meets a 402 (this scripted service never credits): what matters is how the payment was read
    await f(`${svc.url}/chat/completions`, { method: "POST", body: "{}" }).catch(() => undefined);
    expect(events).toContain("payment.settled");
    expect(svc.to("/x402/top-up").filter((r) => authorizationOf(r))).toHaveLength(2);
  });
});

describe("a pending payment read from the store", () => {
  it("is re-sent to this process's own top-up URL, never to one written in the store", async () => {
    const { MemoryStore } = await import("../../src/store/memory.js");
    const { walletScopeKey } = await import("../../src/x402/policy.js");
    const foreign = await hostile((_req, res) => json(res, { success: true, data: { amountCredited: 5 } }));
    const svc = await hostile((req, res) => {
      if (req.url.split("?")[0]!.endsWith("/x402/top-up")) return json(res, { success: true, data: { amountCredited: 5, newBalance: 5 } });
      json(res, { choices: [] });
    });
    const wallet = EvmWallet.random();
    const store = new MemoryStore();
    const key = walletScopeKey("eip155", wallet.address);
    // what a process that died mid-payment left behind, its URL rewritten by someone who can write to the store
    const lease = await store.acquireTopUpLease(key, 60_000);
    const data = JSON.stringify({
      signed: { payload: {}, headerName: "PAYMENT-SIGNATURE", header: "c2lnbmVk" },
      decision: { amountUsd: 5, network: "eip155:8453", asset: "0x", payTo: "0x", form: "v2", amountAtomic: { bigint: "5000000" } },
      topUpUrl: `${foreign.url}/x402/top-up`,
      signedAt: Date.now(),
    });
    await store.putPendingPayment(key, lease.token!, { id: "left-behind", expiresAt: Date.now() + 60_000, data });
    await store.endTopUp(key, lease.token!, { settled: false });

    const f = withX402(fetch, { wallet, baseUrl: svc.url, store });
    const { X402PaymentController } = await import("../../src/x402/layer.js");
    const controller = new X402PaymentController({ wallet, baseUrl: svc.url, store });
    const result = await controller.explicitTopUp(f, `${svc.url}/x402/top-up`, 5);
    expect(result.amountUsd).toBe(5);
    expect(svc.to("/x402/top-up").map((r) => r.headers["payment-signature"])).toEqual(["c2lnbmVk"]);
    expect(foreign.requests).toHaveLength(0);
  });
});

describe("a top-up endpoint that never answers", () => {
  it("ends the request (and frees the wallet's lease) after topUpTimeoutMs, under a plain fetch too", async () => {
    const svc = await hostile((req, res) => {
      if (req.url.split("?")[0]!.endsWith("/x402/top-up")) return; // requirements never come
      paymentRequired(res, [offer()]);
    });
    const f = withX402(fetch, { wallet: EvmWallet.random(), baseUrl: svc.url, topUpTimeoutMs: 300 });
    const outcome = await Promise.race([
      f(`${svc.url}/chat/completions`, { method: "POST", body: "{}" }).then(
        () => "answered",
        (e: Error) => e.name,
      ),
      new Promise((r) => setTimeout(() => r("still waiting"), 5_000)),
    ]);
    expect(outcome).toMatch(/Timeout|Abort/);
  });
});

describe("a wallet at its period cap", () => {
  it("refuses the next top-up without asking for requirements (each ask is a 402 the abuse block counts)", async () => {
    const { PaymentPolicyError } = await import("../../src/http/errors.js");
    const { X402PaymentController } = await import("../../src/x402/layer.js");
    const { toppedUp } = await import("./server.js");
    const svc = await hostile((req, res) => {
      if (!req.url.split("?")[0]!.endsWith("/x402/top-up")) return json(res, {});
      return authorizationOf(req) ? toppedUp(res, 5) : json(res, { x402Version: 2, accepts: [offer()] }, {}, 402);
    });
    const wallet = EvmWallet.random();
    const controller = new X402PaymentController({ wallet, baseUrl: svc.url, policy: { maxPerPeriodUsd: 10 } });
    const f = withX402(fetch, controller.options);
    for (let i = 0; i < 2; i++) expect((await controller.explicitTopUp(f, `${svc.url}/x402/top-up`, 5)).amountUsd).toBe(5);
    const asks = () => svc.to("/x402/top-up").filter((r) => !authorizationOf(r)).length;
    expect(asks()).toBe(2);
    const err = await controller.explicitTopUp(f, `${svc.url}/x402/top-up`, 5).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PaymentPolicyError);
    expect((err as InstanceType<typeof PaymentPolicyError>).rule).toBe("maxPerPeriod");
    expect(asks()).toBe(2); // nothing sent for the refused one
  });

  it("refuses an explicit top-up over the cap with no requirements ever seen (another process spent it): nothing asked", async () => {
    const { PaymentPolicyError } = await import("../../src/http/errors.js");
    const { X402PaymentController } = await import("../../src/x402/layer.js");
    const { MemoryStore } = await import("../../src/store/memory.js");
    const { walletScopeKey } = await import("../../src/x402/policy.js");
    const svc = await hostile((_req, res) => json(res, { x402Version: 2, accepts: [offer()] }, {}, 402));
    const wallet = EvmWallet.random();
    // the fleet's store, where another process already topped this wallet up to its $10 cap
    const store = new MemoryStore();
    const day = 24 * 60 * 60_000;
    const other = await store.reserveSpend({
      scopes: [{ key: walletScopeKey("eip155", wallet.address), capUsd: 10, periodMs: day, pin: false }],
      candidates: [{ network: "eip155:8453", payTo: "0x000000000000000000000000000000000000dead", amountUsd: 10 }],
      now: Date.now(),
      dryRun: false,
    });
    expect(other.ok).toBe(true);
    await store.commitSpend((other as { reservation: string }).reservation);
    const controller = new X402PaymentController({ wallet, baseUrl: svc.url, policy: { maxPerPeriodUsd: 10 }, store });
    const err = await controller.explicitTopUp(withX402(fetch, controller.options), `${svc.url}/x402/top-up`, 5).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PaymentPolicyError);
    expect((err as InstanceType<typeof PaymentPolicyError>).rule).toBe("maxPerPeriod");
    expect(svc.to("/x402/top-up")).toHaveLength(0); // no ask: this process had seen no requirements, the store said enough
  });
});
