/**
 * An API-key account's usage, read from the ledger the service publishes and summed per model. The live service
 * answers `GET /billing/usage-history` (ascending, keyset pages: `nextCursor`, sent alone) and retired the
 * published `GET /billing/usage` (410 since 2026-09-16); a deployment without the new route (404) is read at
 * the old one (`page`/`limit`, `startDate`/`endDate`). Both need an ADMIN key; a wallet has its own ledger
 * (`getX402Transactions`), so a wallet client is refused before any request.
 *
 * A row is one charge (or refund) of one request: `amount` is negative for a debit; one request may be several
 * rows (input and output tokens, add-ons), so requests are counted by distinct `requestId`.
 */
import { z } from "zod";
import { ValidationError } from "../http/errors.js";
import type { ServiceResponseHeaders } from "../http/headers.js";
import { checkArgs, parseWith, type ServiceApi } from "../api/request.js";
import { requireApiKey } from "./bearer-only.js";

export const USAGE_CURRENCIES = ["USD", "DIEM", "BUNDLED_CREDITS", "EARNED_CREDITS"] as const;
export type UsageCurrency = (typeof USAGE_CURRENCIES)[number];

export interface UsageRange {
  /** inclusive start (a Date or an ISO time) */
  from?: Date | string;
  /** exclusive end (a Date or an ISO time); later than `from` */
  to?: Date | string;
  currency?: UsageCurrency;
  /** rows per page, 10–1000 (default 1000; the old route takes at most 500) */
  pageSize?: number;
  /** stop after this many pages (default 100) */
  maxPages?: number;
  /** model ids to match SKUs against (longest first); without them a SKU's unit suffix is cut off */
  models?: string[];
  signal?: AbortSignal;
}

export interface UsageEntry {
  timestamp: string;
  sku: string;
  /** the model the SKU bills (see `modelOfSku`) */
  model: string;
  units: number;
  pricePerUnitUsd: number;
  /** negative for a debit, positive for a refund */
  amount: number;
  currency: string;
  notes?: string;
  requestId?: string;
  promptTokens?: number;
  completionTokens?: number;
  inferenceExecutionTimeMs?: number;
}

export interface ModelUsage {
  model: string;
  /** spent in USD (USD, bundled and earned credits), refunds subtracted */
  usd: number;
  /** spent in the staking token (DIEM), refunds subtracted */
  diem: number;
  /** ledger rows */
  entries: number;
  /** distinct request ids */
  requests: number;
  promptTokens: number;
  completionTokens: number;
}

export interface UsageReport {
  from?: string;
  to?: string;
  entries: UsageEntry[];
  /** one line per model, most spent first */
  byModel: ModelUsage[];
  totalUsd: number;
  totalDiem: number;
  /** the route that answered */
  source: "usage-history" | "usage";
  pages: number;
  headers?: ServiceResponseHeaders;
}

const rowSchema = z
  .object({
    timestamp: z.union([z.string(), z.number()]),
    sku: z.string(),
    units: z.number(),
    pricePerUnitUsd: z.number(),
    amount: z.number(),
    currency: z.string(),
    notes: z.string().nullish(),
    inferenceDetails: z
      .object({
        requestId: z.string().nullish(),
        promptTokens: z.number().nullish(),
        completionTokens: z.number().nullish(),
        inferenceExecutionTime: z.number().nullish(),
      })
      .passthrough()
      .nullish(),
  })
  .passthrough();
const historySchema = z.object({ data: z.array(rowSchema), nextCursor: z.string().nullable().optional() }).passthrough();
const legacySchema = z
  .object({ data: z.array(rowSchema), pagination: z.object({ page: z.number(), totalPages: z.number() }).passthrough() })
  .passthrough();
type Row = z.infer<typeof rowSchema>;

/**
 * The model a SKU bills: the longest of `models` it starts with (followed by `-`), else the SKU without its unit
 * part: `<model>-llm-<kind>-mtoken` for text (`zai-org-glm-5-1-llm-output-mtoken`), `<model>-<kind>-<unit>` for
 * the rest (`grok-imagine-image-image-unit`).
 */
export function modelOfSku(sku: string, models: readonly string[] = []): string {
  const known = [...models].sort((a, b) => b.length - a.length).find((m) => sku === m || sku.startsWith(`${m}-`));
  if (known) return known;
  const llm = /^(.+)-llm-[a-z-]+-mtoken$/.exec(sku);
  if (llm) return llm[1]!;
  const parts = sku.split("-");
  return parts.length > 2 ? parts.slice(0, -2).join("-") : sku;
}

function isoOf(value: Date | string | undefined, name: string): string | undefined {
  if (value === undefined) return undefined;
  const ms = value instanceof Date ? value.getTime() : Date.parse(value);
  if (!Number.isFinite(ms)) throw new ValidationError(`${name} is not a valid time: ${JSON.stringify(String(value))}`);
  return new Date(ms).toISOString();
}

function entryOf(row: Row, models: readonly string[]): UsageEntry {
  const d = row.inferenceDetails ?? undefined;
  const timestamp = typeof row.timestamp === "number" ? new Date(row.timestamp).toISOString() : row.timestamp;
  return {
    timestamp,
    sku: row.sku,
    model: modelOfSku(row.sku, models),
    units: row.units,
    pricePerUnitUsd: row.pricePerUnitUsd,
    amount: row.amount,
    currency: row.currency,
    ...(row.notes ? { notes: row.notes } : {}),
    ...(d?.requestId ? { requestId: d.requestId } : {}),
    ...(d?.promptTokens != null ? { promptTokens: d.promptTokens } : {}),
    ...(d?.completionTokens != null ? { completionTokens: d.completionTokens } : {}),
    ...(d?.inferenceExecutionTime != null ? { inferenceExecutionTimeMs: d.inferenceExecutionTime } : {}),
  };
}

const round = (n: number) => Math.round(n * 1e6) / 1e6;

/** Sums entries per model (spend positive, refunds subtracted), most spent first. */
export function usageByModel(entries: readonly UsageEntry[]): ModelUsage[] {
  const lines = new Map<string, ModelUsage & { ids: Set<string> }>();
  for (const e of entries) {
    let line = lines.get(e.model);
    if (!line)
      lines.set(
        e.model,
        (line = { model: e.model, usd: 0, diem: 0, entries: 0, requests: 0, promptTokens: 0, completionTokens: 0, ids: new Set() }),
      );
    if (e.currency === "DIEM") line.diem -= e.amount;
    else line.usd -= e.amount;
    line.entries++;
    // one request is several rows: tokens and requests are counted once per request id
    if (e.requestId === undefined || !line.ids.has(e.requestId)) {
      line.promptTokens += e.promptTokens ?? 0;
      line.completionTokens += e.completionTokens ?? 0;
    }
    if (e.requestId !== undefined) line.ids.add(e.requestId);
  }
  return [...lines.values()]
    .map(({ ids, ...l }) => ({ ...l, usd: round(l.usd), diem: round(l.diem), requests: ids.size }))
    .sort((a, b) => b.usd + b.diem - (a.usd + a.diem) || a.model.localeCompare(b.model));
}

const usageArgs = z
  .object({
    from: z.union([z.date(), z.string()]).optional(),
    to: z.union([z.date(), z.string()]).optional(),
    currency: z.enum(USAGE_CURRENCIES).optional(),
    pageSize: z.number().int().min(10, "pageSize is 10 to 1000").max(1000, "pageSize is 10 to 1000").optional(),
    maxPages: z.number().int().positive().optional(),
    models: z.array(z.string()).optional(),
    signal: z.instanceof(AbortSignal).optional(),
  })
  .strict();

/** One page of `/billing/usage-history` (the first with filters, or a continuation by cursor alone). */
export async function usageHistoryPage(
  client: ServiceApi,
  query: { startTimestamp?: string; endTimestamp?: string; currency?: string; pageSize?: number } | { cursor: string },
  signal?: AbortSignal,
): Promise<{ rows: Row[]; nextCursor?: string; headers: ServiceResponseHeaders }> {
  const res = await client.request("/billing/usage-history", { query: query as Record<string, string | number | undefined>, signal });
  const data = parseWith(historySchema, res.data, "/billing/usage-history", res.headers);
  return { rows: data.data, nextCursor: data.nextCursor ?? undefined, headers: res.headers };
}

/**
 * The account's usage in `range`, every page, summed per model: `GET /billing/usage-history` (live), else the
 * published `GET /billing/usage` (a deployment that answers the new route 404). Needs an ADMIN API key.
 */
export async function getUsage(client: ServiceApi, range: UsageRange = {}): Promise<UsageReport> {
  requireApiKey(client, "getUsage", "/billing");
  const r = checkArgs(usageArgs, range, "usage range");
  const from = isoOf(r.from, "from");
  const to = isoOf(r.to, "to");
  if (from && to && Date.parse(to) <= Date.parse(from)) throw new ValidationError("`to` must be later than `from`");
  const maxPages = r.maxPages ?? 100;
  const models = r.models ?? [];
  const rows: Row[] = [];
  let pages = 0;
  let source: UsageReport["source"] = "usage-history";
  let headers: ServiceResponseHeaders | undefined;
  try {
    let page = await usageHistoryPage(
      client,
      { startTimestamp: from, endTimestamp: to, currency: r.currency, pageSize: r.pageSize },
      r.signal,
    );
    for (;;) {
      pages++;
      rows.push(...page.rows);
      headers = page.headers;
      if (!page.nextCursor || pages >= maxPages) break;
      page = await usageHistoryPage(client, { cursor: page.nextCursor }, r.signal);
    }
  } catch (err) {
    if ((err as { status?: number }).status !== 404 || pages > 0) throw err;
    // a deployment of the published description: the page-numbered route
    source = "usage";
    const limit = Math.min(500, r.pageSize ?? 500);
    for (let page = 1; page <= maxPages; page++) {
      const res = await client.request("/billing/usage", {
        query: { startDate: from, endDate: to, currency: r.currency, page, limit, sortOrder: "asc" },
        signal: r.signal,
      });
      const data = parseWith(legacySchema, res.data, "/billing/usage", res.headers);
      pages++;
      rows.push(...data.data);
      headers = res.headers;
      if (page >= data.pagination.totalPages || data.data.length === 0) break;
    }
  }
  const entries = rows.map((row) => entryOf(row, models));
  const byModel = usageByModel(entries);
  return {
    ...(from ? { from } : {}),
    ...(to ? { to } : {}),
    entries,
    byModel,
    totalUsd: round(byModel.reduce((s, l) => s + l.usd, 0)),
    totalDiem: round(byModel.reduce((s, l) => s + l.diem, 0)),
    source,
    pages,
    headers,
  };
}
