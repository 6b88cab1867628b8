/**
 * Money under faults, over loopback HTTP against the emulator and its real local chain: a wallet agent
 * (`ChatService` with an `EvmWallet`, no API key) runs out of credit while `/x402/top-up` misbehaves (injected
 * 500/503 before it runs, a 503 after it settled, an answer that comes after the client gave up) and while
 * chat itself fails a share of requests. Whatever happens, the chain shows exactly one USDC transfer to the
 * treasury per wallet, the ledger credits exactly what was paid on chain, and charges add up to the balance.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Interface, JsonRpcProvider, Network, zeroPadValue } from "ethers";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import type { X402EmulatorOptions } from "../../packages/langchain-service-emulator/src/x402/index.js";
import { ChatService } from "../../src/chat/index.js";
import type { FetchLike } from "../../src/http/fetch-stack.js";
import { createServiceFetch } from "../../src/stack.js";
import { createWalletAuth, x402PaymentLayer, type PaymentEvent, type PaymentPolicyOptions } from "../../src/x402/index.js";
import { USDC_ABI } from "../../packages/langchain-service-emulator/src/chain/index.js";
import { EvmWallet } from "../../src/evm/index.js";
import { unpacedRoutes } from "../x402/helpers.js";

let emu: Emulator;
let provider: JsonRpcProvider;
/**
 * read by the emulator on every top-up, so each test sets its own misbehaviour; the x402 routes' own limits (10
 * top-ups a minute per IP) are off here, in the emulator and in the clients' pacing (`unpacedRoutes`): this file pays
 * more often than that
 */
const x402Options: X402EmulatorOptions = { routeLimits: false };
const usdcEvents = new Interface(USDC_ABI);
/**
 * The emulator counts `topUpFailures` over its life; each test that wants one more 503-after-settlement asks
 * for the count seen so far + 1 (exact whichever tests run).
 */
let postSettlement503s = 0;

beforeAll(async () => {
  emu = await startEmulator({
    chain: true,
    x402: x402Options as Record<string, unknown>,
    // every 402 is a non-success answer: short abuse windows keep the block a real constraint without
    // making the test wait 30 s for one to age out
    rateLimits: { abuseMaxFailures: 20, abuseWindowMs: 1_000, abuseBlockMs: 2_000 },
  });
  provider = new JsonRpcProvider(emu.chain!.rpcUrl, Network.from(emu.chain!.chainId), { staticNetwork: true, cacheTimeout: -1 });
});
afterAll(async () => {
  provider?.destroy();
  await emu?.close();
});

function payer(index: number): EvmWallet {
  return new EvmWallet(emu.chain!.accounts[index]!.privateKey);
}

function policy(): PaymentPolicyOptions {
  return { allowedPayees: [emu.chain!.treasury] };
}

interface Send {
  path: string;
  status: number;
  error?: string;
  /** it carried a signed payment (not a read of the requirements) */
  paid: boolean;
}

function countingFetch(): { fetch: FetchLike; sends: Send[] } {
  const sends: Send[] = [];
  const fetch: FetchLike = async (input, init) => {
    const path = new URL(String(input)).pathname.replace(/^\/api\/v1/, "");
    const headers = new Headers(init?.headers);
    const send: Send = { path, status: 0, paid: headers.has("payment-signature") || headers.has("x-402-payment") };
    sends.push(send);
    const response = await globalThis.fetch(input, init);
    send.status = response.status;
    if (!response.ok && path === "/x402/top-up") send.error = ((await response.clone().json()) as { error?: string }).error;
    if (send.error === "Service temporarily unavailable") postSettlement503s++;
    return response;
  };
  return { fetch, sends };
}

/** The stack a ChatService builds from `wallet`, with a short top-up timeout (not a ChatService option). */
function impatientModel(wallet: EvmWallet, fetch: FetchLike, events: PaymentEvent[]): ChatService {
  const serviceFetch = createServiceFetch({
    baseUrl: emu.url,
    fetch,
    auth: createWalletAuth(wallet),
    paymentLayer: x402PaymentLayer({ wallet, policy: policy(), onPayment: (e) => events.push(e), topUpTimeoutMs: 500, resendDelayMs: 50 }),
    abuseGuard: { windowMs: 1_000, maxFailures: 20, maxWaitMs: 10_000 },
    pacing: unpacedRoutes,
  });
  return new ChatService({ model: "emu-xs", serviceFetch });
}

/** USDC Transfer events from `from` to the treasury, read from the chain itself. */
async function transfersToTreasury(from: string): Promise<bigint[]> {
  const logs = await provider.getLogs({
    address: emu.chain!.usdc.address,
    topics: [usdcEvents.getEvent("Transfer")!.topicHash, zeroPadValue(from, 32), zeroPadValue(emu.chain!.treasury, 32)],
    fromBlock: 0,
    toBlock: "latest",
  });
  return logs.map((log) => usdcEvents.parseLog(log)!.args.getValue("value") as bigint);
}

/** The money invariants of one wallet: one transfer, credited exactly, charges add up. */
async function expectBooksBalance(wallet: EvmWallet, successes: number) {
  const paid = await transfersToTreasury(wallet.address);
  expect(paid).toHaveLength(1);
  const account = emu.account(wallet.address)!;
  const topUps = account.entries.filter((e) => e.type === "TOP_UP");
  expect(topUps).toHaveLength(1);
  // credited == paid on chain, to the atomic unit
  expect(BigInt(topUps[0]!.paidAtomic!)).toBe(paid[0]);
  expect(Math.round(topUps[0]!.amount * 1e6)).toBe(Number(paid[0]));
  // the receipt the ledger keeps is the transfer on chain
  const receipt = await provider.getTransactionReceipt(topUps[0]!.transaction!);
  expect(receipt?.status).toBe(1);
  // each served request charged once; faults and 402s charged nothing; the balance is the sum of the entries
  const charges = account.entries.filter((e) => e.type === "CHARGE");
  expect(charges).toHaveLength(successes);
  expect(charges.every((e) => e.amount < 0)).toBe(true);
  expect(new Set(charges.map((e) => e.requestId)).size).toBe(successes);
  const sum = account.entries.reduce((a, e) => a + e.amount, 0);
  expect(account.usd).toBeCloseTo(sum, 9);
  expect(account.entries.at(-1)!.balanceAfter).toBeCloseTo(account.usd, 9);
}

describe("money under faults on /x402/top-up", () => {
  it("injected 5xx before the top-up runs and a 503 after it settled: the same signature is re-sent, paid once", async () => {
    // seeded: top-ups of one wallet are sequential (single flight), so this sequence repeats: the requirements
    // are read, an injected 5xx meets the signed payment, then the send that settles (answered 503), then the
    // re-send, answered 409 (live: "already processed"), which the balance confirms as the settlement
    emu.setFaults({ errorRate: 0.5, statuses: [500, 503], seed: 1, paths: ["/x402/top-up"] });
    Object.assign(x402Options, { topUpFailures: postSettlement503s + 1 });
    try {
      const wallet = payer(1);
      const { fetch, sends } = countingFetch();
      const events: PaymentEvent[] = [];
      const model = new ChatService({
        model: "emu-xs",
        wallet,
        payment: policy(),
        onPayment: (e) => events.push(e),
        baseUrl: emu.url,
        fetch,
        abuseGuard: { windowMs: 1_000, maxFailures: 20, maxWaitMs: 10_000 },
        pacing: unpacedRoutes,
      });
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => model.invoke(`paid ${i}`)));
      expect(answers.map((a) => a.content)).toEqual(Array.from({ length: 8 }, (_, i) => `Echo: paid ${i}`));
      // a second wave on the credit already bought: no payment
      for (let i = 0; i < 4; i++) await model.invoke(`more ${i}`);

      const topUpSends = sends.filter((s) => s.path === "/x402/top-up" && s.paid);
      // the misbehaviour happened: injected faults, the post-settlement 503, then 409 "already processed"
      expect(topUpSends[0]!.error === "Service unavailable" || topUpSends[0]!.error === "Internal server error").toBe(true);
      expect(topUpSends.filter((s) => s.error === "Service temporarily unavailable")).toHaveLength(1);
      expect(topUpSends.at(-1)!.status).toBe(409);
      expect(topUpSends.at(-1)!.error).toBe("PAYMENT_IN_PROGRESS");
      expect(topUpSends.filter((s) => s.status === 200)).toHaveLength(0);
      expect(events.filter((e) => e.type === "payment.signed")).toHaveLength(1);
      expect(events.filter((e) => e.type === "payment.settled")).toHaveLength(1);
      expect(events.find((e) => e.type === "payment.settled")!.resends).toBe(topUpSends.length - 1);
      await expectBooksBalance(wallet, 12);
    } finally {
      emu.setFaults({});
      delete x402Options.topUpFailures;
    }
  });

  it("a top-up answered after the client gave up is re-sent unchanged and credited once", async () => {
    Object.assign(x402Options, { topUpResponseDelayMs: 2_000, delayedTopUps: 1 });
    try {
      const wallet = payer(2);
      const { fetch, sends } = countingFetch();
      const events: PaymentEvent[] = [];
      const model = impatientModel(wallet, fetch, events);
      const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => model.invoke(`late ${i}`)));
      expect(answers.map((a) => a.content)).toEqual(Array.from({ length: 5 }, (_, i) => `Echo: late ${i}`));

      const topUpSends = sends.filter((s) => s.path === "/x402/top-up" && s.paid);
      // the first send timed out on the client (its late answer never counted); the re-sends were answered 409
      // (settling, then "already processed"), and the balance showing the credit ended them: its settlement
      expect(topUpSends.length).toBeGreaterThanOrEqual(2);
      expect(topUpSends.slice(1).every((s) => s.status === 409 && s.error === "PAYMENT_IN_PROGRESS")).toBe(true);
      expect(events.filter((e) => e.type === "payment.signed")).toHaveLength(1);
      expect(events.find((e) => e.type === "payment.settled")!.resends).toBe(topUpSends.length - 1);
      await expectBooksBalance(wallet, 5);
    } finally {
      delete x402Options.topUpResponseDelayMs;
      delete x402Options.delayedTopUps;
    }
  });

  it("a slow facilitator: re-sends while the first send still settles are told 409 until the balance shows the credit; credited once", async () => {
    Object.assign(x402Options, { settleDelayMs: 1_500 });
    try {
      const wallet = payer(5);
      const { fetch, sends } = countingFetch();
      const events: PaymentEvent[] = [];
      const model = impatientModel(wallet, fetch, events);
      expect((await model.invoke("slow")).content).toBe("Echo: slow");
      // the first send timed out while settling; the re-sends were told 409 until a balance read showed the credit
      const paid = sends.filter((s) => s.path === "/x402/top-up" && s.paid);
      expect(paid.length).toBeGreaterThanOrEqual(2);
      expect(paid.at(-1)!.error).toBe("PAYMENT_IN_PROGRESS");
      expect(events.filter((e) => e.type === "payment.signed")).toHaveLength(1);
      await expectBooksBalance(wallet, 1);
    } finally {
      delete x402Options.settleDelayMs;
    }
  });

  it("a top-up whose answers are all lost is reconciled from the wallet's transactions: the call succeeds, nothing is re-signed", async () => {
    // seed 34: the requirements are read, the send that settles is answered 503, then three injected 5xx use up
    // the re-sends
    emu.setFaults({ errorRate: 0.5, statuses: [500, 503], seed: 34, paths: ["/x402/top-up"] });
    Object.assign(x402Options, { topUpFailures: postSettlement503s + 1 });
    const wallet = payer(4);
    const { fetch, sends } = countingFetch();
    const events: PaymentEvent[] = [];
    const model = new ChatService({
      model: "emu-xs",
      wallet,
      payment: policy(),
      onPayment: (e) => events.push(e),
      baseUrl: emu.url,
      fetch,
      abuseGuard: { windowMs: 1_000, maxFailures: 20, maxWaitMs: 10_000 },
      pacing: unpacedRoutes,
    });
    try {
      // the money moved although no top-up answer said so: the transactions show it, and the call goes on
      expect((await model.invoke("first")).content).toBe("Echo: first");
      expect(await transfersToTreasury(wallet.address)).toHaveLength(1);
      expect(events.map((e) => e.type)).toEqual(["payment.requested", "payment.signed", "payment.settled"]);
    } finally {
      emu.setFaults({});
      delete x402Options.topUpFailures;
    }
    expect(sends.filter((s) => s.path === "/x402/top-up" && s.paid)).toHaveLength(4);
    expect(sends.filter((s) => s.path.startsWith("/x402/transactions/"))).toHaveLength(1);
    expect((await model.invoke("second")).content).toBe("Echo: second");
    // served from the credit: no new top-up, nothing new signed
    expect(events.filter((e) => e.type === "payment.signed")).toHaveLength(1);
    expect(sends.filter((s) => s.path === "/x402/top-up" && s.paid)).toHaveLength(4);
    await expectBooksBalance(wallet, 2); // both calls served
  });

  it("faults on chat and top-up at once, 30 concurrent calls: every call answered, one payment, no abuse block", async () => {
    // seed 77: the first two requests to arrive (chat requests: nothing else is sent before the first 402) get a
    // 5xx, so chat faults happen on every run; unseeded, a run with none was possible and failed CI once
    emu.setFaults({ errorRate: 0.2, latencyMs: [0, 5], seed: 77, paths: ["/x402/top-up", "/chat/completions"] });
    try {
      const wallet = payer(3);
      const { fetch, sends } = countingFetch();
      const events: PaymentEvent[] = [];
      const model = new ChatService({
        model: "emu-xs",
        wallet,
        payment: policy(),
        onPayment: (e) => events.push(e),
        baseUrl: emu.url,
        fetch,
        retry: { maxRetries: 8, baseDelayMs: 10, maxDelayMs: 100 },
        abuseGuard: { windowMs: 1_000, maxFailures: 20, maxWaitMs: 10_000 },
        pacing: unpacedRoutes,
      });
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => model.invoke(`both ${i}`)));
      expect(answers.map((a) => a.content)).toEqual(Array.from({ length: 30 }, (_, i) => `Echo: both ${i}`));
      expect(sends.filter((s) => s.path === "/chat/completions" && s.status >= 500).length).toBeGreaterThan(0);
      expect(events.filter((e) => e.type === "payment.signed")).toHaveLength(1);
      // the client never drew the abuse block while paying through the 402s and the faults
      expect(sends.filter((s) => s.status === 402).length).toBeGreaterThan(0);
      expect(sends.some((s) => s.status === 429)).toBe(false);
      expect(emu.rateLimiter.blockedFor(`wallet:${wallet.address.toLowerCase()}`)).toBe(0);
      await expectBooksBalance(wallet, 30);
    } finally {
      emu.setFaults({});
    }
  });
});
