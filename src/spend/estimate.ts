/**
 * What a request may cost, before it is sent (its worst case, which a budget reserves), and what it did cost when
 * the answer carries no `cost` (priced from the model's published prices). Pure functions over the request's
 * path and JSON body and the model's `/models` record: no I/O here.
 *
 * The worst case of a chat request: input tokens estimated from the request's size (a third of its characters,
 * capped at the model's context), plus `max_completion_tokens` / `max_tokens` or else the model's output cap, per
 * choice, at the published prices, plus the per-call fees of web search and scraping when they are on. Crypto RPC:
 * the highest base credits (30) times the method's tier, per call. Media: the published price per image or per
 * million characters. Routes that cost nothing (models, rate limits, networks, x402) are not metered at all.
 */
import { methodTier } from "../crypto-rpc/methods.js";
import type { SpendFees } from "./budget.js";
import { priceOf, type ServiceModel } from "../models/records.js";

/** The kind of metered request a path is, and what pricing it needs. */
export type MeteredKind =
  | "chat"
  | "embeddings"
  | "image"
  | "speech"
  | "augment-search"
  | "augment-scrape"
  | "crypto-rpc"
  | "job"
  | "unpriced";

export interface RequestShape {
  kind: MeteredKind;
  /** the model id, feature suffixes taken off (`emu-m:enable_web_search=on` -> `emu-m`) */
  model?: string;
  /** the `/models?type=` list its record is in */
  modelType?: "text" | "embedding" | "image" | "tts";
  body?: Record<string, unknown>;
  /** the request body's length in characters */
  bodyChars: number;
}

/** Routes that never charge: not metered (no reservation, no record). */
const FREE =
  /\/(models(\/[^/]*)?|api_keys\/.*|x402\/.*|crypto\/rpc\/networks|characters.*|billing\/.*|image\/styles|audio\/voices|(video|audio)\/(quote|retrieve|complete)|video\/download\/[^/]+)$/;

/**
 * The metered kind of a request (undefined: a free route, or not the service's). `path` is the URL's pathname;
 * the body is the parsed JSON body when there is one.
 */
export function requestShape(path: string, body: unknown, bodyChars: number): RequestShape | undefined {
  if (FREE.test(path)) return undefined;
  const b = body && typeof body === "object" && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  const model = typeof b?.model === "string" ? b.model.split(":")[0] : undefined;
  if (path.endsWith("/chat/completions")) return { kind: "chat", model, modelType: "text", body: b, bodyChars };
  if (path.endsWith("/embeddings")) return { kind: "embeddings", model, modelType: "embedding", body: b, bodyChars };
  if (path.endsWith("/image/generate") || path.endsWith("/images/generations"))
    return { kind: "image", model, modelType: "image", body: b, bodyChars };
  if (path.endsWith("/audio/speech")) return { kind: "speech", model, modelType: "tts", body: b, bodyChars };
  if (path.endsWith("/augment/search")) return { kind: "augment-search", body: b, bodyChars };
  if (path.endsWith("/augment/scrape")) return { kind: "augment-scrape", body: b, bodyChars };
  // a video or audio job is charged its quote at the queue: the caller (the job runner) names it
  if (/\/(video|audio)\/queue$/.test(path)) return { kind: "job", model, body: b, bodyChars };
  if (/\/crypto\/rpc\/[^/]+$/.test(path)) return { kind: "crypto-rpc", body: Array.isArray(body) ? { batch: body } : b, bodyChars };
  return { kind: "unpriced", model, body: b, bodyChars };
}

/** A published price's USD (`model_spec.pricing[name]`, `{ usd, diem }`); undefined when the record has none. */
function priceUsd(record: ServiceModel | undefined, name: string): number | undefined {
  const usd = priceOf(record?.model_spec?.pricing?.[name])?.usd;
  return usd !== undefined && usd >= 0 ? usd : undefined;
}

const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined);

/** Whether a chat request turns web search or scraping on (its `<brand>_parameters`, or the model id's suffixes). */
function chatAddOns(shape: RequestShape, brand: string): { search: boolean; scrape: boolean } {
  const params = (shape.body?.[`${brand}_parameters`] ?? {}) as Record<string, unknown>;
  const suffix = typeof shape.body?.model === "string" ? shape.body.model.split(":").slice(1).join("&") : "";
  const fromSuffix = (name: string) => new RegExp(`(?:^|&)${name}=([^&]+)`).exec(suffix)?.[1];
  const search = String(params.enable_web_search ?? fromSuffix("enable_web_search") ?? "off");
  const scrape = String(params.enable_web_scraping ?? fromSuffix("enable_web_scraping") ?? "false");
  return { search: search === "on" || search === "auto", scrape: scrape === "true" };
}

/** Base credits of the costliest network family (zkSync, Solana): a worst case whatever the network. */
const MAX_BASE_CREDITS = 30;

/**
 * The worst-case USD of a request, or Infinity when it cannot be priced (its model has no published price, or the
 * route is not one this module knows).
 */
export function worstCaseUsd(shape: RequestShape, record: ServiceModel | undefined, fees: SpendFees, brand: string): number {
  const b = shape.body ?? {};
  switch (shape.kind) {
    case "chat": {
      const input = priceUsd(record, "input");
      const output = priceUsd(record, "output");
      if (input === undefined || output === undefined) return Infinity;
      const context = num(record?.model_spec?.availableContextTokens);
      let inTokens = Math.ceil(shape.bodyChars / 3);
      if (context !== undefined) inTokens = Math.min(inTokens, context);
      const asked = num(b.max_completion_tokens) ?? num(b.max_tokens);
      const cap = num(record?.model_spec?.maxCompletionTokens) ?? (context !== undefined ? Math.max(0, context - inTokens) : undefined);
      const perChoice = asked !== undefined && cap !== undefined ? Math.min(asked, cap) : (asked ?? cap);
      if (perChoice === undefined) return Infinity;
      const choices = num(b.n) ?? 1;
      const addOns = chatAddOns(shape, brand);
      return (
        (inTokens * input + perChoice * choices * output) / 1e6 +
        (addOns.search ? fees.webSearchUsd : 0) +
        (addOns.scrape ? 5 * fees.webScrapeUsdPerUrl : 0)
      );
    }
    case "embeddings": {
      const input = priceUsd(record, "input");
      if (input === undefined) return Infinity;
      // every character a token at worst would over-reserve 3-4x; a third of the characters, as for chat
      return (Math.ceil(inputChars(b.input) / 3) * input) / 1e6;
    }
    case "image":
    case "speech":
      return pricedUsd(shape, record, undefined) ?? Infinity;
    case "augment-search":
      return fees.augmentSearchUsd;
    case "augment-scrape":
      return fees.augmentScrapeUsd;
    case "crypto-rpc": {
      const calls = Array.isArray(b.batch) ? (b.batch as unknown[]) : [b];
      let credits = 0;
      for (const call of calls) {
        const method = (call as { method?: unknown } | undefined)?.method;
        credits += MAX_BASE_CREDITS * (typeof method === "string" ? methodTier(method) : 4);
      }
      return credits * fees.rpcUsdPerCredit;
    }
    default:
      return Infinity;
  }
}

function inputChars(input: unknown): number {
  if (typeof input === "string") return input.length;
  if (Array.isArray(input))
    return input.reduce((n: number, s) => n + (typeof s === "string" ? s.length : JSON.stringify(s ?? "").length), 0);
  return JSON.stringify(input ?? "").length;
}

/** What the answer tells of its cost (chat: `cost`; embeddings: `usage`; crypto RPC: its cost header). */
export interface AnswerFigures {
  costUsd?: number;
  costDiem?: number;
  promptTokens?: number;
}

/**
 * The cost of a served request whose answer carries no `cost`, from the published prices: embeddings by their
 * prompt tokens, images per generation, speech per million characters. Undefined when it cannot be told (the
 * reservation then stands as the cost).
 */
export function pricedUsd(shape: RequestShape, record: ServiceModel | undefined, answer: AnswerFigures | undefined): number | undefined {
  const b = shape.body ?? {};
  switch (shape.kind) {
    case "embeddings": {
      const input = priceUsd(record, "input");
      return input !== undefined && answer?.promptTokens !== undefined
        ? Math.round(((answer.promptTokens * input) / 1e6) * 1e9) / 1e9
        : undefined;
    }
    case "image": {
      const each = priceUsd(record, "generation");
      return each === undefined ? undefined : each * (num(b.variants) ?? num(b.n) ?? 1);
    }
    case "speech": {
      const perMillion = priceUsd(record, "input");
      return perMillion === undefined || typeof b.input !== "string" ? undefined : (perMillion * b.input.length) / 1e6;
    }
    default:
      return undefined;
  }
}
