/**
 * Pacing per model type (spec part 8, "other model types"): a service that enforces an image, audio or
 * embedding limit without sending `x-ratelimit-*` headers draws no 429 from a burst, because the type's
 * published limit paces it (here overridden small, with a short window, so the tests run in seconds). The type
 * comes from the path or from the `modelType` hint; headers, when sent, win over it; text stays unpaced.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startFixtureServer, json, type FixtureServer } from "../chat/fixture-server.js";
import { createServiceFetch, type FetchStackOptions } from "../../src/stack.js";
import { ConfigurationError, ValidationError } from "../../src/http/errors.js";
import { startEmulator } from "langchain-service-emulator";
import { ServiceClient } from "../../src/client.js";
import { generateImage, ImageGenerationTool } from "../../src/tools/index.js";

const servers: FixtureServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

interface Limited {
  server: FixtureServer;
  /** 429s sent */
  refused: () => number;
  /** when each admitted request arrived (ms since epoch) */
  admitted: number[];
}

/**
 * A service that admits `limit` requests in any `windowMs` (a sliding window: stricter than the service's
 * fixed one) and answers 429 past it. `headers`: also tell the window in `x-ratelimit-*` (fixed windows then).
 */
async function limitedService(limit: number, windowMs: number, headers = false): Promise<Limited> {
  const admitted: number[] = [];
  let refused = 0;
  let windowEnd = 0;
  let inWindow = 0;
  const server = await startFixtureServer((_req, res) => {
    const now = Date.now();
    if (headers) {
      if (now >= windowEnd) [windowEnd, inWindow] = [now + windowMs, 0];
      const told = (used: number) => ({
        "x-ratelimit-limit-requests": String(limit),
        "x-ratelimit-remaining-requests": String(Math.max(0, limit - used)),
        // fractional Unix seconds: exact for a short window
        "x-ratelimit-reset-requests": String(windowEnd / 1000),
      });
      if (inWindow >= limit) return (refused++, json(res, { error: "Rate limit exceeded" }, told(inWindow), 429));
      inWindow++;
      admitted.push(now);
      return json(res, { ok: true }, told(inWindow));
    }
    if (admitted.filter((t) => t > now - windowMs).length >= limit)
      return (refused++, json(res, { error: "Rate limit exceeded" }, {}, 429));
    admitted.push(now);
    json(res, { ok: true });
  });
  servers.push(server);
  return { server, refused: () => refused, admitted };
}

function stack(server: FixtureServer, pacing: FetchStackOptions["pacing"], apiKey = "k-types") {
  // no retries (a 429 must show), no abuse guard (it would turn the 429s of a failing run into other errors)
  return createServiceFetch({ baseUrl: server.url, apiKey, retry: false, abuseGuard: false, pacing });
}

/** `n` concurrent POSTs; the statuses (an error's status, or -1) */
function burst(
  f: ReturnType<typeof stack>,
  n: number,
  path: (i: number) => string,
  service: (i: number) => Record<string, unknown> = () => ({}),
) {
  return Promise.all(
    Array.from({ length: n }, (_, i) =>
      f(f.url(path(i)), { method: "POST", headers: { "content-type": "application/json" }, body: "{}", service: service(i) }).then(
        (r) => r.status,
        (e: { status?: number }) => e.status ?? -1,
      ),
    ),
  );
}

const LIMIT = 4;
const WINDOW = 400;
const pacing = { typeLimits: { image: LIMIT, audio: LIMIT, embedding: LIMIT }, typeWindowMs: WINDOW };

describe("pacing per model type, when the service sends no rate-limit headers", () => {
  it("a 3× burst to /image/generate and /images/generations (type told by the path) draws no 429", async () => {
    const svc = await limitedService(LIMIT, WINDOW);
    const f = stack(svc.server, pacing);
    const started = Date.now();
    const statuses = await burst(
      f,
      3 * LIMIT,
      (i) => (i % 2 ? "/image/generate" : "/images/generations"),
      () => ({ model: "img-model" }),
    );
    expect(svc.refused()).toBe(0);
    expect(statuses.every((s) => s === 200)).toBe(true);
    // paced, not merely lucky: three windows' worth took at least two windows
    expect(Date.now() - started).toBeGreaterThanOrEqual(2 * WINDOW);
  });

  it("embeddings and audio by their paths, and any path by the modelType hint", async () => {
    for (const [path, service] of [
      ["/embeddings", { model: "emb-model" }],
      ["/audio/speech", { model: "tts-model" }],
      ["/render/picture", { model: "img-x", modelType: "image" }],
      ["/images/generations", {}], // no model: keyed by its type
    ] as const) {
      const svc = await limitedService(LIMIT, WINDOW);
      const statuses = await burst(
        stack(svc.server, pacing, `k-${path}`),
        3 * LIMIT,
        () => path,
        () => service,
      );
      expect.soft(svc.refused(), path).toBe(0);
      expect
        .soft(
          statuses.every((s) => s === 200),
          path,
        )
        .toBe(true);
    }
  });

  it("headers, when sent, win over the type's limit: a lower one holds the burst, a higher one does not slow it", async () => {
    // the service allows 3 where the type says 8: the burst keeps to 3 per window
    const lower = await limitedService(3, WINDOW, true);
    expect(
      await burst(
        stack(lower.server, { typeLimits: { image: 8 }, typeWindowMs: WINDOW }),
        9,
        () => "/image/generate",
        () => ({ model: "m" }),
      ),
    ).toEqual(Array(9).fill(200));
    expect(lower.refused()).toBe(0);
    // the service allows 12 where the type says 2: all go within the first window
    const higher = await limitedService(12, 5_000, true);
    const started = Date.now();
    await burst(
      stack(higher.server, { typeLimits: { image: 2 }, typeWindowMs: 5_000 }),
      12,
      () => "/image/generate",
      () => ({ model: "m" }),
    );
    expect(higher.refused()).toBe(0);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("text (chat) without headers stays unpaced: after the probe, the burst goes at once", async () => {
    const arrived: number[] = [];
    const server = await startFixtureServer((_req, res) => (arrived.push(Date.now()), json(res, { ok: true })));
    servers.push(server);
    // even with every type's limit set small, chat has none
    const f = stack(server, { typeLimits: { image: 1, audio: 1, embedding: 1, video: 1 }, typeWindowMs: 5_000 });
    await burst(
      f,
      12,
      () => "/chat/completions",
      () => ({ model: "chat-model" }),
    );
    expect(arrived).toHaveLength(12);
    expect(arrived.at(-1)! - arrived[0]!).toBeLessThan(1_000);
  });

  it("the type limits and the hint are checked before any request", async () => {
    const base = { apiKey: "k", baseUrl: "http://127.0.0.1:9/api/v1" };
    expect(() => createServiceFetch({ ...base, pacing: { typeLimits: { picture: 3 } as never } })).toThrow(/unknown model type "picture"/);
    expect(() => createServiceFetch({ ...base, pacing: { typeLimits: { image: 0 } } })).toThrow(
      /typeLimits\.image must be a positive integer/,
    );
    expect(() => createServiceFetch({ ...base, pacing: { typeWindowMs: -1 } })).toThrow(ConfigurationError);
    const svc = await limitedService(LIMIT, WINDOW);
    const f = stack(svc.server, pacing);
    await expect(f(f.url("/image/generate"), { method: "POST", service: { modelType: "picture" as never } })).rejects.toBeInstanceOf(
      ValidationError,
    );
    expect(svc.server.requests).toHaveLength(0);
  });
});

describe("against the emulator", () => {
  it("a burst of generate_image and generateImage over a low image limit, its headers stripped on the way, draws no 429", async () => {
    const emu = await startEmulator({
      apiKeys: [{ key: "k-img", usd: 50, diem: 0 }],
      rateLimits: { windowMs: 1_000, types: { image: { requests: 3 } } },
    });
    try {
      const statuses: number[] = [];
      const client = new ServiceClient({
        baseUrl: emu.url,
        apiKey: "k-img",
        retry: false,
        pacing: { typeLimits: { image: 3 }, typeWindowMs: 1_000 },
        // a gateway that enforces the limit but drops its x-ratelimit-* headers
        fetch: async (input, init) => {
          const res = await fetch(input, init);
          statuses.push(res.status);
          const headers = new Headers([...res.headers].filter(([name]) => !name.startsWith("x-ratelimit-")));
          return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
        },
      });
      const tool = new ImageGenerationTool({ client, model: "emu-image", width: 8, height: 8 });
      const image = { model: "emu-image", prompt: "a boat", width: 8, height: 8 };
      await Promise.all(
        Array.from({ length: 9 }, (_, i) => (i % 2 ? tool.invoke({ prompt: `a lighthouse ${i}` }) : generateImage(client, image))),
      );
      expect(statuses).toHaveLength(9);
      expect(statuses.filter((s) => s === 429)).toHaveLength(0);
    } finally {
      await emu.close();
    }
  });
});
