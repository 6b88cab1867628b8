/**
 * The emulator's web, image and speech routes as published (openapi-more.yaml): payload shapes, strictness
 * (closed schemas answer 400 on an unknown member, open ones do not; 415 on another content type), billing
 * from the chat ledger (402 variants, `X-Balance-Remaining` for wallets), and the per-type request limits of
 * spec part 8 through the one limiter.
 */
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { createServiceFetch } from "../../src/stack.js";
import { EvmWallet } from "../../src/evm/index.js";
import { decodePng, decodeWav } from "./helpers.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({
    apiKeys: [{ key: "rich", usd: 50, diem: 0 }, { key: "broke", usd: 0, diem: 0 }, "defaults"],
    // many refusals on purpose: keep the abuse block out of the way
    rateLimits: { abuseMaxFailures: 10_000 },
  });
});
afterAll(async () => {
  await emu?.close();
});

async function post(path: string, body: unknown, key: string | null = "rich", headers: Record<string, string> = {}) {
  const res = await fetch(`${emu.url}${path}`, {
    method: "POST",
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), "content-type": "application/json", ...headers },
    body: typeof body === "string" || body instanceof FormData ? body : JSON.stringify(body),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  const type = res.headers.get("content-type") ?? "";
  return {
    status: res.status,
    headers: res.headers,
    type,
    bytes,
    json: type.includes("json") ? JSON.parse(bytes.toString("utf8")) : undefined,
  };
}

describe("payload shapes as published", () => {
  it("/augment/search: {query, results: [{title, url, content, date}]}", async () => {
    const r = await post("/augment/search", { query: "ethereum blocks", limit: 1, search_provider: "brave" });
    expect(r.status).toBe(200);
    expect(Object.keys(r.json).sort()).toEqual(["query", "results"]);
    expect(r.json.results).toHaveLength(1);
    expect(Object.keys(r.json.results[0]).sort()).toEqual(["content", "date", "title", "url"]);
    expect(r.json.results[0].url).toBe("https://example.org/ethereum");
  });

  it("/augment/scrape: {url, content, format: markdown}; other pages 400, blocked sites 403", async () => {
    const r = await post("/augment/scrape", { url: "https://example.org/solana" });
    expect(r.json).toEqual({
      url: "https://example.org/solana",
      content: expect.stringContaining("# Solana network basics"),
      format: "markdown",
    });
    const other = await post("/augment/scrape", { url: "https://example.com/" });
    expect(other.status).toBe(400);
    expect(other.json).toMatchObject({ error: expect.stringContaining("local corpus"), details: expect.any(Object) });
    expect((await post("/augment/scrape", { url: "https://x.com/someone" })).status).toBe(403);
    expect((await post("/augment/scrape", { url: "ftp://example.org/x402" })).status).toBe(400);
    expect((await post("/augment/scrape", { url: "not a url" })).status).toBe(400);
  });

  it("/image/generate: {id, images (base64 PNG), request, timing}; variants; return_binary gives image/png", async () => {
    const r = await post(
      "/image/generate",
      { model: "emu-image", prompt: "hills", width: 40, height: 24, variants: 2, seed: 7 },
      "defaults",
    );
    expect(r.status).toBe(200);
    expect(r.json.id).toMatch(/^generate-image-\d+/);
    expect(r.json.images).toHaveLength(2);
    expect(Object.keys(r.json.timing).sort()).toEqual(["inferenceDuration", "inferencePreprocessingTime", "inferenceQueueTime", "total"]);
    expect(r.json.request).toMatchObject({ model: "emu-image", prompt: "hills" });
    for (const b64 of r.json.images) expect(decodePng(Buffer.from(b64, "base64"))).toMatchObject({ width: 40, height: 24 });
    expect(r.json.images[0]).not.toBe(r.json.images[1]);
    expect(r.headers.get("x-service-model-id")).toBe("emu-image");
    expect(r.headers.get("x-service-is-blurred")).toBe("false");
    const bin = await post(
      "/image/generate",
      { model: "emu-image", prompt: "hills", width: 40, height: 24, return_binary: true },
      "defaults",
    );
    expect(bin.type).toBe("image/png");
    expect(decodePng(bin.bytes)).toMatchObject({ width: 40, height: 24 });
  });

  it("/images/generations: {created, data: [{b64_json} | {url: data URL}]}, unknown models fall back to the default", async () => {
    const r = await post("/images/generations", { prompt: "a boat", size: "256x256", model: "gpt-image-1" }, "defaults");
    expect(Object.keys(r.json).sort()).toEqual(["created", "data"]);
    expect(decodePng(Buffer.from(r.json.data[0].b64_json, "base64"))).toMatchObject({ width: 256, height: 256 });
    const url = await post("/images/generations", { prompt: "a boat", size: "256x256", response_format: "url" }, "defaults");
    expect(url.json.data[0].url).toMatch(/^data:image\/png;base64,/);
  });

  it("/audio/speech: a WAV (or raw PCM) in the model's voice; /models?type=tts lists voices and formats", async () => {
    const r = await post("/audio/speech", { input: "Hello, world.", model: "tts-orpheus", voice: "tara", speed: 1.5 });
    expect(r.type).toBe("audio/wav");
    expect(decodeWav(r.bytes)).toMatchObject({ sampleRate: 24_000, channels: 1, bitsPerSample: 16 });
    const pcm = await post("/audio/speech", {
      input: "Hello, world.",
      model: "tts-orpheus",
      voice: "tara",
      speed: 1.5,
      response_format: "pcm",
    });
    expect(pcm.type).toBe("audio/pcm");
    expect(pcm.bytes.equals(r.bytes.subarray(44))).toBe(true); // same samples, deterministic
    const models = await (await fetch(`${emu.url}/models?type=tts`)).json();
    const kokoro = models.data.find((m: { id: string }) => m.id === "tts-kokoro");
    expect(kokoro).toMatchObject({
      type: "tts",
      model_spec: { voices: expect.arrayContaining(["af_sky"]), supported_formats: ["wav", "pcm"], default_format: "wav" },
    });
    const images = await (await fetch(`${emu.url}/models?type=image`)).json();
    expect(images.data.map((m: { id: string }) => m.id)).toEqual(["emu-image", "emu-image-hd"]);
    expect(images.data[0].model_spec.traits).toContain("default");
  });

  it("/audio/voices: a multipart sample gives {id: vv_…, model}", async () => {
    const sample = (await post("/audio/speech", { input: "my voice" })).bytes;
    const form = new FormData();
    form.set("file", new Blob([sample]), "me.wav");
    form.set("model", "tts-chatterbox-hd");
    const res = await fetch(`${emu.url}/audio/voices`, { method: "POST", headers: { authorization: "Bearer rich" }, body: form });
    const json = await res.json();
    expect(res.status).toBe(200);
    expect(Object.keys(json).sort()).toEqual(["id", "model"]);
    const spoken = await post("/audio/speech", { input: "cloned", model: "tts-chatterbox-hd", voice: json.id });
    expect(spoken.status).toBe(200);
    // the handle is the model's only
    expect((await post("/audio/speech", { input: "cloned", model: "tts-kokoro", voice: json.id })).status).toBe(400);
    const junk = new FormData();
    junk.set("file", new Blob([new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])]), "x.bin");
    const bad = await fetch(`${emu.url}/audio/voices`, { method: "POST", headers: { authorization: "Bearer rich" }, body: junk });
    expect(bad.status).toBe(400);
    expect((await post("/audio/voices", { model: "tts-chatterbox-hd" })).status).toBe(415);
  });
});

describe("strictness", () => {
  it("closed schemas (image, speech) refuse unknown members with a DetailedError; open ones (search, scrape) ignore them", async () => {
    for (const [path, body] of [
      ["/image/generate", { model: "emu-image", prompt: "p", width: 16, height: 16, colour: "red" }],
      ["/images/generations", { prompt: "p", size: "256x256", extra: true }],
      ["/audio/speech", { input: "hi", pitch: 3 }],
    ] as const) {
      const r = await post(path, body);
      expect(r.status, path).toBe(400);
      expect(r.json.error, path).toBe("Invalid request");
      expect(r.json.details._errors[0], path).toMatch(/Unrecognized key/);
      expect(r.json.issues[0].code, path).toBe("unrecognized_keys");
    }
    expect((await post("/augment/search", { query: "usdc", unknown_member: 1 })).status).toBe(200);
    expect((await post("/augment/scrape", { url: "https://example.org/usdc", formats: ["html"] })).status).toBe(200);
  });

  it("ranges and enums as published", async () => {
    const bad: [string, unknown][] = [
      ["/augment/search", { query: "" }],
      ["/augment/search", { query: "a", limit: 21 }],
      ["/augment/search", { query: "a", search_provider: "bing" }],
      ["/augment/search", { limit: 3 }],
      ["/image/generate", { model: "emu-image", prompt: "" }],
      ["/image/generate", { model: "emu-image", prompt: "p", width: 1281 }],
      ["/image/generate", { model: "emu-image", prompt: "p", cfg_scale: 0 }],
      ["/image/generate", { model: "emu-image", prompt: "p", variants: 5 }],
      ["/image/generate", { model: "emu-image", prompt: "p", variants: 2, return_binary: true }],
      ["/image/generate", { model: "no-such-image-model", prompt: "p" }],
      ["/image/generate", { prompt: "p" }],
      ["/images/generations", { prompt: "p", n: 2 }],
      ["/images/generations", { prompt: "p", size: "100x100" }],
      ["/audio/speech", { input: "" }],
      ["/audio/speech", { input: "x".repeat(4097) }],
      ["/audio/speech", { input: "hi", model: "tts-unknown" }],
      ["/audio/speech", { input: "hi", model: "tts-xai-v1" }], // published, not served here
      ["/audio/speech", { input: "hi", voice: "tara" }], // an Orpheus voice on Kokoro
      ["/audio/speech", { input: "hi", response_format: "mp3" }], // not among the model's supported formats
      ["/audio/speech", { input: "hi", speed: 5 }],
    ];
    for (const [path, body] of bad) {
      const r = await post(path, body);
      expect(r.status, `${path} ${JSON.stringify(body).slice(0, 80)}`).toBe(400);
      expect(typeof r.json.error).toBe("string");
    }
    expect((await post("/image/generate", "prompt=x", "rich", { "content-type": "text/plain" })).status).toBe(415);
    expect((await post("/audio/speech", "{", "rich")).status).toBe(400);
  });
});

describe("billing from the chat ledger", () => {
  it("charges each served call; a refused one costs nothing", async () => {
    const account = emu.account("rich")!;
    const charges = () => account.entries.filter((e) => e.type === "CHARGE").length;
    const before = { usd: account.usd, n: charges() };
    await post("/image/generate", { model: "emu-image-hd", prompt: "p", width: 8, height: 8, variants: 2 });
    expect(account.usd).toBeCloseTo(before.usd - 0.08, 6);
    expect(account.entries.at(-1)).toMatchObject({ kind: "image", modelId: "emu-image-hd", amount: -0.08 });
    await post("/image/generate", { model: "emu-image", prompt: "p", bogus: 1 });
    await post("/augment/scrape", { url: "https://example.com/" });
    expect(charges()).toBe(before.n + 1);
  });

  it("an API key without balance gets the live plain 402 (no code) on every route; no credentials gets the x402 discovery 402", async () => {
    const routes: [string, unknown][] = [
      ["/augment/search", { query: "usdc" }],
      ["/augment/scrape", { url: "https://example.org/usdc" }],
      ["/image/generate", { model: "emu-image", prompt: "p" }],
      ["/images/generations", { prompt: "p" }],
      ["/audio/speech", { input: "hi" }],
    ];
    for (const [path, body] of routes) {
      const broke = await post(path, body, "broke");
      expect(broke.status, path).toBe(402);
      expect(broke.json, path).toEqual({ error: expect.stringMatching(/^Insufficient USD or Diem balance/) });
      const anonymous = await post(path, body, null);
      expect(anonymous.status, path).toBe(402);
      expect(anonymous.json, path).toMatchObject({ x402Version: 2, accepts: expect.any(Array) });
      expect(anonymous.headers.get("payment-required"), path).toBeTruthy();
    }
    expect(emu.account("broke")!.entries).toHaveLength(0);
  });

  it("a wallet is charged from its credit and told X-Balance-Remaining (six decimals); without credit it gets PAYMENT_REQUIRED", async () => {
    const emu2 = await startEmulator({ walletStartingUsd: 1, x402: { balanceHeader: true } }); // the seed's header
    const poor = await startEmulator({ walletStartingUsd: 0 });
    try {
      const wallet = new EvmWallet(Wallet.createRandom().privateKey);
      const stack = (e: Emulator) => createServiceFetch({ baseUrl: e.url, wallet, paymentLayer: (next) => next, retry: false });
      const send = (e: Emulator, path: string, body: unknown) =>
        stack(e)(`${e.url}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
          service: { throwOnError: false },
        });
      const r = await send(emu2, "/images/generations", { prompt: "p", size: "256x256" });
      expect(r.status).toBe(200);
      const remaining = r.headers.get("x-balance-remaining");
      expect(remaining).toMatch(/^\d+\.\d{6}$/);
      expect(Number(remaining)).toBeCloseTo(emu2.account(wallet.address)!.usd, 6);
      expect(Number(remaining)).toBeCloseTo(1 - 0.01, 6);
      const speech = await send(emu2, "/audio/speech", { input: "hello" });
      expect(speech.headers.get("x-balance-remaining")).toBeTruthy();
      const refused = await send(poor, "/augment/search", { query: "usdc" });
      expect(refused.status).toBe(402);
      expect(await refused.json()).toMatchObject({
        code: "PAYMENT_REQUIRED",
        reason: "insufficient_balance",
        topUpInstructions: expect.any(Object),
      });
      expect(refused.headers.get("x-balance-remaining")).toBeNull();
    } finally {
      await emu2.close();
      await poor.close();
    }
  });
});

describe("per-type request limits (spec part 8)", () => {
  it("image and audio requests are counted in their own windows, with request headers only", async () => {
    const main = emu;
    emu = await startEmulator({
      apiKeys: [{ key: "limited", usd: 50, diem: 0 }],
      rateLimits: { types: { image: { requests: 2 }, audio: { requests: 3 } } },
    });
    try {
      await limited();
    } finally {
      await emu.close();
      emu = main;
    }
  });

  async function limited() {
    const img = { model: "emu-image", prompt: "p", width: 8, height: 8 };
    const first = await post("/image/generate", img, "limited");
    expect(first.headers.get("x-ratelimit-limit-requests")).toBe("2");
    expect(first.headers.get("x-ratelimit-limit-tokens")).toBeNull();
    expect((await post("/images/generations", { prompt: "p", size: "256x256" }, "limited")).status).toBe(200);
    const third = await post("/image/generate", img, "limited");
    expect(third.status).toBe(429);
    expect(Number(third.headers.get("x-ratelimit-reset-requests"))).toBeGreaterThan(Date.now() / 1000);
    // audio and search have windows of their own
    const speech = await post("/audio/speech", { input: "still fine" }, "limited");
    expect(speech.status).toBe(200);
    expect(speech.headers.get("x-ratelimit-limit-requests")).toBe("3");
    expect((await post("/augment/search", { query: "usdc" }, "limited")).headers.get("x-ratelimit-limit-requests")).toBe("500");
  }

  it("the published defaults: image 20, audio 60 requests per minute", async () => {
    const emu3 = await startEmulator({ apiKeys: ["k"] });
    try {
      const h = (path: string, body: unknown) =>
        fetch(`${emu3.url}${path}`, {
          method: "POST",
          headers: { authorization: "Bearer k", "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      expect(
        (await h("/image/generate", { model: "emu-image", prompt: "p", width: 8, height: 8 })).headers.get("x-ratelimit-limit-requests"),
      ).toBe("20");
      expect((await h("/audio/speech", { input: "hi" })).headers.get("x-ratelimit-limit-requests")).toBe("60");
    } finally {
      await emu3.close();
    }
  });
});
