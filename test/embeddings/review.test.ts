/**
 * Review findings on ServiceEmbeddings and the emulator's /embeddings (each test failed before its fix):
 * - an abort during `embedWithUsage` surfaced LangChain's AsyncCaller race (the raw DOMException), not the
 *   stack's typed AbortError that every other face gives;
 * - vectors of different lengths from different batches of one call were returned mixed (a vector store would
 *   store them and fail later, or silently compare garbage);
 * - the emulator's /embeddings took a body of any content type; the published description answers 415.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceEmbeddings } from "../../src/embeddings/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { AbortError, ResponseFormatError } from "../../src/http/errors.js";
import { hostileServers, json } from "../hostile/server.js";

const KEY = "emb-review-key";
let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: [{ key: KEY, usd: 5 }] });
});
afterAll(async () => {
  await emu?.close();
});

const hostile = hostileServers();

describe("ServiceEmbeddings (review)", () => {
  it("an abort while a batch is in flight is the stack's typed AbortError", async () => {
    const s = await hostile(() => {
      /* never answers */
    });
    const e = new ServiceEmbeddings({ baseUrl: s.url, apiKey: "k", retry: false });
    const controller = new AbortController();
    const pending = e.embedWithUsage(["a", "b"], { signal: controller.signal }).catch((x) => x);
    await new Promise((r) => setTimeout(r, 50));
    controller.abort();
    expect(await pending).toBeInstanceOf(AbortError);
  });

  it("refuses vectors of different lengths across the batches of one call", async () => {
    const s = await hostile((req, res) => {
      const width = req.body.input === "first" ? 3 : 2;
      json(res, {
        object: "list",
        model: "m",
        data: [{ object: "embedding", index: 0, embedding: Array.from({ length: width }, () => 0.5) }],
        usage: { prompt_tokens: 1, total_tokens: 1 },
      });
    });
    const e = new ServiceEmbeddings({ baseUrl: s.url, apiKey: "k", retry: false, batchSize: 1, encodingFormat: "float" });
    await expect(e.embedDocuments(["first", "second"])).rejects.toBeInstanceOf(ResponseFormatError);
  });
});

describe("the emulator's POST /embeddings (review)", () => {
  it("answers 415 to a body that is not application/json, as published", async () => {
    const res = await fetch(`${emu.url}/embeddings`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "text/plain" },
      body: JSON.stringify({ model: "text-embedding-bge-m3", input: "hello" }),
    });
    expect(res.status).toBe(415);
  });
});
