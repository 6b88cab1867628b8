/**
 * The first-402 burst: 50 simultaneous requests from a wallet with no credit, against the emulator with the
 * strictest abuse rule a service has published (the seed's: more than 20 failures in 30 s blocks the caller; the
 * live one allows 50) and the client's default abuse guard. The payment layer holds requests while the wallet's credit is unknown, so the service sees one
 * 402, one payment, and 50 successes; never the 50 402s that would block the wallet.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { accountIdentity } from "../../packages/langchain-service-emulator/src/auth.js";
import { ServiceClient } from "../../src/client.js";
import { PaymentPolicyError } from "../../src/http/errors.js";
import { withX402, type PaymentEvent } from "../../src/x402/index.js";
import { chatBody, payer, testPolicy } from "./helpers.js";

let emu: Emulator;
/** the emulator reads these on every request, so a test can move the credit threshold */
const x402Options: Record<string, unknown> = {};

beforeAll(async () => {
  // default rate limits; the seed's abuse threshold: abuseMaxFailures 20 in 30 s
  emu = await startEmulator({ chain: true, x402: x402Options, rateLimits: { abuseMaxFailures: 20 } });
  expect(emu.rateLimiter.abuseMaxFailures).toBe(20);
});
afterAll(async () => {
  await emu?.close();
});

function walletCounts(address: string) {
  const account = emu.account(address);
  const identity = account ? accountIdentity(account) : `wallet:${address.toLowerCase()}`;
  const entries = account?.entries ?? [];
  return {
    failures: emu.rateLimiter.recentFailures(identity),
    blockedMs: emu.rateLimiter.blockedFor(identity),
    topUps: entries.filter((e) => e.type === "TOP_UP").length,
  };
}

describe("the first-402 burst", () => {
  it("50 concurrent requests of an empty wallet: 1 payment, 50 successes, at most 1 failure seen by the service", async () => {
    const wallet = payer(emu, 2);
    const events: PaymentEvent[] = [];
    const sent: string[] = [];
    const client = new ServiceClient({
      baseUrl: emu.url,
      wallet,
      payment: testPolicy(emu),
      onPayment: (e) => events.push(e),
      fetch: (input, init) => {
        sent.push(new URL(String(input)).pathname);
        return globalThis.fetch(input, init);
      },
    });
    const results = await Promise.all(
      Array.from({ length: 50 }, () => client.request<{ choices: unknown[] }>("/chat/completions", { body: JSON.parse(chatBody()) })),
    );
    expect(results).toHaveLength(50);
    for (const r of results) {
      expect(r.status).toBe(200);
      expect(r.data.choices).toHaveLength(1);
    }
    expect(events.filter((e) => e.type === "payment.signed")).toHaveLength(1);
    expect(events.filter((e) => e.type === "payment.settled")).toHaveLength(1);
    const counts = walletCounts(wallet.address);
    expect(counts.topUps).toBe(1);
    expect(counts.failures).toBeLessThanOrEqual(1);
    expect(counts.blockedMs).toBe(0);
    // 50 chat calls + 1 retry of the first one + 1 top-up: nothing else reached the wire
    expect(sent.filter((p) => p.endsWith("/chat/completions"))).toHaveLength(51);
    // the requirements, then the one signed payment
    expect(sent.filter((p) => p.endsWith("/x402/top-up"))).toHaveLength(2);
    expect((await client.fetch.paymentController())?.creditKnownOk).toBe(true);
  });

  it("once credit was seen OK, requests flow freely; after a 402 they are held again until the top-up is done", async () => {
    const wallet = payer(emu, 3);
    const events: PaymentEvent[] = [];
    let topUpStarted: (() => void) | undefined;
    const f = withX402(fetch, {
      wallet,
      policy: testPolicy(emu),
      onPayment: (e) => {
        events.push(e);
        if (e.type === "payment.requested") topUpStarted?.();
      },
    });
    const chat = () =>
      f(`${emu.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: chatBody() });
    expect((await chat()).status).toBe(200);
    expect(f.controller.creditKnownOk).toBe(true);

    // credit known OK: 10 requests flow without holding
    const before = walletCounts(wallet.address);
    const ok = await Promise.all(Array.from({ length: 10 }, chat));
    expect(ok.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(walletCounts(wallet.address)).toEqual(before);

    // the credit runs out: the emulator's minimum moves above the balance
    const balance = emu.account(wallet.address)!.usd;
    x402Options.minimumBalanceUsd = balance + 1;
    const started = new Promise<void>((r) => (topUpStarted = r));
    try {
      const first = chat();
      await started; // that request met a 402 and its top-up is under way
      expect(f.controller.creditKnownOk).toBe(false);
      // 30 more now: held until the top-up is done, then served from the new credit
      const rest = await Promise.all(Array.from({ length: 30 }, chat));
      expect(rest.map((r) => r.status)).toEqual(Array(30).fill(200));
      expect((await first).status).toBe(200);
    } finally {
      delete x402Options.minimumBalanceUsd;
    }
    const after = walletCounts(wallet.address);
    expect(after.topUps - before.topUps).toBe(1);
    expect(after.failures - before.failures).toBe(1);
    expect(after.blockedMs).toBe(0);
    expect(events.filter((e) => e.type === "payment.settled")).toHaveLength(2);
  });

  it("reads are neither held nor taken as proof of credit", async () => {
    const wallet = payer(emu, 5);
    const f = withX402(fetch, { wallet, policy: testPolicy(emu) });
    const reads = await Promise.all(Array.from({ length: 5 }, () => f(`${emu.url}/models`)));
    expect(reads.map((r) => r.status)).toEqual(Array(5).fill(200));
    expect(f.controller.creditKnownOk).toBe(false);
    // the wallet still has no credit: a burst of chat calls is still held behind one request
    const results = await Promise.all(
      Array.from({ length: 25 }, () =>
        f(`${emu.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: chatBody() }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(25).fill(200));
    const counts = walletCounts(wallet.address);
    expect(counts.topUps).toBe(1);
    expect(counts.failures).toBe(1);
  });

  it("a refused top-up fails the held requests with the same typed error, without sending them", async () => {
    const wallet = payer(emu, 4);
    const sent: string[] = [];
    const f = withX402(
      (input: string | URL | Request, init?: RequestInit) => {
        sent.push(new URL(String(input)).pathname);
        return fetch(input, init);
      },
      // a payee the service never uses: the policy refuses before anything is signed
      { wallet, policy: { ...testPolicy(emu), allowedPayees: ["0x000000000000000000000000000000000000dEaD"] } },
    );
    const results = await Promise.allSettled(
      Array.from({ length: 25 }, () =>
        f(`${emu.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: chatBody() }),
      ),
    );
    expect(results.every((r) => r.status === "rejected" && r.reason instanceof PaymentPolicyError)).toBe(true);
    // one request went out and drew the one 402; the other 24 never reached the service
    expect(sent.filter((p) => p.endsWith("/chat/completions"))).toHaveLength(1);
    const counts = walletCounts(wallet.address);
    expect(counts.failures).toBe(1);
    expect(counts.blockedMs).toBe(0);
  });
});
