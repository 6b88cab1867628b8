/**
 * Failing schedules of the money model (money.test.ts), pinned as examples once their cause was fixed.
 */
import { describe, expect, it } from "vitest";
import { startEmulator } from "langchain-service-emulator";
import { AbortError, ServiceClient, ServiceEmbeddings, SpendBudget, TimeoutError } from "../../src/index.js";

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
