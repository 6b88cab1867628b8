/**
 * Failing schedules of the money model (money.test.ts), pinned as examples once their cause was fixed.
 */
import { describe, expect, it } from "vitest";
import { startEmulator } from "langchain-service-emulator";
import { AbortError, createServiceContext, ServiceClient, ServiceEmbeddings, SpendBudget, TimeoutError } from "../../src/index.js";
import { payer, startPaidEmulator, testPolicy, unpacedRoutes } from "../x402/helpers.js";

const KEY = "money-examples";
const STALL_MS = 3_000;
/** 100 ms plus a turn of a loaded 2-core machine's event loop */
const MARGIN_MS = 400;

async function ended(p: Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const started = Date.now();
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  return { err, ms: Date.now() - started };
}

// Seed 100 of the long run (first failing schedule: an embeddings call aborted at 102 ms, a SpendBudget, latency up to
// 2.5 s on every path) ended after 2270 ms: a budget prices a request from the stack's /models records before it
// reserves, and that read went on past the caller's signal and its totalTimeout (the abort came only with its end).
describe("a budget's price read (GET /models) ends at the caller's deadline", () => {
  for (const how of ["signal", "totalTimeout"] as const) {
    it(`by ${how}: the call ends at its deadline with a typed error, nothing held`, { timeout: 20_000 }, async () => {
      // an emulator of its own: the /models records are cached per service, and another cell's read must not serve this one
      const emu = await startEmulator({ apiKeys: [KEY], faults: { latencyMs: STALL_MS, paths: ["/models"] } });
      try {
        const budget = new SpendBudget({ maxUsd: 1 });
        const deadline = 500;
        const client = new ServiceClient({
          baseUrl: emu.url,
          apiKey: KEY,
          budget,
          ...(how === "totalTimeout" ? { totalTimeout: deadline } : {}),
        });
        const embeddings = new ServiceEmbeddings({ serviceFetch: client.fetch, model: "text-embedding-bge-m3" });
        const signal = how === "signal" ? AbortSignal.timeout(deadline) : undefined;
        const { err, ms } = await ended(embeddings.embedWithUsage(["a"], { signal }));
        expect(err instanceof TimeoutError || err instanceof AbortError, String(err)).toBe(true);
        expect(ms).toBeLessThan(deadline + MARGIN_MS);
        expect((await budget.refresh()).reservedUsd).toBe(0);
      } finally {
        await emu.close();
      }
    });
  }
});

// Seed 608621565 (latency on chat and top-ups, a 503 after settling, calls charged while the payment's answer was
// lost): a re-sent payment answered 409 was taken as "still settling" because the balance was not up by its amount,
// and the credit had been spent at once by the wallet's other calls. The top-up stayed in flight until the
// signature expired (minutes), and every 402 of the wallet waited on it.
describe("a payment credited and spent at once is settled, not 'still settling'", () => {
  it("the 409 after a lost answer is settled by the wallet's transactions when the balance was spent meanwhile", {
    timeout: 60_000,
  }, async () => {
    const emu = await startPaidEmulator({
      chain: { accounts: 4 },
      x402: { topUpFailures: 1, resendAfterSettled: "409", minimumTopUpUsd: 0.05, suggestedTopUpUsd: 0.05, minimumBalanceUsd: 0.005 },
    });
    try {
      const wallet = payer(emu, 1);
      const image = { model: "emu-image", prompt: "a boat", width: 64, height: 64 };
      const faces = (resendDelayMs: number) =>
        new ServiceClient({
          baseUrl: emu.url,
          wallet,
          payment: testPolicy(emu),
          pacing: unpacedRoutes,
          topUp: { resendDelayMs, maxResends: 3, topUpTimeoutMs: 10_000 },
          totalTimeout: 15_000,
          // each its own wallet state: the second is another process of the wallet, charged while the first re-sends
          context: createServiceContext(),
        });
      const payer1 = faces(1_000);
      const first = ended(payer1.generateImage(image));
      // the payment settled (its answer a 503): the wallet's other process spends part of the credit at once
      const account = emu.ledger.wallet(wallet.address);
      await expect.poll(() => emu.ledger.available(account), { timeout: 10_000, interval: 20 }).toBeGreaterThan(0.04);
      await faces(10).generateImage(image);
      expect(emu.ledger.available(account)).toBeLessThan(0.05);
      const { err, ms } = await first;
      expect(err, String(err)).toBeUndefined();
      expect(ms).toBeLessThan(10_000);
      expect(emu.ledger.totals(account).topUps).toBe(1);
    } finally {
      await emu.close();
    }
  });
});
