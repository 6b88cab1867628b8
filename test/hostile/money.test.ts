/**
 * Money safety against a hostile service: a loopback server scripted per test lies in its 402s (payees that
 * change, validity for millennia, 402s from another host, false credit, "already used" after a lost answer).
 * The wallet's owner's policy holds whatever it says.
 */
import "@langchain/core/callbacks/dispatch"; // async context present before any run, as in an app using LangGraph
import { RunnableLambda } from "@langchain/core/runnables";
import { Wallet as EthersWallet } from "ethers";
import { describe, expect, it } from "vitest";
import { ChatService } from "../../src/chat/chat-model.js";
import { ServiceClient } from "../../src/client.js";
import { PaymentFailedError, PaymentPolicyError, PaymentRequiredError } from "../../src/http/errors.js";
import { createServiceFetch } from "../../src/stack.js";
import { PaymentPolicy, PaymentSpendHandler, withX402, type PaymentEvent } from "../../src/x402/index.js";
import { EvmWallet } from "../../src/evm/index.js";
import {
  PAYEE_A,
  PAYEE_B,
  authorizationOf,
  completed,
  json,
  offer,
  paymentRequired,
  hostileServers,
  toppedUp,
  type HostileServer,
} from "./server.js";

const hostile = hostileServers();

const isTopUp = (url: string) => url.split("?")[0]!.endsWith("/x402/top-up");
const signedTopUps = (s: HostileServer) => s.to("/x402/top-up").filter((r) => authorizationOf(r));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A fresh private key: `new EvmWallet(key)` twice is one wallet address in two objects. */
const freshKey = () => EthersWallet.createRandom().privateKey;
const quick = { topUp: { topUpTimeoutMs: 400, maxResends: 1, resendDelayMs: 10 }, retry: false as const, pacing: false as const };

/** Always 402 on chat (requirements in the header, as the service does), a top-up always "succeeds". */
function alwaysPaymentRequired(accepts = [offer()]) {
  return (req: { url: string }, res: Parameters<typeof json>[0]) => {
    if (isTopUp(req.url)) return authorizationOf(req as never) ? toppedUp(res, 5) : json(res, { x402Version: 2, accepts }, {}, 402);
    paymentRequired(res, accepts);
  };
}

describe("1. caps belong to the wallet, not to an object", () => {
  it("eight ChatServices built from the same options on one wallet sign at most the $10 period cap", async () => {
    const svc = await hostile(alwaysPaymentRequired());
    const key = freshKey();
    const payment = { amountUsd: 5, maxPerPeriodUsd: 10, allowedPayees: [PAYEE_A] };
    const outcomes: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      const model = new ChatService({ model: "m", baseUrl: svc.url, wallet: new EvmWallet(key), payment, ...quick });
      outcomes.push(await model.invoke("hi").catch((e: unknown) => e));
    }
    expect(signedTopUps(svc)).toHaveLength(2);
    const refused = outcomes.filter((e) => e instanceof PaymentPolicyError);
    expect(refused).toHaveLength(6);
    expect(refused.every((e) => (e as PaymentPolicyError).rule === "maxPerPeriod")).toBe(true);
  });

  it("a ChatService and a ServiceClient on one wallet share one budget (explicit top-ups included)", async () => {
    const svc = await hostile(alwaysPaymentRequired());
    const key = freshKey();
    const payment = { amountUsd: 5, maxPerPeriodUsd: 10, allowedPayees: [PAYEE_A] };
    const model = new ChatService({ model: "m", baseUrl: svc.url, wallet: new EvmWallet(key), payment, ...quick });
    const client = new ServiceClient({ baseUrl: svc.url, wallet: new EvmWallet(key), payment: new PaymentPolicy(payment), ...quick });
    await model.invoke("hi").catch(() => undefined); // pays $5, then the lying 402 again
    expect((await client.topUp(5)).amountUsd).toBe(5);
    const err = await client.topUp(5).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PaymentPolicyError);
    expect((err as PaymentPolicyError).rule).toBe("maxPerPeriod");
    expect(signedTopUps(svc)).toHaveLength(2);
  });

  it("withX402 twice on one wallet address: one budget", async () => {
    const svc = await hostile(alwaysPaymentRequired());
    const key = freshKey();
    const options = { policy: { amountUsd: 5, maxPerPeriodUsd: 5, allowedPayees: [PAYEE_A] }, baseUrl: svc.url, ...quick.topUp };
    const f1 = withX402(fetch, { wallet: new EvmWallet(key), ...options });
    const f2 = withX402(fetch, { wallet: new EvmWallet(key), ...options });
    await f1(`${svc.url}/chat/completions`, { method: "POST", body: "{}" }).catch(() => undefined);
    const err = await f2(`${svc.url}/chat/completions`, { method: "POST", body: "{}" }).catch((e: unknown) => e);
    expect((err as PaymentPolicyError).rule).toBe("maxPerPeriod");
    expect(signedTopUps(svc)).toHaveLength(1);
  });

  it("one policy object shared by two wallets stays one budget", async () => {
    const svc = await hostile(alwaysPaymentRequired());
    const policy = new PaymentPolicy({ amountUsd: 5, maxPerPeriodUsd: 5, allowedPayees: [PAYEE_A] });
    const a = new ServiceClient({ baseUrl: svc.url, wallet: EvmWallet.random(), payment: policy, ...quick });
    const b = new ServiceClient({ baseUrl: svc.url, wallet: EvmWallet.random(), payment: policy, ...quick });
    await a.topUp(5);
    expect(((await b.topUp(5).catch((e: unknown) => e)) as PaymentPolicyError).rule).toBe("maxPerPeriod");
    expect(signedTopUps(svc)).toHaveLength(1);
    expect(await policy.spentUsd()).toBe(5);
  });
});

describe("2. the payee pin is atomic", () => {
  /** Holds every 402 until `n` chat requests arrived, so the top-ups race; a slow run callback widens any gap. */
  function racing(payee: string, barrier: { arrived: number; release?: () => void; ready: Promise<void> }, n: number) {
    return async (req: { url: string }, res: Parameters<typeof json>[0]) => {
      if (isTopUp(req.url))
        return authorizationOf(req as never)
          ? toppedUp(res, 5)
          : json(res, { x402Version: 2, accepts: [offer({ payTo: payee })] }, {}, 402);
      if (++barrier.arrived >= n) barrier.release!();
      await barrier.ready;
      paymentRequired(res, [offer({ payTo: payee })]);
    };
  }
  const barrier = () => {
    const b: { arrived: number; release?: () => void; ready: Promise<void> } = { arrived: 0, ready: Promise.resolve() };
    b.ready = new Promise<void>((r) => (b.release = r));
    return b;
  };
  // awaited (not run in the background), as LangSmith tracers or a serverless app configure it
  const slowHandler = { awaitHandlers: true, handleCustomEvent: () => sleep(150) };

  it("two wallets sharing one policy, first top-ups naming payees A and B at once: exactly one is signed", async () => {
    const gate = barrier();
    const svcA = await hostile(racing(PAYEE_A, gate, 2));
    const svcB = await hostile(racing(PAYEE_B, gate, 2));
    const policy = new PaymentPolicy({ amountUsd: 5 }); // no allowedPayees: trust on first use
    const run = (url: string) =>
      RunnableLambda.from(async (x: string) =>
        new ChatService({ model: "m", baseUrl: url, wallet: EvmWallet.random(), payment: policy, ...quick }).invoke(x),
      );
    const results = await Promise.allSettled([
      run(svcA.url).invoke("hi", { callbacks: [slowHandler] }),
      run(svcB.url).invoke("hi", { callbacks: [slowHandler] }),
    ]);
    expect(signedTopUps(svcA).length + signedTopUps(svcB).length).toBe(1);
    const payeeRefusals = results.filter(
      (r) => r.status === "rejected" && r.reason instanceof PaymentPolicyError && r.reason.rule === "payee",
    );
    expect(payeeRefusals).toHaveLength(1);
  });

  it("one wallet in two objects, concurrent explicit top-ups against payees A and B: exactly one is signed", async () => {
    const svcA = await hostile(alwaysPaymentRequired([offer({ payTo: PAYEE_A })]));
    const svcB = await hostile(alwaysPaymentRequired([offer({ payTo: PAYEE_B })]));
    const key = freshKey();
    const a = new ServiceClient({ baseUrl: svcA.url, wallet: new EvmWallet(key), payment: { amountUsd: 5 }, ...quick });
    const b = new ServiceClient({ baseUrl: svcB.url, wallet: new EvmWallet(key), payment: { amountUsd: 5 }, ...quick });
    const results = await Promise.allSettled([a.topUp(5), b.topUp(5)]);
    expect(signedTopUps(svcA).length + signedTopUps(svcB).length).toBe(1);
    const refusal = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(refusal.reason).toBeInstanceOf(PaymentPolicyError);
    expect(refusal.reason.rule).toBe("payee");
  });
});

describe("3. the service does not choose how long a signature lives", () => {
  it("maxTimeoutSeconds 1e12 is clamped to maxValiditySeconds (default one hour) in the signed validBefore", async () => {
    const svc = await hostile(alwaysPaymentRequired([offer({ maxTimeoutSeconds: 1e12 })]));
    const client = new ServiceClient({ baseUrl: svc.url, wallet: EvmWallet.random(), payment: { allowedPayees: [PAYEE_A] }, ...quick });
    const before = Math.floor(Date.now() / 1000);
    await client.topUp(5);
    const validBefore = Number(authorizationOf(signedTopUps(svc)[0]!)!.validBefore);
    expect(validBefore).toBeGreaterThanOrEqual(before + 3600);
    expect(validBefore).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 3600);

    const strict = await hostile(alwaysPaymentRequired([offer({ maxTimeoutSeconds: 1e12 })]));
    const c2 = new ServiceClient({
      baseUrl: strict.url,
      wallet: EvmWallet.random(),
      payment: { allowedPayees: [PAYEE_A], maxValiditySeconds: 120 },
      ...quick,
    });
    await c2.topUp(5);
    expect(Number(authorizationOf(signedTopUps(strict)[0]!)!.validBefore)).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 120);
  });

  for (const bad of [0, -5]) {
    it(`maxTimeoutSeconds ${bad} is refused before signing and takes no budget`, async () => {
      const svc = await hostile(alwaysPaymentRequired([offer({ maxTimeoutSeconds: bad })]));
      const policy = new PaymentPolicy({ allowedPayees: [PAYEE_A] });
      const wallet = EvmWallet.random();
      const client = new ServiceClient({ baseUrl: svc.url, wallet, payment: policy, ...quick });
      const err = await client.topUp(5).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PaymentPolicyError);
      expect((err as PaymentPolicyError).rule).toBe("validity");
      expect(signedTopUps(svc)).toHaveLength(0);
      expect(await policy.spentUsd()).toBe(0);
      expect(await policy.spentUsd({ address: wallet.address })).toBe(0);
    });
  }
});

describe("4. only the service's own 402s are paid", () => {
  it("a 402 from another host through the same stack is handed back unpaid and pins nothing", async () => {
    const svc = await hostile((_req, res) => completed(res));
    const foreign = await hostile(alwaysPaymentRequired([offer({ payTo: PAYEE_B })]));
    const policy = new PaymentPolicy({ amountUsd: 5 });
    const client = new ServiceClient({ baseUrl: svc.url, wallet: EvmWallet.random(), payment: policy, ...quick });
    const err = await client.request(`${foreign.url}/chat/completions`, { body: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PaymentRequiredError);
    const f = withX402(fetch, { wallet: EvmWallet.random(), policy, baseUrl: svc.url });
    expect((await f(`${foreign.url}/chat/completions`, { method: "POST", body: "{}" })).status).toBe(402);
    expect(foreign.to("/x402/top-up")).toHaveLength(0); // requirements are never read from another origin
    expect(svc.to("/x402/top-up")).toHaveLength(0);
    expect(await policy.spentUsd()).toBe(0);
    // the pin is still free: the service's own payee is accepted later
    const own = await hostile(alwaysPaymentRequired([offer({ payTo: PAYEE_A })]));
    const c2 = new ServiceClient({ baseUrl: own.url, wallet: EvmWallet.random(), payment: policy, ...quick });
    expect((await c2.topUp(5)).amountUsd).toBe(5);
  });

  it("a 402 at the end of a redirect (a fetch that follows redirects itself) is not paid", async () => {
    const foreign = await hostile(alwaysPaymentRequired([offer({ payTo: PAYEE_B })]));
    const svc = await hostile((_req, res) => {
      res.writeHead(307, { location: `${foreign.url}/chat/completions` });
      res.end();
    });
    const following = (input: string | URL | Request, init?: RequestInit) => fetch(input, { ...init, redirect: "follow" });
    const policy = new PaymentPolicy({ amountUsd: 5 });
    const f = createServiceFetch({
      baseUrl: svc.url,
      wallet: EvmWallet.random(),
      payment: policy,
      fetch: following,
      retry: false,
      pacing: false,
    });
    const res = await f(`${svc.url}/chat/completions`, { method: "POST", body: "{}", service: { throwOnError: false } }).catch(
      (e: unknown) => e,
    );
    expect(res instanceof Response ? res.status : (res as Error).name).not.toBe(200);
    expect(foreign.to("/x402/top-up")).toHaveLength(0);
    expect(svc.to("/x402/top-up")).toHaveLength(0);
    expect(await policy.spentUsd()).toBe(0);
  });
});

describe("6. spend reports what was signed", () => {
  it("a $5 payment reported as $0.01 credited: $5 spent, the claim beside it, and a warning", async () => {
    const svc = await hostile((req, res) => (isTopUp(req.url) ? toppedUp(res, 0.01) : json(res, {})));
    const handler = new PaymentSpendHandler();
    const events: PaymentEvent[] = [];
    const client = new ServiceClient({
      baseUrl: svc.url,
      wallet: EvmWallet.random(),
      payment: { allowedPayees: [PAYEE_A] },
      onPayment: (e) => (events.push(e), handler.record(e)),
      ...quick,
    });
    svc.script = (req, res) =>
      isTopUp(req.url) && !authorizationOf(req) ? json(res, { x402Version: 2, accepts: [offer()] }, {}, 402) : toppedUp(res, 0.01);
    const result = await client.topUp(5);
    expect(result.amountUsd).toBe(5);
    expect(result.creditedUsd).toBe(0.01);
    const settled = events.find((e) => e.type === "payment.settled")!;
    expect(settled.amountUsd).toBe(5);
    expect(settled.creditedUsd).toBe(0.01);
    expect(events.filter((e) => e.type === "payment.warning")).toHaveLength(1);
    expect(handler.totalUsd).toBe(5);
    expect(handler.warnings).toBe(1);
  });
});

describe("7. ambiguous outcomes reconcile, they never re-sign", () => {
  const already: [string, Record<string, unknown>][] = [
    ["v2 code, upper case", { error: "PAYMENT_ALREADY_USED" }],
    ["the reference facilitator's reason", { error: "X402_INVALID_PAYMENT", errorReason: "invalid_exact_evm_nonce_already_used" }],
    ["400 PAYMENT_VERIFICATION_FAILED saying so", { error: "PAYMENT_VERIFICATION_FAILED", message: "Nonce has already been used" }],
    ["v1 wording, lower case", { error: "payment already processed" }],
  ];
  for (const [name, body] of already) {
    it(`a timed-out top-up re-sent and answered "${name}" is a settlement, with one signature`, async () => {
      let attempts = 0;
      const svc = await hostile(async (req, res) => {
        if (!isTopUp(req.url)) return json(res, {});
        if (!authorizationOf(req)) return json(res, { x402Version: 2, accepts: [offer()] }, {}, 402);
        if (++attempts === 1) return void (await sleep(1500)); // settles, but the answer is lost
        json(res, body, {}, 400);
      });
      const events: PaymentEvent[] = [];
      const client = new ServiceClient({
        baseUrl: svc.url,
        wallet: EvmWallet.random(),
        payment: { allowedPayees: [PAYEE_A] },
        onPayment: (e) => events.push(e),
        ...quick,
      });
      const result = await client.topUp(5);
      expect(result.amountUsd).toBe(5);
      const nonces = signedTopUps(svc).map((r) => authorizationOf(r)!.nonce);
      expect(nonces).toHaveLength(2);
      expect(new Set(nonces).size).toBe(1);
      expect(events.map((e) => e.type)).toContain("payment.settled");
    });
  }

  it("a 5xx, then a refusal of the re-send: the wallet's transactions decide, and show it settled", async () => {
    let attempts = 0;
    const signedAt = new Date().toISOString();
    const svc = await hostile((req, res) => {
      if (req.url.includes("/x402/transactions/")) {
        return json(res, {
          success: true,
          data: {
            walletAddress: "x",
            transactions: [{ id: "t1", amount: 5, balanceAfter: 5, type: "TOP_UP", createdAt: signedAt }],
            pagination: { limit: 50, offset: 0, hasMore: false },
          },
        });
      }
      if (!authorizationOf(req)) return json(res, { x402Version: 2, accepts: [offer()] }, {}, 402);
      return ++attempts === 1
        ? json(res, { error: "upstream" }, {}, 502)
        : json(res, { error: "X402_INVALID_PAYMENT", message: "invalid" }, {}, 400);
    });
    const client = new ServiceClient({ baseUrl: svc.url, wallet: EvmWallet.random(), payment: { allowedPayees: [PAYEE_A] }, ...quick });
    const result = await client.topUp(5);
    expect(result.reconciled).toBe(true);
    expect(result.amountUsd).toBe(5);
    expect(new Set(signedTopUps(svc).map((r) => authorizationOf(r)!.nonce)).size).toBe(1);
  });

  it("unclear and not in the transactions: no new signature until validBefore has passed and the service shows no settlement", async () => {
    let transactionsUp = true;
    const svc = await hostile((req, res) => {
      if (req.url.includes("/x402/transactions/")) {
        if (!transactionsUp) return json(res, { error: "down" }, {}, 503);
        return json(res, {
          success: true,
          data: { walletAddress: "x", transactions: [], pagination: { limit: 50, offset: 0, hasMore: false } },
        });
      }
      if (!authorizationOf(req)) return json(res, { x402Version: 2, accepts: [offer({ maxTimeoutSeconds: 2 })] }, {}, 402);
      json(res, { error: "upstream" }, {}, 503);
    });
    const client = new ServiceClient({ baseUrl: svc.url, wallet: EvmWallet.random(), payment: { allowedPayees: [PAYEE_A] }, ...quick });
    expect(await client.topUp(5).catch((e: unknown) => e)).toBeInstanceOf(PaymentFailedError);
    expect(await client.topUp(5).catch((e: unknown) => e)).toBeInstanceOf(PaymentFailedError);
    const nonces = () => new Set(signedTopUps(svc).map((r) => authorizationOf(r)!.nonce));
    expect(nonces().size).toBe(1); // the same bytes re-sent, never re-signed
    await sleep(2200); // validBefore passes
    transactionsUp = false; // ...but the service cannot say whether it settled
    expect(await client.topUp(5).catch((e: unknown) => e)).toBeInstanceOf(PaymentFailedError);
    expect(nonces().size).toBe(1);
    transactionsUp = true; // the service shows it did not settle, and it no longer can: a new payment may be signed
    await client.topUp(5).catch(() => undefined);
    expect(nonces().size).toBe(2);
  });
});
