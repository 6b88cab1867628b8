/**
 * Holding up under a burst: 3× a tier's requests-per-window (and a token-limited window) against the
 * emulator with short windows. Reports 429s drawn and throughput as a share of the limit. Goal: 0 429s,
 * throughput ≥ 95% of the limit.
 */
import { startEmulator } from "../src/emulator/index.js";
import { createServiceFetch, type FetchLike } from "../src/index.js";
import { median, type BenchRow } from "./types.js";

async function burst(opts: { tier: "S" | "M"; requests?: number; tokens?: number; count: number; windowMs: number; estimatedTokens?: number }) {
  const emu = await startEmulator({
    apiKeys: ["bench"],
    rateLimits: { windowMs: opts.windowMs, tiers: { [opts.tier]: { requests: opts.requests, tokens: opts.tokens } } },
  });
  const statuses: number[] = [];
  const counting: FetchLike = async (i, init) => {
    const r = await fetch(i, init);
    statuses.push(r.status);
    return r;
  };
  const model = opts.tier === "S" ? "emu-s" : "emu-m";
  const f = createServiceFetch({ baseUrl: emu.url, apiKey: "bench", fetch: counting });
  const startedWall = Date.now();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: opts.count }, (_, i) =>
      f(f.url("/chat/completions"), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: `burst ${i}` }], max_tokens: 16 }),
        service: { model, estimatedTokens: opts.estimatedTokens },
      }).then((r) => r.arrayBuffer()),
    ),
  );
  const elapsed = performance.now() - started;
  await emu.close();
  // The emulator's window starts at the first request's whole second and lasts windowMs. An ideal client
  // sends each window's quota the instant it opens: the 3rd batch goes out when the 2nd window ends.
  const ideal = Math.floor(startedWall / 1000) * 1000 + 2 * opts.windowMs - startedWall;
  return { elapsed, ideal, n429: statuses.filter((s) => s === 429).length };
}

export async function benchPacing(): Promise<BenchRow[]> {
  const windowMs = 1000;
  const limit = 20;
  const rows: BenchRow[] = [];
  const runs = [];
  for (let i = 0; i < 3; i++) runs.push(await burst({ tier: "S", requests: limit, count: 3 * limit, windowMs }));
  const elapsed = median(runs.map((r) => r.elapsed));
  rows.push({
    name: `3× burst of ${limit} req/window`,
    median_ms: elapsed,
    ratio: median(runs.map((r) => Math.min(1, r.ideal / r.elapsed))),
    anchor: "share of the request limit used (goal ≥ 0.95)",
    note: `429s: ${runs.map((r) => r.n429).join("/")} (goal 0)`,
  });
  const tokenRuns = [];
  for (let i = 0; i < 3; i++) tokenRuns.push(await burst({ tier: "M", requests: 10_000, tokens: 1200, count: 60, windowMs, estimatedTokens: 60 }));
  rows.push({
    name: "burst of 60 requests (~56 tokens each) over a 1200 tokens/window limit",
    median_ms: median(tokenRuns.map((r) => r.elapsed)),
    ratio: median(tokenRuns.map((r) => Math.min(1, r.ideal / r.elapsed))),
    anchor: "share of the token limit used (goal ≥ 0.95)",
    note: `429s: ${tokenRuns.map((r) => r.n429).join("/")} (goal 0); the client reserves 60 tokens a request`,
  });
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await benchPacing());
}
