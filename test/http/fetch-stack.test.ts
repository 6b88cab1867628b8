/**
 * The fetch stack against the emulator over real loopback HTTP: header parsing, each typed error,
 * 429 wait-until-reset, 5xx retries, no retry on 400/401/402, the abuse-block guard, timeouts, a non-JSON
 * error body, and secrets kept out of errors.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import {
  AbuseBlockError,
  AuthenticationError,
  BadRequestError,
  InsufficientBalanceError,
  PaymentRequiredError,
  RateLimitError,
  ServerError,
  TimeoutError,
  NetworkError,
  ConfigurationError,
  createServiceFetch,
  ServiceClient,
  type FetchLike,
} from "../../src/index.js";
import { responseHeaders } from "../../src/http/fetch-stack.js";

const SECRET = "sk-emu-topsecret-0123456789";

/** A base fetch that counts what actually goes on the wire. */
function counting(): { fetch: FetchLike; sent: () => number; statuses: number[] } {
  let n = 0;
  const statuses: number[] = [];
  return {
    fetch: async (input, init) => {
      n++;
      const res = await fetch(input, init);
      statuses.push(res.status);
      return res;
    },
    sent: () => n,
    statuses,
  };
}

const chatBody = (model = "emu-xs", content = "hello there") => JSON.stringify({ model, messages: [{ role: "user", content }] });
const post = { method: "POST", headers: { "content-type": "application/json" } } as const;

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({
    // the seed's answers (unknown model 400, INSUFFICIENT_BALANCE, the 20-failure block); live ones: test/http/live-answers.test.ts
    mode: "seed",
    apiKeys: [SECRET, { key: "broke", usd: 0, diem: 0 }, "k-limited", "k-abuse", "k-faults"],
    rateLimits: { windowMs: 2000, tiers: { S: { requests: 2 } } },
  });
});
afterAll(async () => {
  await emu?.close();
});

describe("options", () => {
  it("rejects bad options before any request", () => {
    expect(() => createServiceFetch({ baseUrl: "ftp://x" })).toThrow(ConfigurationError);
    expect(() => createServiceFetch({ baseUrl: "not a url" })).toThrow(ConfigurationError);
    expect(() => createServiceFetch({ baseUrl: emu.url, brand: "Bad Brand" })).toThrow(ConfigurationError);
    expect(() => createServiceFetch({ baseUrl: emu.url, apiKey: "has space" })).toThrow(ConfigurationError);
  });
  it("reads SERVICE_API_KEY and SERVICE_BASE_URL from the environment", async () => {
    process.env.SERVICE_API_KEY = SECRET;
    process.env.SERVICE_BASE_URL = emu.url;
    try {
      const f = createServiceFetch();
      expect(f.baseUrl).toBe(emu.url);
      const res = await f(f.url("/chat/completions"), { ...post, body: chatBody() });
      expect(res.status).toBe(200);
    } finally {
      delete process.env.SERVICE_API_KEY;
      delete process.env.SERVICE_BASE_URL;
    }
  });
});

describe("headers", () => {
  it("parses the part-2.5 headers of a real answer", async () => {
    const f = createServiceFetch({ baseUrl: emu.url, apiKey: SECRET });
    const res = await f(f.url("/chat/completions"), { ...post, body: chatBody("emu-legacy") });
    const h = responseHeaders(res);
    expect(h.requestId).toMatch(/\S+/);
    expect(h.version).toMatch(/^\d{8}\.\d{6}$/);
    expect(h.date).toBeTruthy();
    expect(h.model?.id).toBe("emu-legacy");
    expect(h.deprecation?.warning).toBeTruthy();
    expect(h.deprecation?.date).toMatch(/^\d{4}-\d{2}-\d{2}/);
    expect(typeof h.rateLimit?.limitRequests).toBe("number");
    expect(typeof h.rateLimit?.remainingRequests).toBe("number");
    expect(h.rateLimit!.resetRequests!).toBeGreaterThan(Date.now() / 1000 - 1);
    expect(h.rateLimit!.resetRequests!).toBeLessThan(Date.now() / 1000 + 120);
    expect(typeof h.balance?.usd).toBe("number");
    expect(typeof h.balance?.diem).toBe("number");
  });
});

describe("typed errors", () => {
  it("400 with details for an unknown model, not retried", async () => {
    const c = counting();
    const f = createServiceFetch({ baseUrl: emu.url, apiKey: SECRET, fetch: c.fetch });
    const err = await f(f.url("/chat/completions"), { ...post, body: chatBody("no-such-model") }).catch((e) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err.status).toBe(400);
    expect(err.requestId).toBeTruthy();
    expect(c.sent()).toBe(1);
  });
  it("401 for a bad key, not retried, and the key is nowhere in the error", async () => {
    const c = counting();
    const key = "sk-wrong-very-secret-key-42";
    const f = createServiceFetch({ baseUrl: emu.url, apiKey: key, fetch: c.fetch });
    const err = await f(f.url("/chat/completions"), { ...post, body: chatBody() }).catch((e) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
    expect(c.sent()).toBe(1);
    for (const text of [String(err), JSON.stringify(err), err.stack ?? "", JSON.stringify({ ...f })]) {
      expect(text).not.toContain(key);
    }
  });
  it("402 INSUFFICIENT_BALANCE for a spent API key, not retried", async () => {
    const c = counting();
    const f = createServiceFetch({ baseUrl: emu.url, apiKey: "broke", fetch: c.fetch });
    const err = await f(f.url("/chat/completions"), { ...post, body: chatBody() }).catch((e) => e);
    expect(err).toBeInstanceOf(InsufficientBalanceError);
    expect(err.code).toBe("INSUFFICIENT_BALANCE");
    expect(c.sent()).toBe(1);
  });
  it("402 x402 discovery without credentials", async () => {
    const f = createServiceFetch({ baseUrl: emu.url });
    const err = await f(f.url("/chat/completions"), { ...post, body: chatBody() }).catch((e) => e);
    expect(err).toBeInstanceOf(PaymentRequiredError);
    expect(err.variant).toBe("discovery");
    expect(Array.isArray(err.accepts)).toBe(true);
  });
  it("a non-JSON error body still gives a clear error", async () => {
    const server: Server = createServer((_req, res) => {
      res.writeHead(502, { "content-type": "text/html" });
      res.end("<html><body>Bad gateway</body></html>");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
      const f = createServiceFetch({ baseUrl: url, apiKey: SECRET, retry: { maxRetries: 1, baseDelayMs: 1 } });
      const err = await f(`${url}/models`).catch((e) => e);
      expect(err).toBeInstanceOf(ServerError);
      expect(err.message).toContain("Bad gateway");
      expect(err.body).toContain("<html>");
      expect(String(err) + JSON.stringify(err) + err.stack).not.toContain(SECRET);
    } finally {
      server.close();
    }
  });
  it("a refused connection is a NetworkError", async () => {
    const f = createServiceFetch({ baseUrl: "http://127.0.0.1:9/api/v1", apiKey: SECRET });
    await expect(f("http://127.0.0.1:9/api/v1/models")).rejects.toBeInstanceOf(NetworkError);
  });
});

describe("retries", () => {
  it("429 waits until x-ratelimit-reset-requests and then succeeds", async () => {
    const c = counting();
    // pacing off: this test is about the retry layer meeting a real 429
    const f = createServiceFetch({ baseUrl: emu.url, apiKey: "k-limited", fetch: c.fetch, pacing: false });
    for (let i = 0; i < 3; i++) {
      const res = await f(f.url("/chat/completions"), { ...post, body: chatBody("emu-s", `req ${i}`) });
      expect(res.status).toBe(200);
    }
    expect(c.statuses).toContain(429);
    expect(c.statuses.filter((s) => s === 200)).toHaveLength(3);
  });
  it("429 surfaces as RateLimitError with the reset time when retries are off", async () => {
    const f = createServiceFetch({ baseUrl: emu.url, apiKey: "k-limited", retry: false, pacing: false });
    let err: unknown;
    for (let i = 0; i < 4 && !err; i++) {
      err = await f(f.url("/chat/completions"), { ...post, body: chatBody("emu-s") }).then(
        () => undefined,
        (e) => e,
      );
    }
    expect(err).toBeInstanceOf(RateLimitError);
    const reset = (err as RateLimitError).resetAt!.getTime();
    expect(reset).toBeGreaterThan(Date.now() - 1000);
    expect(reset).toBeLessThan(Date.now() + 5000);
  });
  it("500/503 back off and succeed after injected faults", async () => {
    emu.setFaults({ errorRate: 0.5, seed: 7, paths: ["/chat/completions"] });
    try {
      const c = counting();
      const f = createServiceFetch({
        baseUrl: emu.url,
        apiKey: "k-faults",
        fetch: c.fetch,
        retry: { maxRetries: 8, baseDelayMs: 5, maxDelayMs: 20 },
      });
      for (let i = 0; i < 10; i++) {
        const res = await f(f.url("/chat/completions"), { ...post, body: chatBody("emu-xs", `ok ${i}`) });
        expect(res.status).toBe(200);
      }
      expect(c.statuses.some((s) => s === 500 || s === 503)).toBe(true);
      expect(c.sent()).toBeGreaterThan(10);
    } finally {
      emu.setFaults({});
    }
  });
  it("a 5xx that outlasts the retries surfaces as ServerError after exactly 1 + maxRetries sends", async () => {
    emu.setFaults({ errorRate: 1, paths: ["/models"] });
    try {
      const c = counting();
      const f = createServiceFetch({ baseUrl: emu.url, apiKey: "k-faults", fetch: c.fetch, retry: { maxRetries: 2, baseDelayMs: 1 } });
      await expect(f(f.url("/models"))).rejects.toBeInstanceOf(ServerError);
      expect(c.sent()).toBe(3);
    } finally {
      emu.setFaults({});
    }
  });
});

describe("abuse guard", () => {
  it("refuses to send the request that could trip the service's block, and the service was never blocked", async () => {
    const c = counting();
    const f = createServiceFetch({ baseUrl: emu.url, apiKey: "k-abuse", fetch: c.fetch, pacing: false });
    // 20 failures (400s) in the window...
    for (let i = 0; i < 20; i++) {
      await expect(f(f.url("/chat/completions"), { ...post, body: chatBody("no-such-model") })).rejects.toBeInstanceOf(BadRequestError);
    }
    // ...then the 21st is refused client-side, without a send
    const err = await f(f.url("/chat/completions"), { ...post, body: chatBody("emu-xs") }).catch((e) => e);
    expect(err).toBeInstanceOf(AbuseBlockError);
    expect(err.source).toBe("client");
    expect(err.retryAfterMs).toBeGreaterThan(0);
    expect(c.sent()).toBe(20);
    // the service did not block the key: a plain fetch still gets served
    const res = await fetch(`${emu.url}/chat/completions`, {
      ...post,
      headers: { ...post.headers, authorization: "Bearer k-abuse" },
      body: chatBody("emu-xs"),
    });
    expect(res.status).toBe(200);
  });
});

describe("timeouts", () => {
  it("a slow answer becomes a TimeoutError", async () => {
    emu.setFaults({ latencyMs: 400, paths: ["/models"] });
    try {
      const f = createServiceFetch({ baseUrl: emu.url, apiKey: SECRET, timeout: 50, retry: false });
      await expect(f(f.url("/models"))).rejects.toBeInstanceOf(TimeoutError);
    } finally {
      emu.setFaults({});
    }
  });
});

describe("ServiceClient", () => {
  it("lists models, rate limits and their log, crypto networks (public)", async () => {
    const client = new ServiceClient({ baseUrl: emu.url, apiKey: SECRET });
    const models = await client.listModels();
    expect(models.map((m) => m.id)).toEqual(expect.arrayContaining(["emu-xs", "emu-s", "emu-m", "emu-l", "emu-reasoner"]));
    const limits = await client.getRateLimits();
    expect(limits.rateLimits?.length).toBeGreaterThan(0);
    const logs = await client.getRateLimitLogs();
    expect(Array.isArray(logs)).toBe(true);
    const anonymous = new ServiceClient({ baseUrl: emu.url });
    const networks = await anonymous.listCryptoNetworks();
    // this emulator runs without a chain: it lists only what it can serve (its LiteSVM Solana rail)
    expect(networks).toContain("solana-mainnet");
    expect(networks).not.toContain("base-mainnet");
    expect([...networks].sort()).toEqual(networks);
    expect(JSON.stringify(client)).not.toContain(SECRET);
  });
});

describe("getRateLimitLogs", () => {
  it("falls back to the spec's path /api_keys/rate_limit_logs when the published path answers 404", async () => {
    const seen: string[] = [];
    const server: Server = createServer((req, res) => {
      seen.push(req.url ?? "");
      if (req.url === "/api/v1/api_keys/rate_limit_logs") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ data: [{ modelId: "emu-s", rateLimitType: "RPM" }] }));
      } else {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: "Not found" }));
      }
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const client = new ServiceClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`, apiKey: SECRET });
      expect(await client.getRateLimitLogs()).toEqual([{ modelId: "emu-s", rateLimitType: "RPM" }]);
      expect(seen).toEqual(["/api/v1/api_keys/rate_limits/log", "/api/v1/api_keys/rate_limit_logs"]);
    } finally {
      server.close();
    }
  });
});

describe("caller deadlines", () => {
  it("a caller's AbortSignal.timeout is a TimeoutError, a plain abort an AbortError", async () => {
    emu.setFaults({ latencyMs: 400, paths: ["/models"] });
    try {
      const f = createServiceFetch({ baseUrl: emu.url, apiKey: SECRET, retry: false });
      await expect(f(f.url("/models"), { signal: AbortSignal.timeout(50) })).rejects.toBeInstanceOf(TimeoutError);
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      const err = await f(f.url("/models"), { signal: controller.signal }).catch((e) => e);
      expect(err.name).toBe("AbortError");
    } finally {
      emu.setFaults({});
    }
  });
});
