/**
 * Billing usage over the ledger, for ADMIN API keys (an INFERENCE key and a wallet's sign-in get 401, no
 * credentials the discovery 402). Live: GET /billing/usage-history (ascending; a first page with filters or a
 * continuation by `cursor` alone, signed so a tampered one is a 400; `nextCursor` null at the end; JSON, or CSV with
 * `x-next-cursor`), and GET /billing/usage retired: 410 with `Deprecation`, `Sunset` and `Link`. Seed: the published
 * GET /billing/usage (`page`/`limit`, `startDate`/`endDate`, `sortOrder`) and no usage-history (404).
 *
 * A row per CHARGE (negative) and REFUND (positive) portion and currency (DIEM, USD); its SKU is
 * `<model>-<unit>` (`<model>-llm-usage-mtoken` for chat), its `inferenceDetails.requestId` the ledger's request id.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { EmulatorHttpError, isLiveMode, type Account, type Caller, type EmulatorContext, type RouteSpec } from "../types.js";
import { badRequest } from "./strict-body.js";

const UNIT_OF_KIND: Record<string, string> = {
  chat: "llm-usage-mtoken",
  image: "image-unit",
  "image-edit": "edit-unit",
  upscale: "upscale-unit",
  "background-remove": "image-unit",
  speech: "tts-mchar",
  "voice-clone": "voice-clone",
  transcription: "asr-second",
  video: "video-second",
  "audio-job": "audio-unit",
  embedding: "embedding-mtoken",
  "crypto-rpc": "rpc-credit",
  search: "search-unit",
  scrape: "scrape-unit",
};

interface UsageRow {
  timestamp: string;
  sku: string;
  units: number;
  pricePerUnitUsd: number;
  amount: number;
  currency: "USD" | "DIEM";
  notes: string;
  inferenceDetails: { requestId: string; promptTokens: null; completionTokens: null; inferenceExecutionTime: null } | null;
}

function round6(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}

/** The account's charges and refunds as usage rows, oldest first. */
function rowsOf(account: Account): UsageRow[] {
  const rows: UsageRow[] = [];
  for (const e of account.entries) {
    if (e.type === "TOP_UP") continue;
    const sign = e.type === "CHARGE" ? -1 : 1;
    const total = Math.abs(e.amount);
    const diem = Math.abs(e.diem ?? 0);
    const portions: [UsageRow["currency"], number][] = [
      ["DIEM", diem],
      ["USD", round6(total - diem)],
    ];
    const model = e.modelId ?? e.kind ?? "service";
    const unit = UNIT_OF_KIND[e.kind ?? ""] ?? "request-unit";
    for (const [currency, amount] of portions) {
      if (amount <= 0) continue;
      rows.push({
        timestamp: e.createdAt,
        sku: `${model}-${unit}`,
        units: 1,
        pricePerUnitUsd: amount,
        amount: round6(sign * amount),
        currency,
        notes: e.type === "REFUND" ? "Refund" : "API Inference",
        inferenceDetails: e.requestId
          ? { requestId: e.requestId, promptTokens: null, completionTokens: null, inferenceExecutionTime: null }
          : null,
      });
    }
  }
  return rows;
}

function adminAccount(caller: Caller): Account {
  if (caller.kind !== "apiKey")
    throw new EmulatorHttpError(401, { error: "Authentication failed: billing takes an API key (Bearer), not a wallet sign-in" });
  if (caller.account.admin === false) throw new EmulatorHttpError(401, { error: "Admin API key required" });
  return caller.account;
}

const ISO_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;
const CURRENCIES = ["USD", "DIEM", "BUNDLED_CREDITS", "EARNED_CREDITS"];

interface Walk {
  /** account id digest: a cursor is good only for its caller */
  a: string;
  s?: string;
  e?: string;
  c?: string;
  p: number;
  o: number;
}

const secrets = new WeakMap<EmulatorContext, Buffer>();
function secretOf(ctx: EmulatorContext): Buffer {
  let s = secrets.get(ctx);
  if (!s) secrets.set(ctx, (s = randomBytes(32)));
  return s;
}

/** the MAC's length at the cursor's end (base64url has no character free to separate it: the length does) */
const MAC_CHARS = 22;

function mac(ctx: EmulatorContext, body: string): string {
  return createHmac("sha256", secretOf(ctx)).update(body).digest("base64url").slice(0, MAC_CHARS);
}

function sign(ctx: EmulatorContext, walk: Walk): string {
  const body = Buffer.from(JSON.stringify(walk)).toString("base64url");
  return `${body}${mac(ctx, body)}`;
}

function unsign(ctx: EmulatorContext, cursor: string, account: Account): Walk {
  const bad = () => badRequest("Invalid or expired cursor; restart from the first page", { _errors: [], cursor: { _errors: ["Invalid"] } });
  if (cursor.length > 512 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw bad();
  const body = cursor.slice(0, -MAC_CHARS);
  const got = Buffer.from(cursor.slice(-MAC_CHARS));
  const want = Buffer.from(mac(ctx, body));
  if (body.length === 0 || got.length !== want.length || !timingSafeEqual(got, want)) throw bad();
  const walk = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as Walk;
  if (walk.a !== accountDigest(ctx, account)) throw bad();
  return walk;
}

function accountDigest(ctx: EmulatorContext, account: Account): string {
  return createHmac("sha256", secretOf(ctx)).update(account.id).digest("base64url").slice(0, 12);
}

function csvOf(rows: UsageRow[]): string {
  const head =
    "timestamp,sku,pricePerUnitUsd,units,amount,currency,notes,inferenceDetails.requestId,inferenceDetails.inferenceExecutionTime,inferenceDetails.promptTokens,inferenceDetails.completionTokens";
  const cell = (v: unknown) =>
    v === null || v === undefined ? "" : /[",\n]/.test(String(v)) ? `"${String(v).replace(/"/g, '""')}"` : String(v);
  return `${[head, ...rows.map((r) => [r.timestamp, r.sku, r.pricePerUnitUsd, r.units, r.amount, r.currency, r.notes, r.inferenceDetails?.requestId, null, null, null].map(cell).join(","))].join("\n")}\n`;
}

function inRange(rows: UsageRow[], start?: string, end?: string, currency?: string): UsageRow[] {
  return rows.filter(
    (r) =>
      (!start || r.timestamp >= new Date(start).toISOString()) &&
      (!end || r.timestamp < new Date(end).toISOString()) &&
      (!currency || r.currency === currency),
  );
}

export const billingRoutes = {
  usageHistory: {
    auth: "required",
    handler(req, ctx, caller) {
      if (!isLiveMode(ctx.options)) throw new EmulatorHttpError(404, { error: "Not found" });
      const account = adminAccount(caller);
      const q = req.query;
      for (const key of q.keys()) {
        if (!["startTimestamp", "endTimestamp", "currency", "pageSize", "cursor"].includes(key))
          throw badRequest("Invalid request", { _errors: [`Unrecognized key: "${key}"`] });
      }
      let walk: Walk;
      if (q.has("cursor")) {
        if ([...q.keys()].some((k) => k !== "cursor"))
          throw badRequest("A cursor is sent alone (it carries the filters of its walk)", { _errors: ["cursor with filters"] });
        walk = unsign(ctx, q.get("cursor")!, account);
      } else {
        const s = q.get("startTimestamp") ?? undefined;
        const e = q.get("endTimestamp") ?? undefined;
        for (const [name, v] of [
          ["startTimestamp", s],
          ["endTimestamp", e],
        ] as const) {
          if (v !== undefined && (v.length > 40 || !ISO_Z.test(v) || !Number.isFinite(Date.parse(v))))
            throw badRequest(`Invalid ${name}`, { _errors: [], [name]: { _errors: ["ISO 8601 UTC with a Z suffix"] } });
        }
        if (s && e && Date.parse(e) <= Date.parse(s))
          throw badRequest("endTimestamp must be later than startTimestamp", {
            _errors: [],
            endTimestamp: { _errors: ["Not after startTimestamp"] },
          });
        const c = q.get("currency") ?? undefined;
        if (c !== undefined && !CURRENCIES.includes(c))
          throw badRequest("Invalid currency", { _errors: [], currency: { _errors: [`Expected one of ${CURRENCIES.join(", ")}`] } });
        const p = q.has("pageSize") ? Number(q.get("pageSize")) : 1000;
        if (!Number.isInteger(p) || p < 10 || p > 1000)
          throw badRequest("pageSize must be 10 to 1000", { _errors: [], pageSize: { _errors: ["10..1000"] } });
        walk = { a: accountDigest(ctx, account), ...(s ? { s } : {}), ...(e ? { e } : {}), ...(c ? { c } : {}), p, o: 0 };
      }
      const rows = inRange(rowsOf(account), walk.s, walk.e, walk.c);
      const page = rows.slice(walk.o, walk.o + walk.p);
      const next = walk.o + walk.p < rows.length ? sign(ctx, { ...walk, o: walk.o + walk.p }) : null;
      if ((req.headers.accept ?? "").includes("text/csv")) {
        const stamp = new Date(ctx.now()).toISOString().replace(/[-:.]/g, "");
        return {
          status: 200,
          headers: {
            "content-type": "text/csv; charset=utf-8",
            "content-disposition": `attachment; filename=billing-usage-history-${stamp}.csv`,
            ...(next ? { "x-next-cursor": next } : {}),
          },
          body: csvOf(page),
        };
      }
      return { status: 200, body: { data: page, nextCursor: next } };
    },
  },
  usage: {
    // live: 410 to every request, with credentials or without
    auth: "optional",
    handler(req, ctx, caller) {
      if (isLiveMode(ctx.options)) {
        throw new EmulatorHttpError(
          410,
          {
            error:
              "GET /billing/usage was retired on 2026-09-16: use GET /billing/usage-history (page + limit -> pageSize + nextCursor; startDate / endDate -> startTimestamp / endTimestamp)",
          },
          {
            deprecation: "@1783555200",
            sunset: "Wed, 16 Sep 2026 00:00:00 GMT",
            link: '</api/v1/billing/usage-history>; rel="successor-version"',
          },
        );
      }
      const account = adminAccount(caller);
      const q = req.query;
      const page = q.has("page") ? Number(q.get("page")) : 1;
      const limit = q.has("limit") ? Number(q.get("limit")) : 200;
      if (!Number.isInteger(page) || page < 1)
        throw badRequest("page must be a positive integer", { _errors: [], page: { _errors: [">= 1"] } });
      if (!Number.isInteger(limit) || limit < 1 || limit > 500)
        throw badRequest("limit must be 1 to 500", { _errors: [], limit: { _errors: ["1..500"] } });
      const order = q.get("sortOrder") ?? "desc";
      if (order !== "asc" && order !== "desc")
        throw badRequest("Invalid sortOrder", { _errors: [], sortOrder: { _errors: ["asc | desc"] } });
      const dates = ["startDate", "endDate"].map((k) => q.get(k) ?? undefined);
      for (const d of dates)
        if (d !== undefined && !Number.isFinite(Date.parse(d)))
          throw badRequest("Invalid date", { _errors: ["startDate / endDate must be ISO times"] });
      let rows = inRange(rowsOf(account), dates[0], dates[1], q.get("currency") ?? undefined);
      if (order === "desc") rows = rows.reverse();
      const totalPages = Math.max(1, Math.ceil(rows.length / limit));
      return {
        status: 200,
        headers: {
          "x-pagination-limit": String(limit),
          "x-pagination-page": String(page),
          "x-pagination-total": String(rows.length),
          "x-pagination-total-pages": String(totalPages),
        },
        body: { data: rows.slice((page - 1) * limit, page * limit), pagination: { limit, page, total: rows.length, totalPages } },
      };
    },
  },
} satisfies Record<string, RouteSpec>;
