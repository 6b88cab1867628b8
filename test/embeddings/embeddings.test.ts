/**
 * ServiceEmbeddings against the emulator over loopback: what the class promises (shape, determinism, similarity
 * that finds the right document, base64 = float, batching to the service's limit, order kept under concurrency,
 * strings only on the wire, bad input refused with no request, usage and cost, no secrets), and the emulator's
 * /embeddings being as strict as the published description.
 */
import { inspect } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Embeddings } from "@langchain/core/embeddings";
import { ServiceEmbeddings, decodeBase64Float32, type EmbeddingsUsage } from "../../src/embeddings/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ServiceClient } from "../../src/client.js";
import { createServiceContext } from "../../src/http/context.js";
import { BadRequestError, InsufficientBalanceError, RateLimitError, ResponseFormatError, ValidationError } from "../../src/http/errors.js";

const KEY = "emb-secret-key-123";
let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({
    apiKeys: [
      { key: KEY, usd: 50 },
      { key: "poor-key", usd: 0, diem: 0 },
    ],
    rateLimits: { abuseMaxFailures: 10_000 },
  });
});
afterAll(async () => {
  await emu?.close();
});

/** A base fetch (under the stack) that keeps every /embeddings request body as sent. */
function recorder() {
  const bodies: Record<string, any>[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const url = String(input instanceof Request ? input.url : input);
    if (url.endsWith("/embeddings")) bodies.push(JSON.parse(String(init?.body)));
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      return await globalThis.fetch(input, init);
    } finally {
      inFlight--;
    }
  };
  return { bodies, fetch, maxInFlight: () => maxInFlight };
}

const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);

const CORPUS = [
  "USDC on Base has six decimals and the chain id 8453.",
  "The emulator signs reasoning details so altered thoughts are rejected.",
  "Cats sleep most of the day and hunt mice at night.",
  "A wallet tops up credit with an x402 payment when the balance runs out.",
];

describe("ServiceEmbeddings on the emulator", () => {
  it("is a LangChain Embeddings; vectors are unit length, deterministic, and retrieval finds the right document", async () => {
    const e = new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEY });
    expect(e).toBeInstanceOf(Embeddings);
    const docs = await e.embedDocuments(CORPUS);
    expect(docs).toHaveLength(CORPUS.length);
    for (const v of docs) {
      expect(v).toHaveLength(1024); // text-embedding-bge-m3's native dimensions
      expect(Math.abs(dot(v, v) - 1)).toBeLessThan(1e-5);
    }
    expect(await e.embedDocuments(CORPUS)).toEqual(docs);
    const queries: [string, number][] = [
      ["How many decimals does USDC have on Base?", 0],
      ["what happens to altered reasoning details", 1],
      ["when do cats hunt mice", 2],
      ["my wallet balance ran out: top up credit", 3],
    ];
    for (const [query, want] of queries) {
      const q = await e.embedQuery(query);
      const scores = docs.map((d) => dot(d, q));
      expect(scores.indexOf(Math.max(...scores)), query).toBe(want);
    }
  });

  it("base64 decodes to exactly the float vectors; dimensions shortens them", async () => {
    const rec = recorder();
    const asFloat = new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEY, encodingFormat: "float", fetch: rec.fetch });
    const asBase64 = new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEY, encodingFormat: "base64", fetch: rec.fetch });
    const f = await asFloat.embedDocuments(CORPUS);
    const b = await asBase64.embedDocuments(CORPUS);
    expect(b).toEqual(f);
    expect(rec.bodies.map((x) => x.encoding_format)).toEqual(["float", "base64"]);

    const short = new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEY, model: "text-embedding-3-small", dimensions: 64 });
    const [v] = await short.embedDocuments([CORPUS[0]!]);
    expect(v).toHaveLength(64);
    // little-endian float32, as the published description says
    const bytes = Buffer.alloc(8);
    bytes.writeFloatLE(0.5, 0);
    bytes.writeFloatLE(-1.25, 4);
    expect(decodeBase64Float32(bytes.toString("base64"))).toEqual([0.5, -1.25]);
  });

  it("sends 1,000 texts in ceil(1000 / batchSize) requests, strings only, order kept under concurrency", async () => {
    const texts = Array.from({ length: 1000 }, (_, i) => `text number ${i} about topic ${i % 7}`);
    const rec = recorder();
    const one = new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEY, fetch: rec.fetch, dimensions: undefined, encodingFormat: "base64" });
    const reference = await one.embedDocuments(texts);
    expect(rec.bodies).toHaveLength(Math.ceil(1000 / 2048)); // one request: the service's limit is 2048
    expect(one.lastUsage?.requests).toBe(1);

    // slow, jittered answers so that batches finish out of order
    emu.setFaults({ latencyMs: [0, 40], paths: ["/embeddings"], seed: 7 });
    try {
      const rec2 = recorder();
      const many = new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEY, fetch: rec2.fetch, batchSize: 64, maxConcurrency: 5 });
      const got = await many.embedDocuments(texts);
      expect(rec2.bodies).toHaveLength(Math.ceil(1000 / 64));
      expect(rec2.maxInFlight()).toBe(5); // bounded by the AsyncCaller
      expect(got).toEqual(reference);
      // strings only: every input of every request is a non-empty string, in order
      expect(rec2.bodies.flatMap((b) => b.input)).toEqual(texts);
      for (const b of rec2.bodies) expect(b.input.every((x: unknown) => typeof x === "string")).toBe(true);
      expect(many.lastUsage?.requests).toBe(16);
    } finally {
      emu.setFaults({});
    }
  });

  it("places vectors by `data[].index`, whatever order the response lists them in", async () => {
    const reverse = async (input: string | URL | Request, init?: RequestInit) => {
      const res = await globalThis.fetch(input, init);
      const body = (await res.json()) as { data: unknown[] };
      body.data.reverse();
      return new Response(JSON.stringify(body), { status: res.status, headers: { "content-type": "application/json" } });
    };
    const plain = await new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEY }).embedDocuments(CORPUS);
    const reversed = await new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEY, fetch: reverse }).embedDocuments(CORPUS);
    expect(reversed).toEqual(plain);
  });

  it("refuses bad input before any request", async () => {
    const rec = recorder();
    const e = new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEY, fetch: rec.fetch });
    await expect(e.embedDocuments(["ok", 42 as unknown as string])).rejects.toBeInstanceOf(ValidationError);
    await expect(e.embedDocuments([[1, 2, 3] as unknown as string])).rejects.toThrow(/token arrays/);
    await expect(e.embedDocuments(["ok", ""])).rejects.toBeInstanceOf(ValidationError);
    await expect(e.embedDocuments("not an array" as unknown as string[])).rejects.toBeInstanceOf(ValidationError);
    await expect(e.embedQuery(undefined as unknown as string)).rejects.toBeInstanceOf(ValidationError);
    expect(await e.embedDocuments([])).toEqual([]);
    expect(rec.bodies).toHaveLength(0);
    expect(e.lastUsage?.requests).toBe(0);

    for (const bad of [
      { model: "" },
      { model: "  " },
      { dimensions: 0 },
      { dimensions: 1.5 },
      { batchSize: 2049 },
      { batchSize: 0 },
      { encodingFormat: "hex" },
      { maxConcurrency: 0 },
    ]) {
      expect(
        () => new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEY, fetch: rec.fetch, ...(bad as object) }),
        JSON.stringify(bad),
      ).toThrow(ValidationError);
    }
    expect(rec.bodies).toHaveLength(0);
  });

  it("surfaces usage, headers and cost; charges the same ledger as chat", async () => {
    const seen: EmbeddingsUsage[] = [];
    const e = new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEY, onUsage: (u) => seen.push(u) });
    const account = emu.account(KEY)!;
    const before = emu.ledger.available(account);
    const charges = emu.ledger.totals(account).charges;
    const texts = Array.from({ length: 300 }, (_, i) => `a somewhat longer text ${i} so that the bill is above a micro dollar`);
    const { usage } = await e.embedWithUsage(texts);
    expect(seen).toEqual([usage]);
    expect(e.lastUsage).toBe(usage);
    expect(usage.promptTokens).toBeGreaterThan(300 * 10);
    expect(usage.totalTokens).toBe(usage.promptTokens);
    expect(usage.model).toBe("text-embedding-bge-m3");
    expect(usage.headers[0]?.model?.id).toBe("text-embedding-bge-m3");
    // the embedding bucket of spec part 8: 500 requests per minute, no token limit
    expect(usage.headers[0]?.rateLimit?.limitRequests).toBe(500);
    expect(usage.headers[0]?.balance?.usd).toBeTypeOf("number");
    const cost = await e.estimateCost();
    expect(cost!.usd).toBeCloseTo((usage.promptTokens * 0.15) / 1e6, 12);
    expect(emu.ledger.totals(account).charges).toBe(charges + 1);
    const entry = account.entries.at(-1)!;
    expect(entry).toMatchObject({ type: "CHARGE", kind: "embedding", modelId: "text-embedding-bge-m3" });
    expect(before - emu.ledger.available(account)).toBeCloseTo(cost!.usd, 6);
  });

  it("prices come from the shared /models records: one read for every object on the base URL, the client's records the same", async () => {
    const context = createServiceContext(); // its own: no list another test read
    let reads = 0;
    const fetch = async (input: string | URL | Request, init?: RequestInit) => {
      if (String(input).includes("/models?type=embedding")) reads++;
      return globalThis.fetch(input, init);
    };
    const objects = [
      new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEY, fetch, context }),
      new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEY, fetch, context }),
    ];
    const usage: EmbeddingsUsage = { promptTokens: 1000, totalTokens: 1000, requests: 1, model: "text-embedding-3-small", headers: [] };
    const costs = await Promise.all(objects.map((o) => o.estimateCost(usage)));
    expect(costs.map((c) => c!.usd)).toEqual([(1000 * 0.02) / 1e6, (1000 * 0.02) / 1e6]);
    await objects[0]!.estimateCost(usage);
    expect(reads).toBe(1);
    expect(new ServiceClient({ baseUrl: emu.url, context }).models("embedding").pricing("text-embedding-3-small")?.input?.usd).toBe(0.02);
  });

  it("answers an API key with no balance the plain 402, like chat: InsufficientBalanceError", async () => {
    const e = new ServiceEmbeddings({ baseUrl: emu.url, apiKey: "poor-key" });
    const err = await e.embedQuery("hello").catch((x: unknown) => x);
    expect(err).toBeInstanceOf(InsufficientBalanceError);
    expect(err).toMatchObject({ status: 402 });
  });

  it("never puts the key in toJSON, inspect or errors", async () => {
    const e = new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEY, model: "no-such-embedding-model" });
    expect(JSON.stringify(e)).not.toContain(KEY);
    expect(inspect(e, { depth: 10 })).not.toContain(KEY);
    expect(JSON.stringify(e)).toContain("no-such-embedding-model");
    const err = await e.embedQuery("hello").catch((x) => x);
    expect(err).toBeInstanceOf(BadRequestError);
    for (const s of [String(err), err.stack, JSON.stringify(err), inspect(err, { depth: 10 })]) expect(s).not.toContain(KEY);
  });

  it("refuses a malformed response with a typed error", async () => {
    const short = async () =>
      new Response(JSON.stringify({ object: "list", data: [], model: "m", usage: { prompt_tokens: 1, total_tokens: 1 } }), {
        headers: { "content-type": "application/json" },
      });
    const e = new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEY, fetch: short });
    await expect(e.embedQuery("hello")).rejects.toBeInstanceOf(ResponseFormatError);
  });
});

describe("the emulator's POST /embeddings", () => {
  const post = (body: unknown, key = KEY) =>
    fetch(`${emu.url}/embeddings`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("answers the published shape", async () => {
    const res = await post({ model: "text-embedding-bge-m3", input: "The quick brown fox", encoding_format: "float" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(Object.keys(body).sort()).toEqual(["data", "model", "object", "usage"]);
    expect(body).toMatchObject({ object: "list", model: "text-embedding-bge-m3", usage: { prompt_tokens: 4, total_tokens: 4 } });
    expect(body.data[0]).toMatchObject({ object: "embedding", index: 0 });
    expect(body.data[0].embedding).toHaveLength(1024);
  });

  it("is as strict as the published schema", async () => {
    const m = "text-embedding-bge-m3";
    const cases: [string, unknown][] = [
      ["token array", { model: m, input: [1, 2, 3] }],
      ["array of token arrays", { model: m, input: [[1, 2], [3]] }],
      ["empty string", { model: m, input: "" }],
      ["empty string in an array", { model: m, input: ["a", ""] }],
      ["empty array", { model: m, input: [] }],
      ["2049 inputs", { model: m, input: Array.from({ length: 2049 }, () => "x") }],
      ["unknown member (closed schema)", { model: m, input: "x", stream: true }],
      ["bad encoding_format", { model: m, input: "x", encoding_format: "hex" }],
      ["dimensions 0", { model: m, input: "x", dimensions: 0 }],
      ["custom dimensions on a model without them", { model: m, input: "x", dimensions: 256 }],
      ["dimensions above native", { model: "text-embedding-3-small", input: "x", dimensions: 4096 }],
      ["no input", { model: m }],
      ["a chat model", { model: "emu-xs", input: "x" }],
      ["no model", { input: "x" }],
      ["too many tokens", { model: m, input: "word ".repeat(9000) }],
    ];
    for (const [name, body] of cases) {
      const res = await post(body);
      expect(res.status, name).toBe(400);
      expect(((await res.json()) as { error?: string }).error, name).toBeTypeOf("string");
    }
    const ok = await post({ model: m, input: ["a", "b"], user: "ignored", encoding_format: "base64", dimensions: 1024 });
    expect(ok.status).toBe(200);
  });

  it("token arrays from a client come back as a typed 400", async () => {
    // what LangChain's Python OpenAIEmbeddings sends by default
    const tokens = async (input: string | URL | Request, init?: RequestInit) => {
      const body = JSON.parse(String(init?.body));
      body.input = [[9906, 1917]];
      return globalThis.fetch(input, { ...init, body: JSON.stringify(body) });
    };
    const e = new ServiceEmbeddings({ baseUrl: emu.url, apiKey: KEY, fetch: tokens });
    const err = await e.embedQuery("hello world").catch((x) => x);
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err.message).toMatch(/token arrays/i);
  });

  it("lists its embedding models at /models?type=embedding", async () => {
    const res = await fetch(`${emu.url}/models?type=embedding`);
    const body = (await res.json()) as { data: any[] };
    expect(body.data.map((m) => m.id)).toContain("text-embedding-bge-m3");
    for (const m of body.data) {
      expect(m.type).toBe("embedding");
      expect(m.model_spec.embeddingDimensions).toBeGreaterThan(0);
      expect(m.model_spec.pricing.input.usd).toBeGreaterThan(0);
    }
    const text = (await (await fetch(`${emu.url}/models?type=text`)).json()) as { data: any[] };
    expect(text.data.some((m) => m.type === "embedding")).toBe(false);
    // and their limits at /api_keys/rate_limits: requests per minute only (spec part 8)
    const limits = await new ServiceClient({ baseUrl: emu.url, apiKey: KEY }).getRateLimits();
    expect(limits.rateLimits?.find((r) => r.apiModelId === "text-embedding-bge-m3")?.rateLimits).toEqual([{ type: "RPM", amount: 500 }]);
  });

  it("rate-limits embeddings in their own bucket (spec part 8)", async () => {
    const limited = await startEmulator({ apiKeys: ["k"], rateLimits: { types: { embedding: { requests: 2 } } } });
    try {
      const e = new ServiceEmbeddings({ baseUrl: limited.url, apiKey: "k", retry: false, pacing: false });
      await e.embedQuery("one");
      await e.embedQuery("two");
      expect(e.lastUsage?.headers[0]?.rateLimit?.remainingRequests).toBe(0);
      await expect(e.embedQuery("three")).rejects.toBeInstanceOf(RateLimitError);
    } finally {
      await limited.close();
    }
  });
});
