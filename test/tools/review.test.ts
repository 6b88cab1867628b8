/**
 * Review findings on the web, image and speech tools (each test failed before its fix):
 * - the URL guard of web_scrape let through hosts with more than one trailing dot (`localhost..`), IPv4-translated
 *   IPv6 (`::ffff:0:a.b.c.d`), local-use NAT64 (`64:ff9b:1::/48`) and Teredo (`2001::/32`, an IPv4 inside);
 * - web_search handed the model every result the service sent (not `limit` of them) with titles uncapped;
 * - createSpeech read the audio with a bare `arrayBuffer()`: a body cut short was an untyped `TypeError`;
 * - the default-image-model (and voices) lookup shared by concurrent runs carried the first run's signal, so
 *   aborting that run failed every other run waiting on it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ServiceClient } from "../../src/client.js";
import { ResponseFormatError } from "../../src/http/errors.js";
import { assertPublicHttpUrl, createSpeech, UnsafeUrlError, webScrape, WebScrapeTool, WebSearchTool } from "../../src/tools/index.js";
import { hostileServers, json } from "../hostile/server.js";
import { callTool, countingClient } from "./helpers.js";

const KEY = "tools-review-key";
let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: [{ key: KEY, usd: 5, diem: 0 }] });
});
afterAll(async () => {
  await emu?.close();
});

const hostile = hostileServers();

describe("web_scrape URL guard (review)", () => {
  const BYPASSES = [
    "http://localhost../",
    "http://127.0.0.1../",
    "http://a.b.localhost../",
    "http://metadata.google.internal../computeMetadata/v1/",
    "http://127.0.0.1.nip.io../",
    "http://foo.localdomain../",
    "http://[::ffff:0:127.0.0.1]/",
    "http://[::ffff:0:a9fe:a9fe]/",
    "http://[64:ff9b:1::a00:1]/",
    "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
  ];

  it(`refuses ${BYPASSES.length} more hostile forms (extra trailing dots, IPv4-translated, local NAT64, Teredo) before any request`, async () => {
    const { client, total } = countingClient(emu, { apiKey: KEY });
    const tool = new WebScrapeTool({ client });
    for (const url of BYPASSES) {
      expect(() => assertPublicHttpUrl(url), url).toThrow(UnsafeUrlError);
      const { json } = await callTool(tool, "web_scrape", { url });
      expect(json.error?.code, url).toBe("INVALID_PARAMS");
      await expect(webScrape(client, url), url).rejects.toBeInstanceOf(UnsafeUrlError);
    }
    expect(total()).toBe(0);
  });

  it("still passes public names with one trailing dot and public IPv6", () => {
    for (const url of ["https://example.org./a", "http://[2606:4700:4700::1111]/", "http://[64:ff9b::808:808]/"]) {
      expect(() => assertPublicHttpUrl(url), url).not.toThrow();
    }
  });
});

describe("web_search output bound (review)", () => {
  it("hands the model at most `limit` results with capped titles, whatever the service sends", async () => {
    const s = await hostile(async (_req, res) =>
      json(res, {
        query: "q",
        results: Array.from({ length: 500 }, (_, i) => ({
          title: `T${i} ${"x".repeat(50_000)}`,
          url: `https://example.org/${i}`,
          content: "c",
          date: "2025-01-01",
        })),
      }),
    );
    const tool = new WebSearchTool({ client: new ServiceClient({ baseUrl: s.url, apiKey: "k", retry: false }) });
    const { json: out, text, artifact } = await callTool(tool, "web_search", { query: "q", limit: 3 });
    expect(out.results).toHaveLength(3);
    expect(text.length).toBeLessThan(3_000);
    expect(artifact.response.results).toHaveLength(500); // the raw response stays whole in the artifact
  });
});

describe("createSpeech body read (review)", () => {
  it("an audio body cut short is a typed ResponseFormatError, not a bare TypeError", async () => {
    const s = await hostile(async (_req, res) => {
      res.writeHead(200, { "content-type": "audio/wav", "content-length": "100000" });
      res.write(Buffer.alloc(1000));
      await new Promise((r) => setTimeout(r, 20));
      res.socket?.destroy();
    });
    const client = new ServiceClient({ baseUrl: s.url, apiKey: "k", retry: false });
    const err = await createSpeech(client, { input: "hello" }).catch((e) => e);
    expect(err).toBeInstanceOf(ResponseFormatError);
  });
});

describe("shared lookups of the media tools (review)", () => {
  it("one run's abort during the default-model lookup does not fail another run waiting on the same lookup", async () => {
    const { pictureFor } = await import("../../packages/langchain-service-emulator/src/media/png.js");
    const s = await hostile(async (req, res) => {
      if (req.url.includes("/models")) {
        await new Promise((r) => setTimeout(r, 150));
        json(res, {
          object: "list",
          data: [{ id: "img-default", object: "model", type: "image", created: 1, owned_by: "x", model_spec: { traits: ["default"] } }],
        });
      } else {
        json(res, {
          id: "generate-image-1",
          images: [pictureFor("p", 8, 8).toString("base64")],
          timing: { inferenceDuration: 1, inferencePreprocessingTime: 0, inferenceQueueTime: 0, total: 1 },
        });
      }
    });
    const { ImageGenerationTool } = await import("../../src/tools/index.js");
    const tool = new ImageGenerationTool({ client: new ServiceClient({ baseUrl: s.url, apiKey: "k", retry: false }) });
    const controller = new AbortController();
    const aborted = callTool(tool, "generate_image", { prompt: "first" }, { signal: controller.signal }).catch((e) => e);
    const other = callTool(tool, "generate_image", { prompt: "second" }).catch((e) => e);
    await new Promise((r) => setTimeout(r, 30));
    controller.abort();
    expect(await aborted).toBeInstanceOf(Error);
    const result = await other;
    expect(result).not.toBeInstanceOf(Error);
    expect(result.json.description).toContain("second");
  });
});

describe("web_scrape's page cache is bounded", () => {
  it("keeps a page to read on from, but not one over the character budget (read on by scraping again)", async () => {
    const sizes: Record<string, number> = { "https://example.org/small": 20_000, "https://example.org/huge": 5 * 1024 * 1024 };
    const svc = await hostile((req, res) => {
      const url = (req.body as { url: string }).url;
      json(res, { url, content: "word ".repeat(Math.ceil(sizes[url]! / 5)).slice(0, sizes[url]), format: "markdown" });
    });
    const tool = new WebScrapeTool({ client: new ServiceClient({ baseUrl: svc.url, apiKey: "k" }), maxChars: 8000 });
    for (const url of Object.keys(sizes)) {
      const first = await callTool(tool, "web_scrape", { url });
      const next = Number(/start: (\d+)/.exec(first.json.truncated)![1]);
      await callTool(tool, "web_scrape", { url, start: next });
    }
    const scrapes = (url: string) => svc.to("/augment/scrape").filter((r) => (r.body as { url: string }).url === url).length;
    expect(scrapes("https://example.org/small")).toBe(1);
    expect(scrapes("https://example.org/huge")).toBe(2);
  });
});
