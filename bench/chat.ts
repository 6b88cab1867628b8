/**
 * ChatService overhead, in one run on loopback: sequential `invoke` and consuming a 1000-chunk stream, four
 * ways — `ChatService`, the raw `openai` SDK, `ChatOpenAI`, and a bare `fetch` (with a plain SSE split +
 * `JSON.parse` on the stream); `invoke` also a bare POST over `node:http`, the floor on Node (ChatService's base
 * there is undici's `request()`, src/http/base.node.ts: fetch itself costs more than a whole ChatService call). Ratios are against the
 * raw SDK, which sends with fetch. Then what each feature costs when it is on,
 * as a ratio to the API-key case, interleaved with it: a wallet with credit (SIWX signed per request), a
 * `RedisStore` (pacing and guard windows in Redis; skipped without a redis-server), a `SpendBudget`.
 *
 * Method (same as the anchors'): a fixed-answer loopback server that returns a prebuilt JSON completion and a
 * prebuilt 1000-chunk SSE body, so the numbers measure the clients, not an engine. Medians of several rounds.
 *
 *   npx tsx bench/chat.ts [iterations]
 */
import { Agent, createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import OpenAI from "openai";
import { ChatOpenAI } from "@langchain/openai";
import { ChatService } from "../src/chat/index.js";
import { EvmWallet } from "../src/evm/index.js";
import { SpendBudget } from "../src/spend/budget.js";
import { RedisStore } from "../src/redis/index.js";
import { fleetRedis } from "../examples/fleet.js";

import { median, type BenchRow } from "./types.js";

export type { BenchRow };

const STREAM_CHUNKS = 1000;

export function fixedServer(): Promise<{ url: string; server: Server }> {
  const completion = JSON.stringify({
    id: "chatcmpl-bench",
    object: "chat.completion",
    created: 1,
    model: "bench",
    choices: [{ index: 0, finish_reason: "stop", logprobs: null, message: { role: "assistant", content: "Echo: hello" } }],
    usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 },
    cost: { usd: 0.00001, diem: 0 },
  });
  const base = { id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1, model: "bench" };
  let sse = `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] })}\n\n`;
  for (let i = 0; i < STREAM_CHUNKS; i++) {
    sse += `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: `w${i} ` }, finish_reason: null }] })}\n\n`;
  }
  sse += `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n`;
  sse += `data: ${JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: 10, completion_tokens: STREAM_CHUNKS, total_tokens: 10 + STREAM_CHUNKS }, cost: { usd: 0.001, diem: 0 } })}\n\n`;
  sse += "data: [DONE]\n\n";
  const sseBody = Buffer.from(sse);
  const jsonBody = Buffer.from(completion);
  // the model's published prices and limits, for a spend budget's worst case
  const models = Buffer.from(
    JSON.stringify({
      object: "list",
      data: [
        {
          id: "bench",
          object: "model",
          type: "text",
          model_spec: {
            availableContextTokens: 32_768,
            maxCompletionTokens: 4096,
            pricing: { input: { usd: 0.5, diem: 0.5 }, output: { usd: 2, diem: 2 } },
          },
        },
      ],
    }),
  );
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.url?.includes("/models")) {
        res.writeHead(200, { "content-type": "application/json", "content-length": models.length });
        res.end(models);
        return;
      }
      const stream = Buffer.concat(chunks).includes('"stream":true');
      if (stream) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        // a few writes, like a real server flushing as it goes
        const step = Math.ceil(sseBody.length / 16);
        for (let i = 0; i < sseBody.length; i += step) res.write(sseBody.subarray(i, i + step));
        res.end();
      } else {
        res.writeHead(200, { "content-type": "application/json", "content-length": jsonBody.length });
        res.end(jsonBody);
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ url: `http://127.0.0.1:${port}/api/v1`, server });
    }),
  );
}

/**
 * Per-call time of each way: `rounds` rounds of `n` sequential calls, the ways interleaved within each round
 * (order rotated) so that load from other processes hits them alike; median of the rounds' means.
 */
export async function timeWays(ways: Record<string, () => Promise<unknown>>, n: number, rounds: number): Promise<Record<string, number>> {
  const names = Object.keys(ways);
  for (const name of names) for (let i = 0; i < Math.min(50, n); i++) await ways[name]!(); // warm-up: JIT, sockets
  const samples: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
  for (let r = 0; r < rounds; r++) {
    for (let j = 0; j < names.length; j++) {
      const name = names[(j + r) % names.length]!;
      const fn = ways[name]!;
      const t0 = performance.now();
      for (let i = 0; i < n; i++) await fn();
      samples[name]!.push((performance.now() - t0) / n);
    }
  }
  return Object.fromEntries(names.map((k) => [k, median(samples[k]!)]));
}

/** A bare POST over node:http with a keep-alive agent, the body read whole and parsed (the floor on Node). */
function bareNodeHttp(url: string, body: string, agent: Agent): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", authorization: "Bearer k", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on("data", (c: Buffer) => parts.push(c));
        res.on("end", () => resolve(JSON.parse(Buffer.concat(parts).toString())));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** A plain SSE read: split on blank lines, JSON.parse each `data:` payload (the floor for streams). */
async function bareStream(url: string, body: string): Promise<number> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer k" }, body });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let at: number;
    while ((at = buf.indexOf("\n\n")) !== -1) {
      const event = buf.slice(0, at);
      buf = buf.slice(at + 2);
      const data = event.slice(6);
      if (data === "[DONE]") continue;
      JSON.parse(data);
      n++;
    }
  }
  return n;
}

export async function benchChat(opts: { iterations?: number; streams?: number; rounds?: number } = {}): Promise<BenchRow[]> {
  const iterations = opts.iterations ?? 1000;
  const rounds = opts.rounds ?? 5;
  const streams = opts.streams ?? 20;
  const { url, server } = await fixedServer();
  try {
    const messages = [{ role: "user" as const, content: "hello" }];
    const sdk = new OpenAI({ apiKey: "k", baseURL: url, maxRetries: 0 });
    const chatOpenAI = new ChatOpenAI({ model: "bench", apiKey: "k", configuration: { baseURL: url }, maxRetries: 0 });
    const chatService = new ChatService({ model: "bench", apiKey: "k", baseUrl: url });
    const jsonBody = JSON.stringify({ model: "bench", messages });
    const streamBody = JSON.stringify({ model: "bench", messages, stream: true });
    const endpoint = `${url}/chat/completions`;
    const perInvoke = Math.max(1, Math.floor(iterations / rounds)); // `iterations` sequential invokes per way in all

    const agent = new Agent({ keepAlive: true });
    const invoke = await timeWays(
      {
        "bare node:http": () => bareNodeHttp(endpoint, jsonBody, agent),
        "bare fetch": async () => {
          const r = await fetch(endpoint, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: "Bearer k" },
            body: jsonBody,
          });
          return JSON.parse(await r.text());
        },
        "openai SDK": () => sdk.chat.completions.create({ model: "bench", messages }),
        ChatOpenAI: () => chatOpenAI.invoke("hello"),
        ChatService: () => chatService.invoke("hello"),
      },
      perInvoke,
      rounds,
    );

    const consume = async (it: AsyncIterable<unknown>) => {
      let n = 0;
      for await (const _ of it) n++;
      return n;
    };
    const stream = await timeWays(
      {
        "bare fetch": () => bareStream(endpoint, streamBody),
        "openai SDK": async () => consume(await sdk.chat.completions.create({ model: "bench", messages, stream: true })),
        ChatOpenAI: async () => consume(await chatOpenAI.stream("hello")),
        ChatService: async () => consume(await chatService.stream("hello")),
      },
      streams,
      rounds,
    );

    // how many chunks each client hands its consumer for the 1000 events (one that joined events would look faster)
    const delivered: Record<string, number> = {
      "openai SDK": await consume(await sdk.chat.completions.create({ model: "bench", messages, stream: true })),
      ChatOpenAI: await consume(await chatOpenAI.stream("hello")),
      ChatService: await consume(await chatService.stream("hello")),
    };

    const anchors: Record<string, Record<string, string>> = {
      invoke: {
        ChatOpenAI: "1.20x SDK",
        "bare fetch": "SDK = 1.67x fetch",
        ChatService: "goal <= 0.9x SDK",
        "bare node:http": "the floor on Node",
      },
      stream: { ChatOpenAI: "1.81x SDK", "bare fetch": "SDK ~ 5x fetch", ChatService: "goal <= 1.0x SDK" },
    };
    const rows: BenchRow[] = [];
    for (const [kind, times] of [
      ["invoke", invoke],
      ["stream", stream],
    ] as const) {
      const sdkMs = times["openai SDK"]!;
      const floor = times["bare fetch"]!;
      for (const [name, ms] of Object.entries(times)) {
        rows.push({
          name: `${kind} (${kind === "stream" ? `${STREAM_CHUNKS} chunks` : "sequential"}): ${name}`,
          median_ms: Number(ms.toFixed(4)),
          ratio: Number((ms / sdkMs).toFixed(2)),
          anchor: anchors[kind]?.[name],
          note: `${(ms / floor).toFixed(2)}x bare fetch${kind === "stream" ? `, ${((ms * 1000) / STREAM_CHUNKS).toFixed(2)} us/event${delivered[name] ? `, ${delivered[name]} chunks delivered` : ""}` : ""}`,
        });
      }
    }
    rows.push(...(await featureRows(url, rounds, perInvoke, streams)));
    return rows;
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/**
 * What a feature costs when it is on: the same invoke and stream, interleaved with the API-key case, ratio to it.
 * The fixed server answers every request, so the wallet always "has credit" (its cost is the SIWX signature each
 * request carries, and the payment layer's bookkeeping).
 */
async function featureRows(url: string, rounds: number, perInvoke: number, streams: number): Promise<BenchRow[]> {
  const consume = async (it: AsyncIterable<unknown>) => {
    let n = 0;
    for await (const _ of it) n++;
    return n;
  };
  const cases: Record<string, ChatService> = {
    "API key": new ChatService({ model: "bench", apiKey: "k", baseUrl: url }),
    "wallet with credit": new ChatService({ model: "bench", wallet: EvmWallet.random(), baseUrl: url }),
    SpendBudget: new ChatService({ model: "bench", apiKey: "k-budget", baseUrl: url, budget: new SpendBudget({ maxUsd: 1e9 }) }),
  };
  let redis: Awaited<ReturnType<typeof fleetRedis>> | undefined;
  let store: RedisStore | undefined;
  try {
    redis = await fleetRedis();
    store = new RedisStore({ url: redis.url, prefix: `bench-chat-${Date.now()}:` });
    cases.RedisStore = new ChatService({ model: "bench", apiKey: "k-redis", baseUrl: url, store });
  } catch {
    redis = undefined; // no redis-server: that case is left out (its row says so)
  }
  try {
    const invoke = await timeWays(
      Object.fromEntries(Object.entries(cases).map(([k, m]) => [k, () => m.invoke("hello")])),
      perInvoke,
      rounds,
    );
    const stream = await timeWays(
      Object.fromEntries(Object.entries(cases).map(([k, m]) => [k, async () => consume(await m.stream("hello"))])),
      streams,
      rounds,
    );
    const rows: BenchRow[] = [];
    for (const [kind, times] of [
      ["invoke", invoke],
      ["stream", stream],
    ] as const) {
      const base = times["API key"]!;
      for (const [name, ms] of Object.entries(times)) {
        if (name === "API key") continue;
        rows.push({
          name: `${kind} (${kind === "stream" ? `${STREAM_CHUNKS} chunks` : "sequential"}): ChatService, ${name}`,
          median_ms: Number(ms.toFixed(4)),
          ratio: Number((ms / base).toFixed(2)),
          anchor: `API-key ChatService: ${base.toFixed(3)} ms`,
          note:
            name === "wallet with credit"
              ? "a fresh SIWX signature per request"
              : name === "RedisStore"
                ? "pacing and guard windows in Redis on loopback"
                : "worst case reserved, cost settled",
        });
      }
    }
    if (!redis)
      rows.push({
        name: "ChatService, RedisStore",
        median_ms: NaN,
        ratio: NaN,
        note: "no redis-server on PATH and no REDIS_URL: not measured",
      });
    return rows;
  } finally {
    await store?.close();
    await redis?.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const iterations = Number(process.argv[2] ?? 1000);
  const rows = await benchChat({ iterations });
  console.log(
    `ChatService bench: fixed-answer loopback server, ${iterations} sequential invokes per way, streams of ${STREAM_CHUNKS} chunks; ratio = vs raw openai SDK`,
  );
  console.table(rows);
}
