/**
 * Fault injection (500/503 rate, latency, stream cut), gzip/br compression of non-streamed bodies, and
 * streaming as the server writes it.
 */
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seededRandom, startEmulator, type Emulator } from "langchain-service-emulator";
import { pickEncoding } from "../../packages/langchain-service-emulator/src/server.js";
import { bearer, postJson, probeRoute, rawGet } from "./helpers.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({
    apiKeys: [{ key: "k", usd: 1000 }],
    routes: [probeRoute],
    // faults below produce hundreds of 5xx on purpose
    rateLimits: { abuseMaxFailures: 100_000 },
  });
});
afterAll(() => emu?.close());

async function readSse(res: Response): Promise<{ chunks: string[]; error?: unknown }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    return { chunks: text.split("\n\n").filter(Boolean), error };
  }
  return { chunks: text.split("\n\n").filter(Boolean) };
}

describe("fault injection", () => {
  it("answers about errorRate of requests with 500/503 before the route runs (nothing charged)", async () => {
    emu.setFaults({ errorRate: 0.4, seed: 7 });
    const before = emu.ledger.totals(emu.account("k")!).charges;
    const counts: Record<number, number> = {};
    const n = 200;
    for (let i = 0; i < n; i++) {
      const res = await postJson(`${emu.url}/probe/inference`, { model: "emu-xs" }, bearer("k"));
      counts[res.status] = (counts[res.status] ?? 0) + 1;
      const body = await res.json();
      if (res.status === 500) expect(body).toEqual({ error: "Internal server error" });
      if (res.status === 503) expect(body).toEqual({ error: "Service unavailable" });
    }
    emu.setFaults({});
    const failed = (counts[500] ?? 0) + (counts[503] ?? 0);
    expect(failed).toBeGreaterThan(n * 0.25);
    expect(failed).toBeLessThan(n * 0.55);
    expect(counts[500]).toBeGreaterThan(0);
    expect(counts[503]).toBeGreaterThan(0);
    expect((counts[200] ?? 0) + failed).toBe(n);
    // only served requests were charged
    expect(emu.ledger.totals(emu.account("k")!).charges - before).toBe(counts[200]);
  });

  it("network discovery is exempt by default; `paths` narrows the faults; statuses can be chosen", async () => {
    emu.setFaults({ errorRate: 1 });
    expect((await fetch(`${emu.url}/crypto/rpc/networks`)).status).toBe(200);
    expect((await fetch(`${emu.url}/models`)).status).toBeGreaterThanOrEqual(500);
    emu.setFaults({ errorRate: 1, paths: ["/probe"], statuses: [503] });
    expect((await fetch(`${emu.url}/models`)).status).toBe(200);
    expect((await postJson(`${emu.url}/probe/inference`, { model: "emu-xs" }, bearer("k"))).status).toBe(503);
    emu.setFaults({});
    expect((await postJson(`${emu.url}/probe/inference`, { model: "emu-xs" }, bearer("k"))).status).toBe(200);
  });

  it("a seed makes the fault sequence reproducible", async () => {
    const run = async () => {
      emu.setFaults({ errorRate: 0.5, seed: 123 });
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) statuses.push((await fetch(`${emu.url}/models`)).status);
      return statuses;
    };
    const a = await run();
    const b = await run();
    emu.setFaults({});
    expect(a).toEqual(b);
    expect(new Set(a).size).toBeGreaterThan(1);
  });

  it("latencyMs delays the answer", async () => {
    emu.setFaults({ latencyMs: 300 });
    const started = performance.now();
    const res = await fetch(`${emu.url}/models`);
    const elapsed = performance.now() - started;
    emu.setFaults({});
    expect(res.status).toBe(200);
    expect(elapsed).toBeGreaterThanOrEqual(290);
  });

  it("streamCutAfter destroys the connection after k chunks (no [DONE]); visible to routes via ctx.options", async () => {
    const full = await readSse(await postJson(`${emu.url}/probe/inference`, { model: "emu-s", stream: true, chunks: 5 }, bearer("k")));
    expect(full.error).toBeUndefined();
    expect(full.chunks).toHaveLength(6);
    expect(full.chunks.at(-1)).toBe("data: [DONE]");

    emu.setFaults({ streamCutAfter: 2 });
    expect(emu.context.options.faults?.streamCutAfter).toBe(2);
    const res = await postJson(`${emu.url}/probe/inference`, { model: "emu-s", stream: true, chunks: 5 }, bearer("k"));
    expect(res.status).toBe(200);
    const cut = await readSse(res);
    emu.setFaults({});
    expect(cut.error).toBeDefined();
    expect(cut.chunks).toEqual(['data: {"i":0}', 'data: {"i":1}']);
    expect(emu.context.options.faults?.streamCutAfter).toBeUndefined();
  });

  it("seededRandom is deterministic and uniform enough", () => {
    const a = seededRandom(1);
    const b = seededRandom(1);
    const xs = Array.from({ length: 1000 }, () => a());
    expect(xs.slice(0, 5)).toEqual(Array.from({ length: 5 }, () => b()));
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    expect(mean).toBeGreaterThan(0.45);
    expect(mean).toBeLessThan(0.55);
    expect(Math.max(...xs)).toBeLessThan(1);
  });
});

describe("compression", () => {
  it.each([
    ["br", "br", brotliDecompressSync],
    ["gzip", "gzip", gunzipSync],
    ["gzip, deflate, br", "gzip", gunzipSync],
    ["br;q=0, gzip", "gzip", gunzipSync],
  ] as const)("Accept-Encoding %s -> %s, decompresses to the plain body", async (accept, encoding, decompress) => {
    const plain = await rawGet(`${emu.url}/models`, { "accept-encoding": "identity" });
    expect(plain.headers["content-encoding"]).toBeUndefined();
    const compressed = await rawGet(`${emu.url}/models`, { "accept-encoding": accept });
    expect(compressed.status).toBe(200);
    expect(compressed.headers["content-encoding"]).toBe(encoding);
    expect(compressed.body.length).toBeLessThan(plain.body.length);
    expect(JSON.parse(decompress(compressed.body).toString("utf8"))).toEqual(JSON.parse(plain.body.toString("utf8")));
  });

  it("error bodies are compressed too; streams never are", async () => {
    const err = await rawGet(`${emu.url}/nope`, { "accept-encoding": "gzip" });
    expect(err.headers["content-encoding"]).toBe("gzip");
    expect(JSON.parse(gunzipSync(err.body).toString("utf8"))).toEqual({ error: "Not found" });

    const res = await fetch(`${emu.url}/probe/inference`, {
      method: "POST",
      headers: { ...bearer("k"), "accept-encoding": "gzip, br", "content-type": "application/json" },
      body: JSON.stringify({ model: "emu-s", stream: true, chunks: 2 }),
    });
    expect(res.headers.get("content-encoding")).toBeNull();
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect((await res.text()).endsWith("data: [DONE]\n\n")).toBe(true);
  });

  it("pickEncoding follows the client's order and skips q=0", () => {
    expect(pickEncoding(undefined)).toBeUndefined();
    expect(pickEncoding("identity")).toBeUndefined();
    expect(pickEncoding("br, gzip")).toBe("br");
    expect(pickEncoding("deflate, gzip;q=0.8, br")).toBe("gzip");
    expect(pickEncoding("GZIP;q=0, BR;q=0.5")).toBe("br");
    expect(pickEncoding("gzip;q=0")).toBeUndefined();
  });
});
