/**
 * Holding up under a burst: 3× a tier's requests-per-window (and a token-limited window) against the
 * emulator with short windows. Reports 429s drawn and throughput as a share of the limit. Goal: 0 429s,
 * throughput ≥ 95% of the limit. And a token limit as live: a token window of its own (1.5 s) beside a request
 * window of a minute, a burst of chat calls whose tokens overrun it, by ChatService (its token estimate), the stack
 * without an estimate, and the openai SDK.
 */
import OpenAI from "openai";
import { ChatService } from "../src/chat/index.js";
import { startEmulator } from "langchain-service-emulator";
import { createServiceFetch, type FetchLike } from "../src/index.js";
import { median, type BenchRow } from "./types.js";

async function burst(opts: {
  tier: "S" | "M";
  requests?: number;
  tokens?: number;
  count: number;
  windowMs: number;
  estimatedTokens?: number;
}) {
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

/** a prompt of about 60 tokens asking for 5: with the service's system prompt, about 100 tokens a call */
const TOKEN_PROMPT = `${"many words to fill the prompt of this request ".repeat(5)} [[emu:tokens=5]]`;

/** `count` chat calls at once against a 400-token window of 1.5 s (and 1000 requests a minute), one way */
async function tokenBurst(way: "estimate" | "no estimate" | "openai SDK", count: number) {
  const emu = await startEmulator({
    apiKeys: ["bench"],
    rateLimits: { windowMs: 60_000, tokenWindowMs: 1_500, tiers: { XS: { requests: 1_000, tokens: 400 } } },
  });
  const statuses: number[] = [];
  const counting: FetchLike = async (i, init) => {
    const r = await fetch(i, init);
    if (String(i instanceof Request ? i.url : i).endsWith("/chat/completions")) statuses.push(r.status);
    return r;
  };
  const messages = [{ role: "user" as const, content: TOKEN_PROMPT }];
  let send: () => Promise<unknown>;
  if (way === "estimate") {
    const model = new ChatService({ model: "emu-xs", apiKey: "bench", baseUrl: emu.url, fetch: counting, maxTokens: 60 });
    send = () => model.invoke(TOKEN_PROMPT);
  } else if (way === "no estimate") {
    const f = createServiceFetch({ baseUrl: emu.url, apiKey: "bench", fetch: counting });
    const body = JSON.stringify({ model: "emu-xs", messages, max_tokens: 60 });
    send = () =>
      f(f.url("/chat/completions"), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        service: { model: "emu-xs" },
      }).then((r) => r.arrayBuffer());
  } else {
    const sdk = new OpenAI({ apiKey: "bench", baseURL: emu.url, fetch: counting as typeof fetch });
    send = () => sdk.chat.completions.create({ model: "emu-xs", messages, max_tokens: 60 });
  }
  const started = performance.now();
  const outcomes = await Promise.allSettled(Array.from({ length: count }, send));
  const elapsed = performance.now() - started;
  await emu.close();
  return { elapsed, n429: statuses.filter((s) => s === 429).length, failed: outcomes.filter((o) => o.status === "rejected").length };
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
  for (let i = 0; i < 3; i++)
    tokenRuns.push(await burst({ tier: "M", requests: 10_000, tokens: 1200, count: 60, windowMs, estimatedTokens: 60 }));
  rows.push({
    name: "burst of 60 requests (~56 tokens each) over a 1200 tokens/window limit",
    median_ms: median(tokenRuns.map((r) => r.elapsed)),
    ratio: median(tokenRuns.map((r) => Math.min(1, r.ideal / r.elapsed))),
    anchor: "share of the token limit used (goal ≥ 0.95)",
    note: `429s: ${tokenRuns.map((r) => r.n429).join("/")} (goal 0); the client reserves 60 tokens a request`,
  });
  const calls = 8;
  const ours = await tokenBurst("estimate", calls);
  const bare = await tokenBurst("no estimate", calls);
  const sdk = await tokenBurst("openai SDK", calls);
  const said = (r: typeof ours) => `${r.n429} 429s, ${r.failed} failed, ${(r.elapsed / 1000).toFixed(1)} s`;
  rows.push({
    name: `token limit: ${calls} chat calls at once (~100 tokens each) over a 400 tokens/1.5 s window, request window 60 s`,
    median_ms: ours.elapsed,
    ratio: ours.elapsed / sdk.elapsed,
    anchor: "openai SDK (time)",
    note: `one run each; ChatService with its token estimate: ${said(ours)} (goal 0 429s); the stack without an estimate: ${said(bare)}; openai SDK: ${said(sdk)}`,
  });
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await benchPacing());
}
