/**
 * The emulator's characters and billing routes on the wire. Characters: Bearer keys only (a wallet's sign-in 401,
 * no credentials the discovery 402), filters and sorting, `limit` 1–100, a slug or an id, 404; chat applies a
 * character's system prompt and answers 404 for an unknown slug. Billing over the ledger: ADMIN keys only; live
 * `/billing/usage-history` (ascending, a signed cursor sent alone, CSV with `x-next-cursor`) and a retired
 * `/billing/usage` (410 with Deprecation, Sunset, Link); seed: the page-numbered `/billing/usage` and no history.
 */
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { createServiceFetch } from "../../src/stack.js";
import { EvmWallet } from "../../src/evm/index.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({
    apiKeys: [
      { key: "admin", usd: 10, diem: 0 },
      { key: "inference", usd: 10, diem: 0, admin: false },
      { key: "diem", usd: 10, diem: 1 },
    ],
    walletStartingUsd: 1,
    x402: { solana: false },
    rateLimits: { abuseMaxFailures: 10_000 },
  });
});
afterAll(async () => {
  await emu?.close();
});

async function get(path: string, key: string | null = "admin", headers: Record<string, string> = {}) {
  const res = await fetch(`${emu.url}${path}`, { headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers } });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    json: (res.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) : undefined,
  };
}

async function chat(key: string, extra: Record<string, unknown>) {
  const res = await fetch(`${emu.url}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "emu-s", messages: [{ role: "user", content: "Who are you?" }], ...extra }),
  });
  return { status: res.status, json: await res.json() };
}

describe("characters", () => {
  it("lists {object: list, data} (most imports first, adult ones only with isAdult=true), filters, sorts, pages", async () => {
    const all = await get("/characters");
    expect(all.json.object).toBe("list");
    expect(all.json.data.map((c: { slug: string }) => c.slug)).toEqual([
      "noir-detective",
      "socratic-tutor",
      "code-coach",
      "night-owl-poet",
      "ship-captain",
    ]);
    const first = all.json.data[0];
    expect(Object.keys(first).sort()).toEqual([
      "adult",
      "author",
      "createdAt",
      "description",
      "featured",
      "id",
      "modelId",
      "name",
      "photoUrl",
      "shareUrl",
      "slug",
      "stats",
      "tags",
      "updatedAt",
      "webEnabled",
    ]);
    expect(first.systemPrompt).toBeUndefined();
    expect((await get("/characters?isAdult=true")).json.data.map((c: { slug: string }) => c.slug)).toEqual(["velvet-muse"]);
    expect((await get("/characters?tags=Programming,Poetry")).json.data.map((c: { slug: string }) => c.slug)).toEqual([
      "code-coach",
      "night-owl-poet",
    ]);
    expect((await get("/characters?search=%23mystery")).json.data.map((c: { slug: string }) => c.slug)).toEqual(["noir-detective"]);
    expect((await get("/characters?sortBy=featured")).json.data.map((c: { slug: string }) => c.slug)).toEqual([
      "noir-detective",
      "socratic-tutor",
    ]);
    expect(
      (await get("/characters?sortBy=mostRecent&sortOrder=asc&limit=2&offset=1")).json.data.map((c: { slug: string }) => c.slug),
    ).toEqual(["socratic-tutor", "code-coach"]);
    expect((await get("/characters?isPro=true")).json.data.map((c: { slug: string }) => c.slug)).toEqual(["ship-captain"]);
    for (const bad of ["limit=101", "sortBy=best", `search=${"x".repeat(201)}`, "isAdult=yes", "colour=red"])
      expect((await get(`/characters?${bad}`)).status).toBe(400);
  });

  it("one character by slug or by id ({object: character, data}); 404 for none", async () => {
    const bySlug = await get("/characters/code-coach");
    expect(bySlug.json).toMatchObject({ object: "character", data: { slug: "code-coach", name: "Code Coach" } });
    expect((await get(`/characters/${bySlug.json.data.id}`)).json.data.slug).toBe("code-coach");
    expect((await get("/characters/nobody")).status).toBe(404);
  });

  it("takes Bearer keys only: a wallet's sign-in is 401, no credentials the x402 discovery 402", async () => {
    const wallet = new EvmWallet(Wallet.createRandom().privateKey);
    const res = await createServiceFetch({ baseUrl: emu.url, wallet, retry: false })(`${emu.url}/characters`, {
      service: { throwOnError: false },
    });
    expect(res.status).toBe(401);
    const none = await get("/characters", null);
    expect(none.status).toBe(402);
    expect(none.json.x402Version).toBe(2);
  });

  it("chat with character_slug: the character's system prompt goes first (more prompt tokens); an unknown slug is 404, not charged", async () => {
    const plain = await chat("admin", {});
    const persona = await chat("admin", { service_parameters: { character_slug: "socratic-tutor" } });
    expect(persona.status).toBe(200);
    expect(persona.json.service_parameters.character_slug).toBe("socratic-tutor");
    expect(persona.json.usage.prompt_tokens).toBeGreaterThan(plain.json.usage.prompt_tokens);
    const before = emu.account("admin")!.entries.length;
    const unknown = await chat("admin", { service_parameters: { character_slug: "nobody" } });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toBe("No character could be found from the provided character_slug");
    expect((await chat("admin", { model: "emu-s:character_slug=nobody" })).status).toBe(404);
    expect(emu.account("admin")!.entries.length).toBe(before);
  });
});

describe("billing usage over the ledger", () => {
  it("live: /billing/usage-history is the ledger's charges as rows, ascending, by currency (DIEM first), the request id in inferenceDetails", async () => {
    await chat("diem", {});
    await chat("diem", {});
    const r = await get("/billing/usage-history", "diem");
    expect(r.json.nextCursor).toBeNull();
    const rows = r.json.data;
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(Object.keys(rows[0]).sort()).toEqual([
      "amount",
      "currency",
      "inferenceDetails",
      "notes",
      "pricePerUnitUsd",
      "sku",
      "timestamp",
      "units",
    ]);
    expect(rows[0]).toMatchObject({ sku: "emu-s-llm-usage-mtoken", currency: "DIEM", notes: "API Inference" });
    expect(rows[0].amount).toBeLessThan(0);
    expect(rows[0].inferenceDetails.requestId).toMatch(/^chatcmpl-/);
    const stamps = rows.map((x: { timestamp: string }) => x.timestamp);
    expect(stamps).toEqual([...stamps].sort());
    const sum = rows.reduce((s: number, x: { amount: number }) => s + x.amount, 0);
    expect(sum).toBeCloseTo(-emu.ledger.totals(emu.account("diem")!).charged, 6);
  });

  it("pages with a cursor sent alone; a cursor with filters, a tampered cursor, an unknown parameter, a bad range are 400; CSV carries x-next-cursor", async () => {
    for (let i = 0; i < 12; i++) await chat("admin", {});
    const first = await get("/billing/usage-history?pageSize=10&startTimestamp=2020-01-01T00:00:00Z");
    expect(first.json.data).toHaveLength(10);
    const cursor = first.json.nextCursor as string;
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    const second = await get(`/billing/usage-history?cursor=${cursor}`);
    expect(second.json.data.length).toBeGreaterThan(0);
    expect(second.json.data[0].timestamp >= first.json.data[9].timestamp).toBe(true);
    expect((await get(`/billing/usage-history?cursor=${cursor}&pageSize=10`)).status).toBe(400);
    const tampered = `${cursor.slice(0, -3)}${cursor.endsWith("AAA") ? "BBB" : "AAA"}`;
    expect((await get(`/billing/usage-history?cursor=${tampered}`)).json.error).toBe(
      "Invalid or expired cursor; restart from the first page",
    );
    expect((await get(`/billing/usage-history?cursor=${cursor}`, "diem")).status).toBe(400); // another caller's
    expect((await get("/billing/usage-history?page=2")).status).toBe(400);
    expect((await get("/billing/usage-history?pageSize=5")).status).toBe(400);
    expect((await get("/billing/usage-history?startTimestamp=2026-01-02T00:00:00Z&endTimestamp=2026-01-01T00:00:00Z")).status).toBe(400);
    expect((await get("/billing/usage-history?startTimestamp=2026-01-01")).status).toBe(400);
    const csv = await get("/billing/usage-history?pageSize=10", "admin", { accept: "text/csv" });
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(csv.text.split("\n")[0]).toMatch(/^timestamp,sku,pricePerUnitUsd,units,amount,currency,notes,inferenceDetails.requestId/);
    expect(csv.text.trim().split("\n")).toHaveLength(11);
    expect(csv.headers.get("x-next-cursor")).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it("takes ADMIN keys only: an INFERENCE key 401 'Admin API key required', a wallet 401, no credentials 402", async () => {
    expect((await get("/billing/usage-history", "inference")).json.error).toBe("Admin API key required");
    const wallet = new EvmWallet(Wallet.createRandom().privateKey);
    const res = await createServiceFetch({ baseUrl: emu.url, wallet, retry: false })(`${emu.url}/billing/usage-history`, {
      service: { throwOnError: false },
    });
    expect(res.status).toBe(401);
    expect((await get("/billing/usage-history", null)).status).toBe(402);
  });

  it("live: GET /billing/usage is retired: 410 to everyone, naming its successor", async () => {
    for (const key of ["admin", null]) {
      const r = await get("/billing/usage", key);
      expect(r.status).toBe(410);
      expect(r.json.error).toMatch(/usage-history/);
      expect(r.headers.get("sunset")).toBe("Wed, 16 Sep 2026 00:00:00 GMT");
      expect(r.headers.get("deprecation")).toBe("@1783555200");
      expect(r.headers.get("link")).toContain('rel="successor-version"');
    }
  });

  it("seed: the published page-numbered /billing/usage ({data, pagination}), and no usage-history", async () => {
    const seed = await startEmulator({ mode: "seed", apiKeys: [{ key: "k", usd: 10, diem: 0 }] });
    try {
      for (let i = 0; i < 3; i++) {
        await fetch(`${seed.url}/chat/completions`, {
          method: "POST",
          headers: { authorization: "Bearer k", "content-type": "application/json" },
          body: JSON.stringify({ model: "emu-s", messages: [{ role: "user", content: "hi" }] }),
        });
      }
      const page = await fetch(`${seed.url}/billing/usage?limit=2&page=2&sortOrder=asc`, { headers: { authorization: "Bearer k" } });
      const body = await page.json();
      expect(body.pagination).toEqual({ limit: 2, page: 2, total: 3, totalPages: 2 });
      expect(body.data).toHaveLength(1);
      expect((await fetch(`${seed.url}/billing/usage-history`, { headers: { authorization: "Bearer k" } })).status).toBe(404);
    } finally {
      await seed.close();
    }
  });
});
