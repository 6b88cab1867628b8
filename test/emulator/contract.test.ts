/**
 * The emulator against its own contract (spec parts 2.5, 4, 5, 7, 8): each endpoint, each always-present
 * header, each error status, over real loopback HTTP with plain fetch.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_NETWORKS, MODELS, startEmulator, type Emulator } from "langchain-service-emulator";
import { bearer, probeRoute } from "./helpers.js";

const SPEC_NETWORKS = [
  "arbitrum-mainnet",
  "arbitrum-sepolia",
  "avalanche-fuji",
  "avalanche-mainnet",
  "base-mainnet",
  "base-sepolia",
  "bsc-mainnet",
  "bsc-testnet",
  "ethereum-holesky",
  "ethereum-mainnet",
  "ethereum-sepolia",
  "linea-mainnet",
  "linea-sepolia",
  "optimism-mainnet",
  "optimism-sepolia",
  "polygon-amoy",
  "polygon-mainnet",
  "solana-devnet",
  "solana-mainnet",
  "starknet-mainnet",
  "starknet-sepolia",
  "zksync-mainnet",
  "zksync-sepolia",
];

let emu: Emulator;

beforeAll(async () => {
  emu = await startEmulator({
    // the seed contract (the live differences: live-mode.test.ts)
    mode: "seed",
    apiKeys: ["key-main", { key: "key-empty", usd: 0, diem: 0 }, { key: "key-pro", pro: true }, { key: "key-partner", partner: true }],
    routes: [probeRoute],
    // the table provokes many 4xx on purpose: keep the abuse block out of this file's way
    rateLimits: { abuseMaxFailures: 10_000 },
  });
});
afterAll(() => emu?.close());

interface Row {
  name: string;
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
  status: number;
  /** authenticated rows carry x-ratelimit-* and balance headers */
  authenticated?: boolean;
  check?: (body: any, headers: Headers) => void;
}

const probe = (model: string, extra: Record<string, unknown> = {}) => ({ model, ...extra });

const rows: Row[] = [
  {
    name: "GET /models lists the catalog with capabilities (anonymous)",
    path: "/models",
    status: 200,
    check(body) {
      expect(body.object).toBe("list");
      expect(body.data.map((m: { id: string }) => m.id)).toEqual(MODELS.map((m) => m.id));
      const reasoner = body.data.find((m: { id: string }) => m.id === "emu-reasoner");
      expect(reasoner).toMatchObject({ object: "model", type: "text", owned_by: "service.example" });
      expect(reasoner.model_spec.capabilities).toMatchObject({ supportsReasoning: true, supportsFunctionCalling: true });
      for (const flag of [
        "supportsVision",
        "supportsWebSearch",
        "supportsResponseSchema",
        "supportsLogProbs",
        "supportsE2EE",
        "quantization",
      ]) {
        expect(reasoner.model_spec.capabilities).toHaveProperty(flag);
      }
      expect(reasoner.model_spec.pricing.input.usd).toBe(0.6);
      expect(reasoner.model_spec.availableContextTokens).toBeGreaterThan(0);
      const legacy = body.data.find((m: { id: string }) => m.id === "emu-legacy");
      expect(legacy.model_spec.deprecation.date).toBe("2030-01-01T00:00:00.000Z");
      expect(reasoner.model_spec.deprecation).toBeUndefined();
    },
  },
  {
    name: "GET /models with a key is authenticated",
    path: "/models?type=text",
    headers: bearer("key-main"),
    status: 200,
    authenticated: true,
    check: (body) => expect(body.data).toHaveLength(MODELS.length),
  },
  {
    name: "GET /models?type=image lists image models only, no text models",
    path: "/models?type=image",
    status: 200,
    check: (b) => {
      expect(b.data.length).toBeGreaterThan(0);
      for (const m of b.data) expect(m.type).toBe("image");
      expect(b.data.map((m: { id: string }) => m.id)).not.toEqual(expect.arrayContaining([MODELS[0]!.id]));
    },
  },
  {
    name: "GET /models?type=bogus is a 400 with details",
    path: "/models?type=bogus",
    status: 400,
    check: (b) => expect(b.details).toBeDefined(),
  },
  {
    name: "a bad key is 401 StandardError",
    path: "/models",
    headers: bearer("nope"),
    status: 401,
    check: (b) => expect(b).toEqual({ error: "Authentication failed" }),
  },
  { name: "a malformed Authorization header is 401", path: "/models", headers: { authorization: "Basic abc" }, status: 401 },
  {
    name: "GET /api_keys/rate_limits: balances, tier and per-model limits",
    path: "/api_keys/rate_limits",
    headers: bearer("key-main"),
    status: 200,
    authenticated: true,
    check(body) {
      expect(body.data).toMatchObject({
        accessPermitted: true,
        apiTier: { id: "paid", isCharged: true },
        balances: { USD: 100, DIEM: 10 },
        keyExpiration: null,
      });
      expect(Date.parse(body.data.nextEpochBegins)).toBeGreaterThan(Date.now());
      const l = body.data.rateLimits.find((r: { apiModelId: string }) => r.apiModelId === "emu-l");
      expect(l.rateLimits).toEqual([
        { type: "RPM", amount: 20 },
        { type: "TPM", amount: 500_000 },
      ]);
      const xs = body.data.rateLimits.find((r: { apiModelId: string }) => r.apiModelId === "emu-xs");
      expect(xs.rateLimits).toEqual([
        { type: "RPM", amount: 500 },
        { type: "TPM", amount: 1_000_000 },
      ]);
    },
  },
  {
    name: "GET /api_keys/rate_limits: partner keys get partner limits",
    path: "/api_keys/rate_limits",
    headers: bearer("key-partner"),
    status: 200,
    authenticated: true,
    check(body) {
      expect(body.data.apiTier.id).toBe("partner");
      const s = body.data.rateLimits.find((r: { apiModelId: string }) => r.apiModelId === "emu-s");
      expect(s.rateLimits).toEqual([
        { type: "RPM", amount: 150 },
        { type: "TPM", amount: 1_500_000 },
      ]);
    },
  },
  {
    name: "GET /api_keys/rate_limits without credentials is the x402 discovery 402",
    path: "/api_keys/rate_limits",
    status: 402,
    check(body, headers) {
      expect(body.x402Version).toBe(2);
      expect(body.resource.url).toContain("/api_keys/rate_limits");
      expect(Array.isArray(body.accepts)).toBe(true);
      expect(body.authOptions.x402Wallet.header).toBe("SIGN-IN-WITH-X");
      const decoded = JSON.parse(Buffer.from(headers.get("payment-required")!, "base64").toString("utf8"));
      expect(decoded.x402Version).toBe(2);
    },
  },
  {
    name: "GET /api_keys/rate_limit_logs",
    path: "/api_keys/rate_limit_logs",
    headers: bearer("key-main"),
    status: 200,
    authenticated: true,
    check: (b) => expect(b).toEqual({ object: "list", data: [] }),
  },
  {
    name: "GET /api_keys/rate_limits/log",
    path: "/api_keys/rate_limits/log",
    headers: bearer("key-main"),
    status: 200,
    authenticated: true,
    check: (b) => expect(b).toEqual({ object: "list", data: [] }),
  },
  // no chain here: of the 23 published slugs, only those LiteSVM serves are listed (a listed slug must be servable)
  {
    name: "GET /crypto/rpc/networks: the slugs it has a node for, sorted, public",
    path: "/crypto/rpc/networks",
    status: 200,
    check: (b) => expect(b).toEqual({ networks: SPEC_NETWORKS.filter((n) => n.startsWith("solana-")) }),
  },
  {
    name: "GET /crypto/rpc/networks ignores credentials (public)",
    path: "/crypto/rpc/networks",
    headers: bearer("nope"),
    status: 200,
    check: (b) => expect(b.networks).toEqual(["solana-devnet", "solana-mainnet"]),
  },
  {
    name: "unknown path is 404 JSON",
    path: "/no/such/thing",
    headers: bearer("key-main"),
    status: 404,
    check: (b) => expect(b).toEqual({ error: "Not found" }),
  },
  { name: "wrong method is 405", method: "DELETE", path: "/models", status: 405, check: (b) => expect(b.error).toBe("Method not allowed") },
  {
    name: "payment headers are refused outside /x402/top-up",
    path: "/models",
    headers: { "payment-signature": "e30=" },
    status: 400,
    check: (b) => expect(b.code).toBe("PAYMENT_HEADER_NOT_ACCEPTED"),
  },
  {
    name: "inference: model headers",
    method: "POST",
    path: "/probe/inference",
    headers: bearer("key-main"),
    body: probe("emu-m"),
    status: 200,
    authenticated: true,
    check(body, h) {
      expect(body.ok).toBe(true);
      expect(h.get("x-service-model-id")).toBe("emu-m");
      expect(h.get("x-service-model-name")).toBe("Emulator M");
      expect(h.get("x-service-model-router")).toBe("emu-router-medium");
      expect(h.get("x-service-model-deprecation-warning")).toBeNull();
    },
  },
  {
    name: "inference: a feature suffix serves the base model",
    method: "POST",
    path: "/probe/inference",
    headers: bearer("key-main"),
    body: probe("emu-s:enable_web_search=on"),
    status: 200,
    authenticated: true,
    check: (_b, h) => expect(h.get("x-service-model-id")).toBe("emu-s"),
  },
  {
    name: "inference: deprecation headers for emu-legacy",
    method: "POST",
    path: "/probe/inference",
    headers: bearer("key-main"),
    body: probe("emu-legacy"),
    status: 200,
    authenticated: true,
    check(_b, h) {
      expect(h.get("x-service-model-deprecation-warning")).toContain("deprecated");
      expect(h.get("x-service-model-deprecation-date")).toBe("2030-01-01T00:00:00.000Z");
    },
  },
  {
    name: "inference: Pro-only model with a non-Pro key is 401",
    method: "POST",
    path: "/probe/inference",
    headers: bearer("key-main"),
    body: probe("emu-pro"),
    status: 401,
    authenticated: true,
    check: (b) => expect(b).toEqual({ error: "This model is available to Pro users only" }),
  },
  {
    name: "inference: Pro-only model with a Pro key is served",
    method: "POST",
    path: "/probe/inference",
    headers: bearer("key-pro"),
    body: probe("emu-pro"),
    status: 200,
    authenticated: true,
  },
  {
    name: "inference: a spent key is 402 INSUFFICIENT_BALANCE",
    method: "POST",
    path: "/probe/inference",
    headers: bearer("key-empty"),
    body: probe("emu-s"),
    status: 402,
    authenticated: true,
    check: (b, h) => {
      expect(b).toEqual({ error: "Insufficient balance", code: "INSUFFICIENT_BALANCE" });
      expect(h.get("x-service-balance-usd")).toBe("0");
    },
  },
  {
    name: "inference: unknown model is 400",
    method: "POST",
    path: "/probe/inference",
    headers: bearer("key-main"),
    body: probe("gpt-nope"),
    status: 400,
    authenticated: true,
  },
  {
    name: "inference: missing model is 400 with details",
    method: "POST",
    path: "/probe/inference",
    headers: bearer("key-main"),
    body: {},
    status: 400,
    authenticated: true,
    check: (b) => expect(b.details.model).toBeDefined(),
  },
  {
    name: "inference: invalid JSON is 400",
    method: "POST",
    path: "/probe/inference",
    headers: bearer("key-main"),
    body: "{not json",
    status: 400,
    authenticated: true,
  },
  {
    name: "inference without credentials is the discovery 402",
    method: "POST",
    path: "/probe/inference",
    body: probe("emu-s"),
    status: 402,
    check: (b) => expect(b.x402Version).toBe(2),
  },
  {
    name: "an invalid wallet sign-in header is 401",
    method: "POST",
    path: "/probe/inference",
    headers: { "sign-in-with-x": Buffer.from("{}").toString("base64") },
    body: probe("emu-s"),
    status: 401,
    check: (b) => expect(typeof b.error).toBe("string"),
  },
];

describe("emulator contract (table)", () => {
  it.each(rows)("$name", async (row) => {
    const init: RequestInit = { method: row.method ?? (row.body === undefined ? "GET" : "POST"), headers: { ...row.headers } };
    if (row.body !== undefined) {
      init.body = typeof row.body === "string" ? row.body : JSON.stringify(row.body);
      (init.headers as Record<string, string>)["content-type"] = "application/json";
    }
    const res = await fetch(`${emu.url}${row.path}`, init);
    const text = await res.text();
    expect(res.status, text).toBe(row.status);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const body = JSON.parse(text);
    if (row.status >= 400) expect(typeof body.error === "string" || typeof body.error === "object").toBe(true);

    // always-present headers (spec 2.5)
    expect(Number.isNaN(Date.parse(res.headers.get("date") ?? ""))).toBe(false);
    expect(res.headers.get("cf-ray")).toMatch(/^[0-9a-f]{16}-EMU$/);
    expect(res.headers.get("x-service-version")).toMatch(/^\d{8}\.\d{6}$/);

    if (row.authenticated) {
      for (const h of ["limit-requests", "remaining-requests", "reset-requests", "limit-tokens", "remaining-tokens", "reset-tokens"]) {
        expect(res.headers.get(`x-ratelimit-${h}`), h).toMatch(/^\d+$/);
      }
      expect(res.headers.get("x-ratelimit-type")).toBe("api_key");
      const resetAt = Number(res.headers.get("x-ratelimit-reset-requests"));
      expect(resetAt).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));
      expect(resetAt).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 61);
      expect(res.headers.get("x-service-balance-usd")).toMatch(/^\d+(\.\d+)?$/);
      expect(res.headers.get("x-service-balance-diem")).toMatch(/^\d+(\.\d+)?$/);
    } else {
      expect(res.headers.get("x-ratelimit-limit-requests")).toBeNull();
    }
    row.check?.(body, res.headers);
  });
});

describe("emulator contract (other behaviour)", () => {
  it("a path outside /api/v1 is 404", async () => {
    const res = await fetch(`${emu.origin}/v2/models`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: "Not found" });
  });

  it("balance headers show the balance before the request; the route charges the ledger", async () => {
    const local = await startEmulator({ apiKeys: [{ key: "k", usd: 1, diem: 0.1 }], routes: [probeRoute] });
    try {
      const first = await fetch(`${local.url}/probe/inference`, {
        method: "POST",
        headers: bearer("k"),
        body: JSON.stringify(probe("emu-s", { usd: 0.25 })),
      });
      expect(first.status).toBe(200);
      expect(first.headers.get("x-service-balance-usd")).toBe("1");
      expect(first.headers.get("x-service-balance-diem")).toBe("0.1");
      const second = await fetch(`${local.url}/probe/inference`, {
        method: "POST",
        headers: bearer("k"),
        body: JSON.stringify(probe("emu-s", { usd: 0.25 })),
      });
      // DIEM is billed first: 0.1 DIEM + 0.15 USD, then 0.25 USD
      expect(second.headers.get("x-service-balance-usd")).toBe("0.85");
      expect(second.headers.get("x-service-balance-diem")).toBe("0");
      expect(local.account("k")).toMatchObject({ usd: 0.6, diem: 0 });
      expect(local.ledger.totals(local.account("k")!)).toMatchObject({ charged: 0.5, charges: 2 });
    } finally {
      await local.close();
    }
  });

  it("the key runs dry: served while credit remains, then 402", async () => {
    const local = await startEmulator({ apiKeys: [{ key: "k", usd: 0.3, diem: 0 }], routes: [probeRoute] });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${local.url}/probe/inference`, {
          method: "POST",
          headers: bearer("k"),
          body: JSON.stringify(probe("emu-s", { usd: 0.2 })),
        });
        statuses.push(res.status);
        await res.arrayBuffer();
      }
      expect(statuses).toEqual([200, 200, 402]);
      expect(local.account("k")!.usd).toBe(0);
    } finally {
      await local.close();
    }
  });

  it("413 PAYLOAD_TOO_LARGE above 10 MB", async () => {
    const res = await fetch(`${emu.url}/probe/inference`, {
      method: "POST",
      headers: { ...bearer("key-main"), "content-type": "application/json" },
      body: "x".repeat(10 * 1024 * 1024 + 1),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
  });

  it("the brand setting renames every brand-carrying header", async () => {
    const acme = await startEmulator({ brand: "acme", apiKeys: ["k"], routes: [probeRoute] });
    try {
      const res = await fetch(`${acme.url}/probe/inference`, {
        method: "POST",
        headers: bearer("k"),
        body: JSON.stringify(probe("emu-legacy")),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-acme-version")).toMatch(/^\d{8}\.\d{6}$/);
      expect(res.headers.get("x-acme-model-id")).toBe("emu-legacy");
      expect(res.headers.get("x-acme-balance-usd")).toBe("100");
      expect(res.headers.get("x-acme-model-deprecation-date")).toBeTruthy();
      expect([...res.headers.keys()].filter((k) => k.startsWith("x-service-"))).toEqual([]);
      const models = await (await fetch(`${acme.url}/models`)).json();
      expect(models.data[0].owned_by).toBe("acme.example");
    } finally {
      await acme.close();
    }
  });

  it("options.networks replaces the network list (sorted, deduplicated)", async () => {
    const local = await startEmulator({ networks: ["solana-mainnet", "base-mainnet", "base-mainnet"] });
    try {
      expect(await (await fetch(`${local.url}/crypto/rpc/networks`)).json()).toEqual({ networks: ["base-mainnet", "solana-mainnet"] });
      expect(DEFAULT_NETWORKS).toEqual(SPEC_NETWORKS);
    } finally {
      await local.close();
    }
  });

  it("without apiKeys one random emu- key is created and accepted", async () => {
    const local = await startEmulator();
    try {
      expect(local.apiKeys).toHaveLength(1);
      expect(local.apiKeys[0]).toMatch(/^emu-[0-9a-f]{24}$/);
      expect(local.url).toBe(`http://127.0.0.1:${local.port}/api/v1`);
      const res = await fetch(`${local.url}/api_keys/rate_limits`, { headers: bearer(local.apiKeys[0]!) });
      expect(res.status).toBe(200);
    } finally {
      await local.close();
    }
  });

  it("bad options are refused before anything listens", async () => {
    await expect(startEmulator({ brand: "Bad Brand" })).rejects.toThrow(/brand/);
    await expect(startEmulator({ port: -1 })).rejects.toThrow(/port/);
    await expect(startEmulator({ apiKeys: [{ key: "secret-key-123", usd: -1 }] })).rejects.toThrow(/usd/);
    await expect(startEmulator({ apiKeys: [{ key: "secret-key-123", usd: -1 }] })).rejects.not.toThrow(/secret-key-123/);
    await expect(startEmulator({ faults: { errorRate: 2 } })).rejects.toThrow(/errorRate/);
  });

  it("close() is idempotent and frees the port", async () => {
    const local = await startEmulator();
    await Promise.all([local.close(), local.close()]);
    await expect(fetch(`${local.url}/models`)).rejects.toThrow();
  });
});
