/**
 * Edge cases of the fetch stack found in the audit, over real loopback HTTP: replayable bodies and Request
 * inputs, typed aborts during waits, credentials kept on the service's origin, 429 shapes, pacing that adapts
 * to a 429 anyway, the guard refusing a retry, ServiceClient.request() bodies and headers, the openai SDK.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import {
  AbortError,
  AbuseBlockError,
  ConfigurationError,
  RateLimitError,
  ServerError,
  ServiceClient,
  TimeoutError,
  createServiceFetch,
  parseServiceHeaders,
} from "../../src/index.js";
import { errorFromResponse } from "../../src/http/status-errors.js";
import { toNumber } from "../../src/http/headers.js";

interface Seen {
  url: string;
  method: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}
type Handler = (req: Seen, n: number) => [number, Record<string, string>?, string?];

const servers: { close(): void }[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

async function serve(handler: Handler): Promise<{ url: string; origin: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      const s: Seen = { url: req.url ?? "", method: req.method ?? "", headers: req.headers, body, at: Date.now() };
      seen.push(s);
      const [status, headers = {}, out = ""] = handler(s, seen.length);
      res.writeHead(status, headers);
      res.end(out);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  servers.push({ close: () => server.close() });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url: `${origin}/api/v1`, origin, seen };
}

/** 503 on the first send, 200 after. */
const failOnce: Handler = (_req, n) => (n === 1 ? [503, {}, '{"error":"down"}'] : [200, { "content-type": "application/json" }, "{}"]);
const quick = { retry: { baseDelayMs: 1, maxDelayMs: 2 }, pacing: false, abuseGuard: false } as const;

describe("request bodies on retries", () => {
  it("a Request input keeps its headers and re-sends the same body", async () => {
    const s = await serve(failOnce);
    const f = createServiceFetch({ baseUrl: s.url, apiKey: "k-req", ...quick });
    const req = new Request(`${s.url}/x`, { method: "POST", body: "hello", headers: { "x-mine": "1", "content-type": "text/plain" } });
    const res = await f(req);
    expect(res.status).toBe(200);
    expect(s.seen.map((x) => [x.method, x.body, x.headers["x-mine"], x.headers["content-type"]])).toEqual([
      ["POST", "hello", "1", "text/plain"],
      ["POST", "hello", "1", "text/plain"],
    ]);
    expect(s.seen[1]!.headers.authorization).toBe("Bearer k-req");
  });
  it("a Request's own abort signal is honoured", async () => {
    const s = await serve(() => [200]);
    const f = createServiceFetch({ baseUrl: s.url, apiKey: "k-req", ...quick });
    const controller = new AbortController();
    controller.abort();
    await expect(f(new Request(`${s.url}/x`, { signal: controller.signal }))).rejects.toBeInstanceOf(AbortError);
    expect(s.seen).toHaveLength(0);
  });
  it("a stream body is sent once: the 5xx surfaces typed, not as a NetworkError from a re-send", async () => {
    const s = await serve(failOnce);
    const f = createServiceFetch({ baseUrl: s.url, apiKey: "k-req", ...quick });
    const body = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode("streamed"));
        c.close();
      },
    });
    const err = await f(`${s.url}/x`, { method: "POST", body, duplex: "half" } as RequestInit).catch((e) => e);
    expect(err).toBeInstanceOf(ServerError);
    expect(s.seen.map((x) => x.body)).toEqual(["streamed"]);
  });
  it("Blob, URLSearchParams and FormData bodies are re-sent whole", async () => {
    for (const body of [new Blob(["blob"]), new URLSearchParams({ a: "1" }), Object.assign(new FormData(), {})]) {
      if (body instanceof FormData) body.set("field", "value");
      const s = await serve(failOnce);
      const f = createServiceFetch({ baseUrl: s.url, apiKey: "k-req", ...quick });
      expect((await f(`${s.url}/x`, { method: "POST", body })).status).toBe(200);
      expect(s.seen).toHaveLength(2);
      expect(s.seen[1]!.body.length).toBeGreaterThan(0);
      expect(s.seen[1]!.body.replace(/formdata-undici-\d+/g, "")).toBe(s.seen[0]!.body.replace(/formdata-undici-\d+/g, ""));
    }
  });
});

describe("aborts during waits are prompt and typed", () => {
  it("an abort during a backoff sleep is an AbortError, a caller's deadline a TimeoutError", async () => {
    const s = await serve(() => [503]);
    const f = createServiceFetch({ baseUrl: s.url, apiKey: "k-abort", retry: { baseDelayMs: 5_000 }, pacing: false, abuseGuard: false });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const t = Date.now();
    const err = await f(`${s.url}/x`, { signal: controller.signal }).catch((e) => e);
    expect(err).toBeInstanceOf(AbortError);
    expect(Date.now() - t).toBeLessThan(1_000);
    await expect(f(`${s.url}/x`, { signal: AbortSignal.timeout(50) })).rejects.toBeInstanceOf(TimeoutError);
  });
  it("an abort while pacing holds the request is an AbortError", async () => {
    const reset = String(Math.ceil(Date.now() / 1000) + 30);
    const s = await serve(() => [
      200,
      { "x-ratelimit-limit-requests": "1", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": reset },
    ]);
    const f = createServiceFetch({ baseUrl: s.url, apiKey: "k-abort-pacing", retry: false, abuseGuard: false });
    await f(`${s.url}/x`, { service: { model: "held" } });
    const err = await f(`${s.url}/x`, { service: { model: "held" }, signal: AbortSignal.timeout(50) }).catch((e) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect(s.seen).toHaveLength(1);
  });
});

describe("429 shapes", () => {
  function recordingSleep() {
    const waits: number[] = [];
    return { waits, sleep: async (ms: number) => void waits.push(ms) };
  }
  it("a reset already in the past backs off instead of re-sending at once", async () => {
    const past = String(Math.floor(Date.now() / 1000) - 100);
    const s = await serve((_r, n) => (n === 1 ? [429, { "x-ratelimit-reset-requests": past }] : [200]));
    const r = recordingSleep();
    const f = createServiceFetch({
      baseUrl: s.url,
      apiKey: "k-429",
      pacing: false,
      abuseGuard: false,
      retry: { random: () => 0, sleep: r.sleep },
    });
    expect((await f(`${s.url}/x`)).status).toBe(200);
    expect(r.waits[0]).toBeGreaterThanOrEqual(125); // baseDelayMs 250, attempt 0, no jitter
  });
  it("retry-after as an HTTP date is honoured", async () => {
    const s = await serve((_r, n) => (n === 1 ? [429, { "retry-after": new Date(Date.now() + 5_000).toUTCString() }] : [200]));
    const r = recordingSleep();
    const f = createServiceFetch({
      baseUrl: s.url,
      apiKey: "k-429",
      pacing: false,
      abuseGuard: false,
      retry: { random: () => 0, sleep: r.sleep },
    });
    expect((await f(`${s.url}/x`)).status).toBe(200);
    expect(r.waits[0]).toBeGreaterThan(3_000);
  });
  it("the service's abuse block (a 429) is not retried within its 30 s", async () => {
    const s = await serve(() => [
      429,
      { "content-type": "application/json" },
      JSON.stringify({ error: "Too many failed attempts (> 20) resulting in a non-success status code. Please wait 30s and try again." }),
    ]);
    const f = createServiceFetch({ baseUrl: s.url, apiKey: "k-429", pacing: false, abuseGuard: false, retry: { baseDelayMs: 1 } });
    const err = await f(`${s.url}/x`).catch((e) => e);
    expect(err).toBeInstanceOf(AbuseBlockError);
    expect(err.source).toBe("service");
    expect(s.seen).toHaveLength(1);
  });
  it("a reset sent in milliseconds gives a sane RateLimitError.resetAt", () => {
    const at = Date.now() + 2_000;
    const err = errorFromResponse(
      429,
      {},
      parseServiceHeaders(new Headers({ "x-ratelimit-reset-requests": String(at) })),
    ) as RateLimitError;
    expect(err.resetAt?.getTime()).toBe(at);
  });
  it("pacing adapts to a 429 without rate-limit headers: the next send waits for retry-after", async () => {
    const s = await serve((_r, n) => (n === 1 ? [429, { "retry-after": "1" }] : [200]));
    const f = createServiceFetch({ baseUrl: s.url, apiKey: "k-pace-429", retry: false, abuseGuard: false });
    await expect(f(`${s.url}/x`, { service: { model: "m" } })).rejects.toBeInstanceOf(RateLimitError);
    expect((await f(`${s.url}/x`, { service: { model: "m" } })).status).toBe(200);
    expect(s.seen[1]!.at - s.seen[0]!.at).toBeGreaterThanOrEqual(900);
  });
});

describe("abuse guard under concurrent retries", () => {
  it("a retry the guard refuses surfaces the failure already seen (status, request id)", async () => {
    const s = await serve(() => [503, { "cf-ray": "ray-42", "content-type": "application/json" }, '{"error":"down"}']);
    const f = createServiceFetch({
      baseUrl: s.url,
      apiKey: "k-guard-retry",
      pacing: false,
      retry: { baseDelayMs: 1, maxDelayMs: 2 },
      abuseGuard: { maxFailures: 4 },
    });
    const errs = await Promise.all(Array.from({ length: 6 }, () => f(`${s.url}/x`).catch((e) => e)));
    expect(s.seen.length).toBeLessThanOrEqual(4);
    const served = errs.filter((e) => e instanceof ServerError);
    expect(served.length).toBe(s.seen.length);
    for (const e of served) expect(e.requestId).toBe("ray-42");
    for (const e of errs.filter((e) => !(e instanceof ServerError))) expect(e).toBeInstanceOf(AbuseBlockError);
  });
});

describe("credentials", () => {
  it("are sent only to the service's origin", async () => {
    const service = await serve(() => [200]);
    const other = await serve(() => [200]);
    const f = createServiceFetch({ baseUrl: service.url, apiKey: "sk-stay-home", ...quick });
    await f(`${service.url}/x`);
    await f(`${other.url}/x`);
    await new ServiceClient({ serviceFetch: f }).request(`${other.url}/y`);
    expect(service.seen[0]!.headers.authorization).toBe("Bearer sk-stay-home");
    expect(other.seen.map((x) => x.headers.authorization)).toEqual([undefined, undefined]);
  });
  it("a baseUrl with a query, credentials or an odd scheme is refused without echoing secrets", () => {
    const messages: string[] = [];
    for (const baseUrl of [
      "http://h/api/v1?key=SECRET1",
      "ftp://u:SECRET2@h/api",
      "http://u:SECRET3@h:99999/api",
      "http://h/api/v1#SECRET4",
    ]) {
      const err = (() => {
        try {
          createServiceFetch({ baseUrl });
        } catch (e) {
          return e as Error;
        }
      })();
      expect(err).toBeInstanceOf(ConfigurationError);
      messages.push(err!.message);
    }
    expect(messages.join(" ")).not.toMatch(/SECRET/);
  });
  it("an API key that cannot go in a header is refused up front, typed", () => {
    expect(() => createServiceFetch({ baseUrl: "http://h/api/v1", apiKey: "sk-€uro" })).toThrow(ConfigurationError);
    expect(() => createServiceFetch({ baseUrl: "http://h/api/v1", apiKey: "sk-new\nline" })).toThrow(ConfigurationError);
  });
});

describe("ServiceClient.request()", () => {
  it("merges headers case-insensitively and sends non-JSON bodies as they are", async () => {
    const s = await serve(() => [200, { "content-type": "text/plain" }, "plain"]);
    const client = new ServiceClient({ baseUrl: s.url, apiKey: "k", ...quick });
    const res = await client.request("/form", {
      body: "a=1",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "text/plain" },
      query: { q: "x y", skip: undefined },
    });
    expect(res.data).toBe("plain");
    expect(s.seen[0]!.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(s.seen[0]!.headers.accept).toBe("text/plain");
    expect(s.seen[0]!.url).toBe("/api/v1/form?q=x+y");
    await client.request("/usp", { body: new URLSearchParams({ a: "1" }) });
    expect(s.seen[1]!.body).toBe("a=1");
    expect(s.seen[1]!.headers["content-type"]).toMatch(/^application\/x-www-form-urlencoded/);
    await client.request("/json", { body: { a: 1 } });
    expect(s.seen[2]!.body).toBe('{"a":1}');
    expect(s.seen[2]!.headers["content-type"]).toBe("application/json");
  });
  it("an empty 204 body is undefined data", async () => {
    const s = await serve(() => [204, { "content-type": "application/json" }]);
    const res = await new ServiceClient({ baseUrl: s.url, apiKey: "k", ...quick }).request("/none", { method: "DELETE" });
    expect(res.status).toBe(204);
    expect(res.data).toBeUndefined();
  });
});

describe("header values", () => {
  it.each([
    ["0x10", undefined],
    ["Infinity", undefined],
    ["10, 10", 10],
    [" 1e3 ", 1000],
    ["-5", -5],
  ])("toNumber(%j) = %j", (input, expected) => expect(toNumber(input)).toBe(expected));
});

describe("the openai SDK with createServiceFetch as its fetch", () => {
  it("gets the SDK's own typed errors, and neither layer re-sends a 400", async () => {
    const s = await serve(() => [
      400,
      { "content-type": "application/json", "cf-ray": "ray-sdk" },
      JSON.stringify({ error: "Invalid model" }),
    ]);
    const f = createServiceFetch({ baseUrl: s.url, apiKey: "k-sdk", pacing: false, abuseGuard: false });
    const sdk = new OpenAI({ baseURL: s.url, apiKey: "unused", fetch: f });
    const err = await sdk.chat.completions.create({ model: "nope", messages: [{ role: "user", content: "hi" }] }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.status).toBe(400);
    expect(s.seen).toHaveLength(1);
    expect(s.seen[0]!.headers.authorization).toBe("Bearer k-sdk");
  });
  it("a 5xx is retried by the stack only, not again by the SDK", async () => {
    const s = await serve(() => [503, { "content-type": "application/json" }, '{"error":"down"}']);
    const f = createServiceFetch({
      baseUrl: s.url,
      apiKey: "k-sdk",
      pacing: false,
      abuseGuard: false,
      retry: { maxRetries: 1, baseDelayMs: 1 },
    });
    const sdk = new OpenAI({ baseURL: s.url, apiKey: "unused", fetch: f });
    const err = await sdk.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(s.seen).toHaveLength(2);
  });
});
