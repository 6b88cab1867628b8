/**
 * web_search and web_scrape against the emulator over loopback: what the model reads and what rides in the
 * artifact, billing on the ledger, the cap with its hint (and reading on without a second paid scrape), the
 * model's mistakes answered as `{error}` text with zero requests, and the URL guard: every hostile URL form
 * refused before anything reaches the wire.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ValidationError } from "../../src/http/errors.js";
import { assertPublicHttpUrl, UnsafeUrlError, webScrape, webSearch, WebScrapeTool, WebSearchTool } from "../../src/tools/index.js";
import { callTool, countingClient } from "./helpers.js";

const KEY = "web-tools-key";
let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: [{ key: KEY, usd: 5, diem: 0 }] });
});
afterAll(async () => {
  await emu?.close();
});

describe("web_search", () => {
  it("hands the model compact results and keeps the raw response as the artifact; the call is charged", async () => {
    const { client, counts } = countingClient(emu, { apiKey: KEY });
    const tool = new WebSearchTool({ client });
    const before = emu.account(KEY)!.usd;
    const { json, artifact, text } = await callTool(tool, "web_search", { query: "x402 payment protocol", limit: 2, provider: "google" });
    expect(json.query).toBe("x402 payment protocol");
    expect(json.results[0]).toMatchObject({
      n: 1,
      title: "The x402 payment protocol",
      url: "https://example.org/x402",
      date: "2025-04-22",
    });
    expect(json.results.length).toBeLessThanOrEqual(2);
    expect(typeof json.results[0].snippet).toBe("string");
    expect(text.length).toBeLessThan(1200);
    expect(artifact.response.results[0]).toEqual({
      title: "The x402 payment protocol",
      url: "https://example.org/x402",
      content: expect.stringContaining("402 Payment Required"),
      date: "2025-04-22",
    });
    expect(counts["/augment/search"]).toBe(1);
    expect(emu.account(KEY)!.usd).toBeLessThan(before);
    expect(emu.account(KEY)!.entries.at(-1)).toMatchObject({ type: "CHARGE", kind: "web-search" });
  });

  it("snippets are capped; no results says so", async () => {
    const tool = new WebSearchTool({ client: countingClient(emu, { apiKey: KEY }).client, maxSnippetChars: 40 });
    const { json } = await callTool(tool, "web_search", { query: "Solana slots" });
    expect(json.results[0].snippet.length).toBeLessThanOrEqual(40);
    const none = await callTool(tool, "web_search", { query: "zzqx nothingmatches" });
    expect(none.json).toMatchObject({ results: [], note: expect.stringContaining("no results") });
  });

  it("bad input comes back to the model as an error, with zero requests", async () => {
    const { client, total } = countingClient(emu, { apiKey: KEY });
    const tool = new WebSearchTool({ client });
    for (const args of [
      { query: "" },
      { query: "   " },
      { query: "x".repeat(401) },
      { query: "ok", limit: 0 },
      { query: "ok", limit: 21 },
      { query: "ok", limit: 2.5 },
    ]) {
      const { json } = await callTool(tool, "web_search", args);
      expect(json.error.code).toBe("INVALID_PARAMS");
    }
    await expect(webSearch(client, { query: "" })).rejects.toBeInstanceOf(ValidationError);
    await expect(webSearch(client, { query: "a", provider: "bing" as never })).rejects.toBeInstanceOf(ValidationError);
    expect(total()).toBe(0);
  });
});

describe("web_scrape", () => {
  it("reads a page of the local web as markdown; the full response is the artifact", async () => {
    const { client, counts } = countingClient(emu, { apiKey: KEY });
    const tool = new WebScrapeTool({ client });
    const { json, artifact } = await callTool(tool, "web_scrape", { url: "https://example.org/usdc" });
    expect(json).toMatchObject({ url: "https://example.org/usdc", format: "markdown" });
    expect(json.content).toContain("# USDC stablecoin");
    expect(json.truncated).toBeUndefined();
    expect(artifact.response).toEqual({ url: "https://example.org/usdc", content: json.content, format: "markdown" });
    expect(counts["/augment/scrape"]).toBe(1);
    expect(emu.account(KEY)!.entries.at(-1)).toMatchObject({ type: "CHARGE", kind: "web-scrape" });
  });

  it("caps the text with a hint, and reads on from the cache without a second paid scrape", async () => {
    const { client, counts } = countingClient(emu, { apiKey: KEY });
    const tool = new WebScrapeTool({ client, maxChars: 100 });
    const first = await callTool(tool, "web_scrape", { url: "https://example.org/x402" });
    expect(first.json.content.length).toBeLessThanOrEqual(100);
    expect(first.json.truncated).toMatch(/cut at character \d+ of \d+; call web_scrape again with start: \d+/);
    const next = Number(/start: (\d+)/.exec(first.json.truncated)![1]);
    const second = await callTool(tool, "web_scrape", { url: "https://example.org/x402", start: next });
    expect(first.json.content + second.json.content).toBe(first.artifact.response.content.slice(0, next + second.json.content.length));
    expect(counts["/augment/scrape"]).toBe(1);
    const past = await callTool(tool, "web_scrape", { url: "https://example.org/x402", start: 100_000 });
    expect(past.json.error.code).toBe("INVALID_PARAMS");
  });

  it("a page the service cannot read comes back to the model as an error (not thrown)", async () => {
    const tool = new WebScrapeTool({ client: countingClient(emu, { apiKey: KEY }).client });
    const { json } = await callTool(tool, "web_scrape", { url: "https://not-in-the-corpus.example.com/page" });
    expect(json.error.code).toBe("BAD_REQUEST");
    expect(json.error.message).toContain("local corpus");
  });

  const HOSTILE = [
    "http://localhost/",
    "http://LOCALHOST./admin",
    "http://app.localhost:8080/",
    "http://printer.local/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://router/",
    "http://127.0.0.1/",
    "http://127.0.0.1:80/",
    "http://127.1/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://0x7f.1/",
    "http://0177.0.0.1/",
    "http://017700000001/",
    "http://0/",
    "http://0.0.0.0/",
    "http://10.0.0.5/",
    "http://172.16.3.4/",
    "http://172.31.255.255/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://100.64.0.1/",
    "http://100.127.255.254/",
    "http://198.18.0.1/",
    "http://224.0.0.1/",
    "http://255.255.255.255/",
    "http://[::1]/",
    "http://[::]/",
    "http://[0:0:0:0:0:0:0:1]/",
    "http://[fd12:3456::1]/",
    "http://[fc00::1]/",
    "http://[fe80::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[::ffff:10.0.0.1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://[64:ff9b::192.168.0.1]/",
    "http://[2002:7f00:1::]/",
    "http://127.0.0.1.nip.io/",
    "http://10.0.0.1.sslip.io/",
    "http://user:secret@example.org/",
    "https://example.org:22/",
    "file:///etc/passwd",
    "ftp://example.org/file",
    "gopher://example.org/",
    "javascript:alert(1)",
    "data:text/html,<script>1</script>",
    "//example.org/no-scheme",
    "example.org",
    "not a url",
    "",
  ];

  it(`the URL guard refuses ${HOSTILE.length} hostile URL forms before any request, with an error the model reads`, async () => {
    const { client, total } = countingClient(emu, { apiKey: KEY });
    const tool = new WebScrapeTool({ client });
    for (const url of HOSTILE) {
      const { json } = await callTool(tool, "web_scrape", { url });
      expect(json.error?.code, url).toBe("INVALID_PARAMS");
      expect(json.error.message.length, url).toBeGreaterThan(20);
      await expect(webScrape(client, url), url).rejects.toBeInstanceOf(UnsafeUrlError);
      expect(() => assertPublicHttpUrl(url), url).toThrow(ValidationError);
    }
    expect(total()).toBe(0);
  });

  it("public addresses pass the guard (normalized)", () => {
    for (const url of [
      "https://example.org/x402",
      "http://93.184.216.34/",
      "http://[2606:4700:4700::1111]/",
      "https://EXAMPLE.org:443/a?b=1",
      "http://8.8.8.8:8080/",
    ]) {
      expect(() => assertPublicHttpUrl(url), url).not.toThrow();
    }
    expect(assertPublicHttpUrl("https://EXAMPLE.org:443/a").href).toBe("https://example.org/a");
  });
});
