/**
 * The whole loop on the Base rail, over loopback HTTP against the emulator and a real local chain: an agent with
 * only a wallet hits 402, tops up, succeeds; on-chain balances move by exactly what was credited; concurrency,
 * timeouts and 5xx never make a second payment; the emulator refuses bad payments.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Wallet } from "ethers";
import type { Emulator } from "langchain-service-emulator";
import type { FetchLike } from "../../src/http/fetch-stack.js";
import { createServiceFetch } from "../../src/stack.js";
import { ServiceClient } from "../../src/client.js";
import {
  InsufficientBalanceError,
  PaymentFailedError,
  PaymentPolicyError,
  PermissionDeniedError,
  AuthenticationError,
} from "../../src/http/errors.js";
import {
  createSiwxHeader,
  createWalletAuth,
  getX402Transactions,
  PaymentPolicy,
  signPayment,
  topUp,
  withX402,
  X402PaymentController,
  x402PaymentLayer,
  type PaymentEvent,
} from "../../src/x402/index.js";
import type { X402EmulatorOptions } from "../../packages/langchain-service-emulator/src/x402/index.js";
import { toBase64Json } from "../../src/x402/encoding.js";
import { chatBody, payer, startPaidEmulator, testPolicy, unpacedRoutes, usdcBalance } from "./helpers.js";

let emu: Emulator;
const x402Options: X402EmulatorOptions = {};

beforeAll(async () => {
  emu = await startPaidEmulator({ x402: x402Options as Record<string, unknown>, apiKeys: [{ key: "broke-key", usd: 0, diem: 0 }] });
});
afterAll(async () => {
  await emu?.close();
});

/** A wallet client through the package's one stack, counting every HTTP request it sends. */
function walletClient(index: number, policy = {}, extra: Partial<ConstructorParameters<typeof X402PaymentController>[0]> = {}) {
  const wallet = payer(emu, index);
  const events: PaymentEvent[] = [];
  const sent: string[] = [];
  const counting: FetchLike = (input, init) => {
    sent.push(`${init?.method ?? "GET"} ${new URL(String(input)).pathname}`);
    return globalThis.fetch(input, init);
  };
  const controller = new X402PaymentController({
    wallet,
    policy: testPolicy(emu, policy),
    onPayment: (e) => events.push(e),
    resendDelayMs: 20,
    ...extra,
  });
  const client = new ServiceClient({
    serviceFetch: createServiceFetch({
      baseUrl: emu.url,
      fetch: counting,
      auth: createWalletAuth(wallet),
      paymentLayer: x402PaymentLayer(controller),
      abuseGuard: false,
      pacing: unpacedRoutes,
    }),
  });
  const chat = () => client.request<{ choices: unknown[] }>("/chat/completions", { body: JSON.parse(chatBody()) });
  return { wallet, events, sent, controller, client, chat };
}

function topUps(address: string) {
  return emu.account(address)?.entries.filter((e) => e.type === "TOP_UP") ?? [];
}

describe("x402 on Base against the emulator", () => {
  it("answers an unauthenticated inference call with the discovery 402 (variant 2)", async () => {
    const res = await fetch(`${emu.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: chatBody(),
    });
    expect(res.status).toBe(402);
    const body = (await res.json()) as Record<string, any>;
    expect(body.x402Version).toBe(2);
    expect(body.resource.url).toContain("/chat/completions");
    expect(body.accepts[0]).toMatchObject({
      scheme: "exact",
      network: "eip155:8453",
      amount: "5000000",
      asset: emu.chain!.usdc.address,
      payTo: emu.chain!.treasury,
      maxTimeoutSeconds: 300,
      extra: { name: "USD Coin", version: "2" },
    });
    expect(body.extensions["sign-in-with-x"].info.domain).toBe(new URL(emu.url).host);
    expect(body.authOptions.x402Wallet.header).toBe("SIGN-IN-WITH-X");
    const header = JSON.parse(Buffer.from(res.headers.get("payment-required")!, "base64").toString()) as Record<string, any>;
    expect(header.accepts).toEqual(body.accepts);
  });

  it("an agent with only a wallet hits 402, reads the top-up endpoint's requirements, pays exactly the offer, and succeeds in 4 round trips; the chain moved exactly what was credited", async () => {
    const { wallet, events, sent, controller, chat, client } = walletClient(1);
    const payerBefore = await usdcBalance(emu, wallet.address);
    const treasuryBefore = await usdcBalance(emu, emu.chain!.treasury);
    const res = await chat();
    expect(res.status).toBe(200);
    expect(res.data.choices.length).toBeGreaterThan(0);
    // the inference 402's requirements are a hint: what is signed comes from the top-up endpoint itself
    expect(sent).toEqual([
      "POST /api/v1/chat/completions",
      "POST /api/v1/x402/top-up",
      "POST /api/v1/x402/top-up",
      "POST /api/v1/chat/completions",
    ]);
    expect(events.map((e) => e.type)).toEqual(["payment.requested", "payment.signed", "payment.settled"]);
    const credited = topUps(wallet.address);
    expect(credited).toHaveLength(1);
    expect(credited[0]!.amount).toBe(5); // exactly the offered requirement, not the 402's "suggested" $10
    const moved = payerBefore - (await usdcBalance(emu, wallet.address));
    expect(moved).toBe(5_000_000n);
    expect((await usdcBalance(emu, emu.chain!.treasury)) - treasuryBefore).toBe(moved);
    expect(credited[0]!.transaction).toBe(events[2]!.transaction);
    // the credit left: 5 minus what the request cost, read from GET /x402/balance (the live service sends no
    // X-Balance-Remaining), since the figure the top-up told is stale once a paid request was served
    expect(controller.lastBalanceUsd).toBe(5);
    const left = await controller.currentBalanceUsd();
    expect(left).toBeGreaterThan(4.9);
    expect(left).toBeLessThan(5);
    expect(sent.at(-1)).toBe(`GET /api/v1/x402/balance/${wallet.address}`);
    expect(await controller.currentBalanceUsd()).toBe(left); // nothing served since: no second read
    expect(sent.filter((s) => s.includes("/x402/balance/"))).toHaveLength(1);
    // next request: no payment
    await chat();
    expect(topUps(wallet.address)).toHaveLength(1);
    const balance = await client.getX402Balance(wallet.address);
    expect(balance.balanceUsd).toBe(emu.account(wallet.address)!.usd);
    const history = await getX402Transactions(client, { wallet });
    expect(history.transactions.map((t) => t.type)).toEqual(["CHARGE", "CHARGE", "TOP_UP"]);
  });

  it("50 concurrent requests on an empty balance make exactly 1 payment", async () => {
    const { wallet, events, chat } = walletClient(2);
    const before = await usdcBalance(emu, wallet.address);
    const results = await Promise.all(Array.from({ length: 50 }, () => chat()));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(events.filter((e) => e.type === "payment.signed")).toHaveLength(1);
    expect(topUps(wallet.address)).toHaveLength(1);
    expect(before - (await usdcBalance(emu, wallet.address))).toBe(5_000_000n);
  });

  it("a top-up that times out after settling is re-sent unchanged, never paid twice", async () => {
    Object.assign(x402Options, { topUpResponseDelayMs: 2_500, delayedTopUps: 1 });
    try {
      const { wallet, events, chat, sent } = walletClient(3, {}, { topUpTimeoutMs: 700 });
      const before = await usdcBalance(emu, wallet.address);
      const res = await chat();
      expect(res.status).toBe(200);
      // the requirements, the signed payment, and its re-send after the timeout
      expect(sent.filter((s) => s.endsWith("/x402/top-up"))).toHaveLength(3);
      expect(events.filter((e) => e.type === "payment.signed")).toHaveLength(1);
      expect(events.find((e) => e.type === "payment.settled")?.resends).toBe(1);
      expect(topUps(wallet.address)).toHaveLength(1);
      expect(before - (await usdcBalance(emu, wallet.address))).toBe(5_000_000n);
    } finally {
      delete x402Options.topUpResponseDelayMs;
    }
  });

  it("a 503 after settling: the same signature is re-sent and credited once", async () => {
    Object.assign(x402Options, { topUpFailures: 1 });
    try {
      const { wallet, events, chat } = walletClient(4);
      const before = await usdcBalance(emu, wallet.address);
      expect((await chat()).status).toBe(200);
      expect(events.filter((e) => e.type === "payment.signed")).toHaveLength(1);
      expect(topUps(wallet.address)).toHaveLength(1);
      expect(before - (await usdcBalance(emu, wallet.address))).toBe(5_000_000n);
    } finally {
      delete x402Options.topUpFailures;
    }
  });

  it("a second 402 right after a successful top-up is an error, not another payment", async () => {
    x402Options.minimumBalanceUsd = 1_000; // the $5 top-up will not be enough
    try {
      const { wallet, events, chat } = walletClient(5);
      await expect(chat()).rejects.toBeInstanceOf(PaymentFailedError);
      expect(events.filter((e) => e.type === "payment.settled")).toHaveLength(1);
      expect(topUps(wallet.address)).toHaveLength(1);
    } finally {
      delete x402Options.minimumBalanceUsd;
    }
  });

  it("variant 1 (API-key account without balance) is a typed error; nothing is signed", async () => {
    const events: PaymentEvent[] = [];
    const client = new ServiceClient({
      baseUrl: emu.url,
      apiKey: "broke-key",
      abuseGuard: false,
      paymentLayer: x402PaymentLayer({ wallet: payer(emu, 6), policy: testPolicy(emu), onPayment: (e) => events.push(e) }),
    });
    await expect(client.request("/chat/completions", { body: JSON.parse(chatBody()) })).rejects.toBeInstanceOf(InsufficientBalanceError);
    expect(events).toEqual([]);
  });

  it("policy caps hold over the period, and explicit top-ups count against them", async () => {
    const policy = new PaymentPolicy(testPolicy(emu, { maxPerPeriodUsd: 10 }));
    const { wallet, events, chat, client, controller } = walletClient(6, {}, { policy });
    expect((await chat()).status).toBe(200);
    const before = await usdcBalance(emu, wallet.address);
    const refused = await topUp(client, 10, { controller }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PaymentPolicyError);
    expect((refused as PaymentPolicyError).rule).toBe("maxPerPeriod");
    expect(await usdcBalance(emu, wallet.address)).toBe(before);
    const ok = await topUp(client, 5, { controller });
    expect(ok.amountUsd).toBe(5);
    expect(await policy.spentUsd()).toBe(10);
    expect(events.filter((e) => e.type === "payment.refused").map((e) => e.rule)).toEqual(["maxPerPeriod"]);
  });

  it("dry-run reports the payment it would make and signs nothing", async () => {
    const { wallet, events, chat } = walletClient(7, { dryRun: true });
    const before = await usdcBalance(emu, wallet.address);
    const err = (await chat().catch((e: unknown) => e)) as PaymentPolicyError;
    expect(err).toBeInstanceOf(PaymentPolicyError);
    expect(err.rule).toBe("dryRun");
    expect(events.map((e) => e.type)).toEqual(["payment.requested", "payment.refused"]);
    expect(await usdcBalance(emu, wallet.address)).toBe(before);
  });

  it("withX402 around plain fetch does the same loop", async () => {
    const wallet = payer(emu, 8);
    const f = withX402(fetch, { wallet, policy: testPolicy(emu, { amountUsd: 6 }) });
    const res = await f(`${emu.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: chatBody(),
    });
    expect(res.status).toBe(200);
    expect(topUps(wallet.address).map((e) => e.amount)).toEqual([6]);
    expect(f.controller.completedTopUps).toBeGreaterThanOrEqual(1);
  });
});

describe("the emulator's top-up endpoint refuses bad payments", () => {
  const topUpUrl = () => `${emu.url}/x402/top-up`;
  const post = (header: Record<string, string>) => fetch(topUpUrl(), { method: "POST", headers: header });
  const requirement = (over: Record<string, unknown> = {}) => ({
    scheme: "exact" as const,
    network: "eip155:8453",
    amount: "5000000",
    asset: emu.chain!.usdc.address,
    payTo: emu.chain!.treasury,
    maxTimeoutSeconds: 300,
    extra: { name: "USD Coin", version: "2" },
    ...over,
  });
  /** A decision to sign `over` (amount, payee, validity) while `accepted` names the real offer unless `offered` says. */
  const decision = (over: Record<string, unknown> = {}, form: "v2" | "v1" = "v2", offered: Record<string, unknown> = requirement()) => {
    const r = requirement(over);
    return {
      requirement: r,
      form,
      offered,
      amountUsd: Number(r.amount) / 1e6,
      amountAtomic: BigInt(r.amount),
      minimumUsd: 5,
      decimals: 6,
      network: r.network,
      asset: r.asset,
      payTo: r.payTo,
    };
  };
  const errorOf = async (res: Response) => (await res.json()) as { error: string; message: string };

  it("without a payment header: 402 with accepts", async () => {
    const res = await post({});
    expect(res.status).toBe(402);
    const { accepts } = (await res.json()) as { accepts: { network: string }[] };
    expect(accepts.map((a) => a.network)).toEqual(["eip155:8453", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"]);
  });

  it("v2: `accepted` must be exactly an offered requirement; wrong payee, other amount, expired: 400, nothing credited", async () => {
    const wallet = payer(emu, 1);
    const before = topUps(wallet.address).length;
    for (const over of [{ payTo: emu.chain!.accounts[2]!.address }, { amount: "5500000" }, { amount: "1000000" }]) {
      // the signature matches what `accepted` claims, which is not what the service offered
      const signed = await signPayment(wallet, decision(over, "v2", requirement(over)));
      const res = await post({ "PAYMENT-SIGNATURE": signed.header });
      expect(res.status).toBe(400);
      expect((await errorOf(res)).error).toBe("PAYMENT_VERIFICATION_FAILED");
    }
    // the offer in `accepted`, but a signature that expires at once
    const expired = await signPayment(wallet, decision({ maxTimeoutSeconds: 1 }));
    const res = await post({ "PAYMENT-SIGNATURE": expired.header });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).error).toBe("PAYMENT_VERIFICATION_FAILED");
    // a v1 payload in the v2 header
    const v1 = await signPayment(wallet, decision({ amount: "6000000" }, "v1"));
    const wrongHeader = await post({ "PAYMENT-SIGNATURE": v1.header });
    expect(wrongHeader.status).toBe(400);
    expect((await errorOf(wrongHeader)).error).toBe("INVALID_PAYMENT_FORMAT"); // the live code (seed: X402_INVALID_PAYMENT)
    expect(topUps(wallet.address)).toHaveLength(before);
  });

  it("a re-sent payment is refused as already used (in any header) and credited once; legacy v1 carries any amount from $5", async () => {
    const wallet = payer(emu, 1);
    const before = topUps(wallet.address).length;
    const signed = await signPayment(wallet, decision());
    expect(signed.headerName).toBe("PAYMENT-SIGNATURE");
    const first = await post({ "PAYMENT-SIGNATURE": signed.header });
    expect(first.status).toBe(200);
    const receipt = JSON.parse(Buffer.from(first.headers.get("payment-response")!, "base64").toString()) as Record<string, unknown>;
    expect(receipt).toMatchObject({ success: true, network: "eip155:8453", payer: wallet.address });
    for (const header of ["PAYMENT-SIGNATURE", "X-PAYMENT"]) {
      // live: "already processed" is a 409, as while settling
      const again = await post({ [header]: signed.header });
      expect(again.status).toBe(409);
      expect((await errorOf(again)).error).toBe("PAYMENT_IN_PROGRESS");
    }
    x402Options.resendAfterSettled = "400"; // the seed's answer
    try {
      for (const header of ["PAYMENT-SIGNATURE", "X-PAYMENT"]) {
        const again = await post({ [header]: signed.header });
        expect(again.status).toBe(400);
        const body = await errorOf(again);
        expect(body.error).toBe("PAYMENT_VERIFICATION_FAILED");
        expect(body.message).toMatch(/nonce was already used/);
      }
    } finally {
      delete x402Options.resendAfterSettled;
    }
    expect(topUps(wallet.address)).toHaveLength(before + 1);

    // as the service's own SDK sends it: v1, network "base", `maxAmountRequired` = the sum, X-402-Payment
    const legacy = await signPayment(wallet, decision({ amount: "5500000" }, "v1"));
    expect(legacy.headerName).toBe("X-402-Payment");
    expect(legacy.payload).toMatchObject({ x402Version: 1, scheme: "exact", network: "base" });
    const res = await post({ "X-402-Payment": legacy.header });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { amountCredited: number } }).data.amountCredited).toBe(5.5);
    const under = await signPayment(wallet, decision({ amount: "4000000" }, "v1"));
    expect((await post({ "X-402-Payment": under.header })).status).toBe(400);
    expect(topUps(wallet.address)).toHaveLength(before + 2);

    // the SDK's legacy `x402` package labels that v1 shape with the 402's own version (2): the shape decides
    const labelled = await signPayment(wallet, decision({ amount: "7000000" }, "v1"));
    const asSdkSends = toBase64Json({ ...labelled.payload, x402Version: 2 });
    expect((await post({ "PAYMENT-SIGNATURE": asSdkSends })).status).toBe(400); // no `accepted`: not a v2 payment
    const sdk = await post({ "X-402-Payment": asSdkSends });
    expect(sdk.status).toBe(200);
    expect(((await sdk.json()) as { data: { amountCredited: number } }).data.amountCredited).toBe(7);
    expect(topUps(wallet.address)).toHaveLength(before + 3);
  });

  it("balance and transactions need the same wallet's sign-in (402 without, 401 for a bad one, 403 for another wallet)", async () => {
    const mine = payer(emu, 1);
    const other = Wallet.createRandom().address;
    const client = new ServiceClient({ baseUrl: emu.url, auth: createWalletAuth(mine), abuseGuard: false });
    await expect(client.getX402Balance(other)).rejects.toBeInstanceOf(PermissionDeniedError);
    await expect(getX402Transactions(client, { address: other })).rejects.toBeInstanceOf(PermissionDeniedError);
    // live: no sign-in is the discovery 402 with nothing to pay (only the sign-in challenge matters here)
    const anonymous = await fetch(`${emu.url}/x402/balance/${mine.address}`);
    expect(anonymous.status).toBe(402);
    expect(await anonymous.json()).toMatchObject({ x402Version: 2, accepts: [], extensions: { "sign-in-with-x": {} } });
    // a bad one: the read routes' generic 401, no reason given
    const stale = await createSiwxHeader(mine, emu.url, { now: Date.now() - 6 * 60_000, ttlMs: 60 * 60_000 });
    const res = await fetch(`${emu.url}/x402/balance/${mine.address}`, { headers: { "SIGN-IN-WITH-X": stale } });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: "Invalid Sign-in-with-x signature" });
    const fresh = await createSiwxHeader(mine, emu.url);
    expect((await fetch(`${emu.url}/x402/balance/${mine.address}`, { headers: { "X-Sign-In-With-X": fresh } })).status).toBe(200);
    const reused = await fetch(`${emu.url}/x402/transactions/${mine.address}`, { headers: { "SIGN-IN-WITH-X": fresh } });
    expect(reused.status).toBe(401);
    expect(await reused.json()).toEqual({ error: "Invalid Sign-in-with-x signature" });
    const wrongDomain = await createSiwxHeader(mine, "http://example.com/api/v1");
    const client2 = await fetch(`${emu.url}/chat/completions`, {
      method: "POST",
      headers: { "SIGN-IN-WITH-X": wrongDomain },
      body: chatBody(),
    });
    expect(client2.status).toBe(401);
    expect(await client2.json()).toMatchObject({ code: "X402_SIGN_IN_DOMAIN_MISMATCH", details: { reason: "domain_mismatch" } });
    void AuthenticationError;
  });
});
