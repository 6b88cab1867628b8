/**
 * The spend layer of the fetch stack: budgets and receipts for every face (chat, embeddings, media and web tools,
 * crypto RPC), above the payment layer, so a request a budget refuses never draws a 402 or a payment.
 *
 * For a metered request (a route that charges) on the service's origin, with a budget or a log on (the stack's
 * own, or the request's `service.spend`):
 *   1. each budget reserves the request's worst case (estimate.ts, from the model's `/models` record); one that
 *      cannot fit refuses it (`BudgetExceededError`), nothing sent, the others' holds given back;
 *   2. the answer: an error answer charged nothing (released); a served one is metered as the caller reads it
 *      (meter.ts), and settled to what it says it cost, or to its published price, or, when it is cut off before
 *      telling, to the amount reserved (a budget errs on the safe side); each log gets a charge record;
 * Payments reach a log by the payment events: a face's `spendLog` through the stack's `onPayment`, a log in a
 * run's callbacks through the run's `x402_payment` custom events.
 * With nothing on, a request passes through with no await and no allocation.
 */
import type { FetchLayer, FetchLike, RequestSpend, ServiceRequestInit } from "../http/types.js";
import { untilAborted } from "../http/until-aborted.js";
import type { BudgetReservation, SpendBudget } from "./budget.js";
import { DEFAULT_FEES } from "./budget.js";
import { runSpend } from "./call-options.js";
import { pricedUsd, requestShape, worstCaseUsd, type RequestShape } from "./estimate.js";
import type { ServiceModel } from "../models/records.js";
import type { ChargeRecord, SpendLog } from "./log.js";
import { meterResponse, type MeterHeaders, type MeterReading } from "./meter.js";

export interface SpendLayerOptions {
  /** the stack's own budget and log (a face's `budget` / `spendLog` options) */
  budget?: SpendBudget;
  log?: SpendLog;
  /** the service's origin: requests elsewhere are not metered */
  origin: string;
  brand: string;
  headers: MeterHeaders;
  /** a model's `/models` record (type: the list it is in), or undefined */
  lookup(type: string, model: string): Promise<ServiceModel | undefined>;
}

/** Errors that mean the request was never charged: an answer came back (its status says no), or it never left. */
const NEVER_SENT = new Set([
  "ConfigurationError",
  "ValidationError",
  "PaymentPolicyError",
  "BudgetExceededError",
  "PaymentNotCurableError",
  "RedirectError",
  "StoreUnavailableError",
  "AbuseBlockError",
]);
function neverCharged(err: unknown): boolean {
  const e = err as { status?: unknown; name?: unknown } | undefined;
  return typeof e?.status === "number" || (typeof e?.name === "string" && NEVER_SENT.has(e.name));
}

export function spendLayer(options: SpendLayerOptions): FetchLayer {
  return (next) => (input, init) => {
    const spend = init?.service?.spend;
    if (spend === false) return next(input, init);
    const run = runSpend();
    if (spend === undefined && run === undefined && !options.budget && !options.log) return next(input, init);
    return metered(next, options, input, init, merge(spend, run));
  };
}

function merge(a: RequestSpend | undefined, b: RequestSpend | undefined): RequestSpend | undefined {
  if (!a || !b) return a ?? b;
  return {
    budgets: [...(a.budgets ?? []), ...(b.budgets ?? [])],
    logs: [...(a.logs ?? []), ...(b.logs ?? [])],
    estimateUsd: a.estimateUsd ?? b.estimateUsd,
  };
}

function unique<T>(own: T | undefined, more: readonly object[] | undefined): T[] {
  const out: T[] = own ? [own] : [];
  for (const x of (more ?? []) as T[]) if (x && !out.includes(x)) out.push(x);
  return out;
}

async function metered(
  next: FetchLike,
  o: SpendLayerOptions,
  input: Parameters<FetchLike>[0],
  init: ServiceRequestInit | undefined,
  spend: RequestSpend | undefined,
): Promise<Response> {
  const budgets = unique<SpendBudget>(o.budget, spend?.budgets);
  const logs = unique<SpendLog>(o.log, spend?.logs);
  if (budgets.length === 0 && logs.length === 0) return next(input, init);
  const url = new URL(input instanceof URL ? input.href : String(input));
  if (url.origin !== o.origin) return next(input, init);
  const text = typeof init?.body === "string" ? init.body : undefined;
  let body: unknown;
  try {
    body = text === undefined ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  const shape = requestShape(url.pathname, body, text?.length ?? 0);
  if (!shape) return next(input, init);
  // the model's prices: for the reservation, and for the cost of answers that do not tell it
  const needsRecord = shape.model !== undefined && shape.modelType !== undefined && (budgets.length > 0 || shape.kind !== "chat");
  // the price read is shared (the stack's /models records): the caller's signal, its deadline with it, ends this
  // request's wait on it as a typed abort, as on every shared wait
  const record = needsRecord
    ? await untilAborted(
        o.lookup(shape.modelType!, shape.model!).catch(() => undefined),
        init?.signal,
      )
    : undefined;

  const holds: BudgetReservation[] = [];
  try {
    for (const b of budgets) {
      let estimate = worstCaseUsd(shape, record, b.fees, o.brand);
      // the caller's own price (a job's quote) where the route has none
      if (!Number.isFinite(estimate) && spend?.estimateUsd !== undefined) estimate = spend.estimateUsd;
      if (!Number.isFinite(estimate) && b.unpricedUsd !== undefined) estimate = b.unpricedUsd;
      holds.push(await b.reserve(estimate, `${init?.method ?? "GET"} ${url.pathname}`));
    }
  } catch (err) {
    await Promise.all(holds.map((h) => h.release().catch(() => undefined)));
    throw err;
  }

  let res: Response;
  try {
    res = await next(input, init);
  } catch (err) {
    // an answer that said no, or nothing sent: nothing charged; anything else (a timeout, a reset mid-answer)
    // may have been charged: held at its worst case
    await Promise.all(holds.map((h) => (neverCharged(err) ? h.release() : h.settle(h.reservedUsd)).catch(() => undefined)));
    throw err;
  }
  // the service's own refusals carry no cost headers and cost nothing; a node's non-2xx it relays carries them and
  // is billed (crypto RPC: a node's 4xx 5 credits an item)
  if (!res.ok && !(shape.kind === "crypto-rpc" && res.headers.has(o.headers.rpcCostUsdHeader))) {
    await Promise.all(holds.map((h) => h.release().catch(() => undefined)));
    return res;
  }
  return meterResponse(res, shape.kind, o.headers, (reading, complete) =>
    settle(shape, record, reading, complete, holds, logs, budgets, url.pathname, spend?.estimateUsd),
  );
}

/** A served request's cost: reported, priced, a fee estimate, or unknown (the reservation stands). */
function settle(
  shape: RequestShape,
  record: ServiceModel | undefined,
  reading: MeterReading,
  complete: boolean,
  holds: BudgetReservation[],
  logs: SpendLog[],
  budgets: SpendBudget[],
  path: string,
  knownPriceUsd: number | undefined,
): void {
  let cost: number | undefined;
  let source: ChargeRecord["source"];
  if (reading.failedInBand) {
    // the service charges nothing for a stream that failed in band (never charged, or refunded): neither does the
    // log, and the budget gets the hold back (before this, a record of unknown cost the ledger never had)
    cost = 0;
    source = "failed";
  } else if (reading.costUsd !== undefined) {
    cost = reading.costUsd + (reading.costDiem ?? 0);
    source = "reported";
  } else if (complete && (cost = pricedUsd(shape, record, { promptTokens: reading.tokens?.input })) !== undefined) {
    source = "priced";
  } else if (knownPriceUsd !== undefined && (shape.kind === "job" || shape.kind === "unpriced")) {
    cost = knownPriceUsd; // the caller's price (a job's quote): what the service charges when it accepts the request
    source = "priced";
  } else if (shape.kind === "augment-search" || shape.kind === "augment-scrape") {
    const fees = budgets[0]?.fees ?? DEFAULT_FEES;
    cost = shape.kind === "augment-search" ? fees.augmentSearchUsd : fees.augmentScrapeUsd;
    source = "estimated";
  } else {
    source = "unknown";
  }
  for (const h of holds) void h.settle(cost ?? h.reservedUsd).catch(() => undefined);
  const record_: Omit<ChargeRecord, "type" | "at"> = {
    requestId: reading.requestId,
    path,
    kind: shape.kind,
    model: reading.model ?? shape.model,
    costUsd: source === "reported" ? reading.costUsd : cost,
    costDiem: source === "reported" ? reading.costDiem : source === "failed" ? 0 : undefined,
    source,
    tokens: reading.tokens,
    rpcCredits: reading.rpcCredits,
    ...(reading.replayed ? { replayed: true as const } : {}),
    budgets: budgets.length ? budgets.map((b) => b.name) : undefined,
  };
  for (const l of logs) l.recordCharge(record_);
}
