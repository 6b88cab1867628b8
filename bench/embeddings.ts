/**
 * `embedDocuments` of 1,000 short texts on the emulator (loopback), `ServiceEmbeddings` against LangChain's
 * `OpenAIEmbeddings` pointed at the same emulator; and the requests each sends for those 1,000 texts.
 *
 * `OpenAIEmbeddings` (JS, @langchain/openai 1.5) sends strings as it is: the token-array trap the published
 * description warns about is the Python class's (`check_embedding_ctx_length=True`); the JS class has no such
 * option and no tokenizer step. It is run two ways: like-for-like (`batchSize: 2048`, one request, base64 like
 * ours: the ratio measures the clients) and with its defaults (`batchSize: 512`, `maxConcurrency: 2`: what a
 * drop-in user gets). Both decode base64 (the `openai` SDK asks for base64 when `encodingFormat` is unset).
 * Ways interleave within each round (order rotated); medians of the rounds.
 *
 *   npx tsx bench/embeddings.ts [rounds]
 */
import { pathToFileURL } from "node:url";
import { OpenAIEmbeddings } from "@langchain/openai";
import { ServiceEmbeddings } from "../src/embeddings/index.js";
import { startEmulator } from "langchain-service-emulator";
import { median, type BenchRow } from "./types.js";

const TEXTS = 1000;
const MODEL = "text-embedding-bge-m3";
const TOPICS = ["wallet", "payment", "retrieval", "chain", "token", "model", "search", "image", "speech", "credit"];

function shortTexts(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `Note ${i}: the ${TOPICS[i % TOPICS.length]} of item ${i % 37} changed on day ${i % 11}.`);
}

export async function benchEmbeddings(opts: { rounds?: number } = {}): Promise<BenchRow[]> {
  const rounds = opts.rounds ?? 9;
  const emu = await startEmulator({ apiKeys: [{ key: "bench-key", usd: 1000 }], rateLimits: { enabled: false } });
  try {
    const texts = shortTexts(TEXTS);
    const requests: Record<string, number> = {};
    const counting = (name: string) => (input: string | URL | Request, init?: RequestInit) => {
      if (String(input instanceof Request ? input.url : input).endsWith("/embeddings")) requests[name] = (requests[name] ?? 0) + 1;
      return globalThis.fetch(input, init);
    };
    const ours = new ServiceEmbeddings({ model: MODEL, apiKey: "bench-key", baseUrl: emu.url, fetch: counting("ServiceEmbeddings") });
    const sameBatch = new OpenAIEmbeddings({
      model: MODEL,
      apiKey: "bench-key",
      batchSize: 2048,
      maxRetries: 0,
      configuration: { baseURL: emu.url, fetch: counting("OpenAIEmbeddings (batchSize 2048)") },
    });
    const defaults = new OpenAIEmbeddings({
      model: MODEL,
      apiKey: "bench-key",
      maxRetries: 0,
      configuration: { baseURL: emu.url, fetch: counting("OpenAIEmbeddings (defaults)") },
    });
    const ways: Record<string, { run: () => Promise<number[][]> }> = {
      ServiceEmbeddings: { run: () => ours.embedDocuments(texts) },
      "OpenAIEmbeddings (batchSize 2048)": { run: () => sameBatch.embedDocuments(texts) },
      "OpenAIEmbeddings (defaults)": { run: () => defaults.embedDocuments(texts) },
    };
    const names = Object.keys(ways);
    // warm-up (JIT, sockets), and a check that every way returns the same vectors
    const reference = await ways.ServiceEmbeddings!.run();
    for (const name of names) {
      const got = await ways[name]!.run();
      if (got.length !== TEXTS || got[TEXTS - 1]!.some((x, i) => x !== reference[TEXTS - 1]![i]))
        throw new Error(`${name} returned other vectors`);
    }
    for (const k of names) requests[k] = 0;
    const samples: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
    for (let r = 0; r < rounds; r++) {
      for (let j = 0; j < names.length; j++) {
        const name = names[(j + r) % names.length]!;
        const t0 = performance.now();
        await ways[name]!.run();
        samples[name]!.push(performance.now() - t0);
      }
    }
    const ms = Object.fromEntries(names.map((k) => [k, median(samples[k]!)]));
    const perCall = (name: string) => requests[name]! / rounds;
    const anchor = ms["OpenAIEmbeddings (batchSize 2048)"]!;
    const rows: BenchRow[] = names.map((name) => ({
      name: `embedDocuments(${TEXTS} short texts): ${name}`,
      median_ms: Number(ms[name]!.toFixed(2)),
      ratio: Number((ms[name]! / anchor).toFixed(2)),
      anchor: name === "ServiceEmbeddings" ? "goal <= 1.0x OpenAIEmbeddings (strings, same batch)" : undefined,
      note: `${perCall(name)} request(s) per call; ${(ms[name]! / ms["OpenAIEmbeddings (defaults)"]!).toFixed(2)}x OpenAIEmbeddings defaults`,
    }));
    rows.push({
      name: `requests for ${TEXTS} texts: ServiceEmbeddings`,
      median_ms: NaN,
      ratio: perCall("ServiceEmbeddings") / Math.ceil(TEXTS / 2048),
      anchor: `goal: ceil(${TEXTS}/2048) = ${Math.ceil(TEXTS / 2048)} (the batch limit)`,
      note: `${perCall("ServiceEmbeddings")} request(s); OpenAIEmbeddings defaults send ${perCall("OpenAIEmbeddings (defaults)")}`,
    });
    return rows;
  } finally {
    await emu.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const rounds = Number(process.argv[2] ?? 9);
  console.table(await benchEmbeddings({ rounds }));
}
