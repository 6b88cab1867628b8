/**
 * The service's `/models` records, read once per base URL and model list (`?type=`) and shared by every object
 * in the process that asks: `ChatService` builds its LangChain profile from them (../chat/profile.ts), and what
 * needs a model's published limits or prices (`records.get(id)?.model_spec?.pricing`, `modelPricing(record)`, a
 * spend budget reserving a worst-case cost) reads the same cache instead of asking again.
 *
 * The listing is public (the published description's security is `{}` or a key), so it is read without
 * credentials: no wallet sign-in to sign, no key's error budget or pacing window spent on it. It sits on the
 * floor above the transport (it imports only src/http/), so the chat model, the client, the tools and the
 * actions can all import it without a circle.
 *
 * Freshness: a list read is kept `MODEL_RECORDS_TTL_MS`; after that the next background read refreshes it while
 * the old one still answers. A failed read is not kept: an explicit `load()` asks again, a background read waits
 * `MODEL_RECORDS_RETRY_MS` first (a deployment without `/models` is not asked on every call).
 */
import { z } from "zod";
import { readResponseText } from "../http/body.js";
import { LruMap } from "../http/bounded.js";
import { contextKey, stackContext } from "../http/context.js";
import { ResponseFormatError, ValidationError } from "../http/errors.js";
import { responseHeaders, type TransportFetch } from "../http/fetch-stack.js";
import { awaitShared } from "../http/shared-wait.js";
import { ModelCapabilitiesSchema, modelSpecFacts } from "./facts.js";

/** One model of `GET /models`, as the published `ModelResponse` has it; unknown members are kept. */
export const ModelRecordSchema = z
  .object({
    id: z.string(),
    object: z.string().optional(),
    type: z.string().optional(),
    owned_by: z.string().optional(),
    created: z.number().optional(),
    context_length: z.number().optional(),
    model_spec: z
      .object({
        name: z.string().optional(),
        availableContextTokens: z.number().optional(),
        maxCompletionTokens: z.number().optional(),
        capabilities: ModelCapabilitiesSchema.optional(),
        pricing: z.record(z.string(), z.unknown()).optional(),
        traits: z.array(z.string()).optional(),
        ...modelSpecFacts,
      })
      .passthrough()
      .optional(),
  })
  .passthrough();
export type ServiceModel = z.infer<typeof ModelRecordSchema>;
export const ModelListSchema = z.object({ object: z.string().optional(), data: z.array(ModelRecordSchema) }).passthrough();
/**
 * `GET /models/traits` (trait -> model id: `{ default: "...", fastest: "..." }`) and
 * `GET /models/compatibility_mapping` (an OpenAI-style or legacy id -> model id), of one list `type`.
 */
export const ModelAliasListSchema = z
  .object({ object: z.string().optional(), type: z.string().optional(), data: z.record(z.string(), z.string()) })
  .passthrough();
export type ModelAliasList = z.infer<typeof ModelAliasListSchema>;

/** List types the service has no compatibility mapping for (it answers 400: the mapping is per list). */
export const UNMAPPED_LIST_TYPES: readonly string[] = ["all", "code"];

/** Refuses (`ValidationError`, before any request) a compatibility-mapping list type the service refuses. */
export function checkMappingType(type: string | undefined): void {
  if (type !== undefined && UNMAPPED_LIST_TYPES.includes(type)) {
    throw new ValidationError(
      `the service has no compatibility mapping for type=${type} (a 400): ask per list type, e.g. "text", "image", "embedding"; nothing was sent`,
    );
  }
}

/** How long a list read is used before the next background read refreshes it. */
export const MODEL_RECORDS_TTL_MS = 60 * 60_000;
/** After a failed read, how long background reads wait before asking again. */
export const MODEL_RECORDS_RETRY_MS = 60_000;
/** base URL × list type pairs kept (a process talks to a handful of deployments; the oldest is dropped first) */
const MAX_LISTS = 64;

/** A price of the published `model_spec.pricing` (`{ usd, diem }`). */
export interface ModelPrice {
  usd: number;
  diem: number;
}

/**
 * A text model's published prices, per million tokens (`model_spec.pricing`: `input`, `output`, and
 * `cache_input` / `cache_write` where the model has them); undefined members are not published.
 */
export interface ModelPricing {
  input?: ModelPrice;
  output?: ModelPrice;
  cacheInput?: ModelPrice;
  cacheWrite?: ModelPrice;
  /** the rates above `contextTokenThreshold` input tokens (`pricing.extended`), where the model has them */
  extended?: Omit<ModelPricing, "extended"> & { contextTokenThreshold?: number };
}

/** One published price (`{ usd, diem }`); undefined when it is not one. */
export function priceOf(value: unknown): ModelPrice | undefined {
  if (!value || typeof value !== "object") return undefined;
  const { usd, diem } = value as { usd?: unknown; diem?: unknown };
  if (typeof usd !== "number" || !Number.isFinite(usd)) return undefined;
  return { usd, diem: typeof diem === "number" && Number.isFinite(diem) ? diem : usd };
}

/** The typed prices of a record (members that are not `{ usd, diem }` numbers are left out). */
export function modelPricing(record: ServiceModel | undefined): ModelPricing | undefined {
  const pricing = record?.model_spec?.pricing;
  if (!pricing) return undefined;
  const out: ModelPricing = pricesOf(pricing);
  const extended = pricing.extended;
  if (extended && typeof extended === "object") {
    const tier: NonNullable<ModelPricing["extended"]> = pricesOf(extended as Record<string, unknown>);
    const threshold = (extended as { context_token_threshold?: unknown }).context_token_threshold;
    if (typeof threshold === "number" && Number.isFinite(threshold) && threshold > 0) tier.contextTokenThreshold = threshold;
    if (Object.keys(tier).length) out.extended = tier;
  }
  return out;
}

/** `input`, `output`, `cache_input`, `cache_write` of one price table. */
function pricesOf(pricing: Record<string, unknown>): Omit<ModelPricing, "extended"> {
  const out: Omit<ModelPricing, "extended"> = {};
  const input = priceOf(pricing.input);
  const output = priceOf(pricing.output);
  const cacheInput = priceOf(pricing.cache_input);
  const cacheWrite = priceOf(pricing.cache_write);
  if (input) out.input = input;
  if (output) out.output = output;
  if (cacheInput) out.cacheInput = cacheInput;
  if (cacheWrite) out.cacheWrite = cacheWrite;
  return out;
}

/** What one list (base URL × type) holds, shared by every handle on it. */
class ListState {
  records?: ReadonlyMap<string, ServiceModel>;
  /** trait -> model id, from the records' `model_spec.traits` (the first record carrying a trait) */
  traits: ReadonlyMap<string, string> = new Map();
  loadedAt = 0;
  failedAt = 0;
  reading?: Promise<ReadonlyMap<string, ServiceModel>>;
  /** compatibility name -> model id (`/models/compatibility_mapping`), read on the first name nothing else resolves */
  mapping?: ReadonlyMap<string, string>;
  mappingLoadedAt = 0;
  mappingFailedAt = 0;
  mappingReading?: Promise<ReadonlyMap<string, string> | undefined>;
}

/** trait -> model id of a list's records (the first record carrying a trait wins, as the service names one). */
function traitsOf(records: ReadonlyMap<string, ServiceModel>): Map<string, string> {
  const out = new Map<string, string>();
  for (const record of records.values())
    for (const trait of record.model_spec?.traits ?? []) if (!out.has(trait)) out.set(trait, record.id);
  return out;
}

/** the lists read so far, per context (stacks of one context share what one of them read) */
const LISTS = contextKey("model lists", () => new LruMap<string, ListState>(MAX_LISTS));

/** Reads and validates one public list route (`/models`, `/models/compatibility_mapping`) through `fetch`, without credentials. */
async function readPublic<S extends z.ZodTypeAny>(fetch: TransportFetch, path: string, type: string, schema: S): Promise<z.infer<S>> {
  const url = `${fetch.url(path)}?type=${encodeURIComponent(type)}`;
  const response = await fetch(url, { method: "GET", headers: { accept: "application/json" }, service: { auth: false } });
  const headers = responseHeaders(response, fetch.brand);
  const text = await readResponseText(response, { what: path, headers });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new ResponseFormatError(`invalid JSON from ${path}`, { status: response.status, body: text, headers, cause });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new ResponseFormatError(`unexpected ${path} response: ${detail}`, { status: response.status, body: json, headers });
  }
  return parsed.data;
}

/** Reads one list through `fetch` (without credentials). */
async function readList(fetch: TransportFetch, type: string): Promise<ReadonlyMap<string, ServiceModel>> {
  const list = await readPublic(fetch, "/models", type, ModelListSchema);
  return new Map(list.data.map((m) => [m.id, m]));
}

/**
 * One deployment's model list, as seen through one caller's fetch stack. The records are shared by every handle
 * on the same base URL and type; the handle only carries the caller's stack, through which it reads.
 */
export class ModelRecords {
  readonly baseUrl: string;
  readonly type: string;
  readonly #fetch: TransportFetch;
  readonly #state: ListState;

  constructor(fetch: TransportFetch, type: string) {
    this.baseUrl = fetch.baseUrl;
    this.type = type;
    this.#fetch = fetch;
    const key = `${fetch.baseUrl}\n${type}`;
    const lists = stackContext(fetch).part(LISTS);
    let state = lists.get(key);
    if (!state) {
      state = new ListState();
      lists.set(key, state);
    }
    this.#state = state;
  }

  /** Whether the list was read (at any time: an old read still answers while a new one is made). */
  get loaded(): boolean {
    return this.#state.records !== undefined;
  }

  /**
   * The record of `id` (without a feature suffix), synchronously: a listed id, a trait of the list (`fastest`,
   * `default`: the record carrying it) or a compatibility name read already (`gpt-4o`: the record it maps to, once
   * `resolve()` or a call's background read asked `/models/compatibility_mapping`). Undefined when not listed or
   * not read yet.
   */
  get(id: string): ServiceModel | undefined {
    const records = this.#state.records;
    if (!records) return undefined;
    const target = this.resolveId(id);
    return target === undefined ? undefined : records.get(target);
  }

  /** The model id `id` stands for (itself when listed, else the one its trait or compatibility name resolves to). */
  resolveId(id: string): string | undefined {
    const state = this.#state;
    if (!state.records) return undefined;
    if (state.records.has(id)) return id;
    const target = state.traits.get(id) ?? state.mapping?.get(id);
    return target !== undefined && state.records.has(target) ? target : undefined;
  }

  /**
   * The record `id` stands for, reading what is needed: the list, then (for a name that is neither listed nor a
   * trait) the compatibility mapping, once per list. Undefined when nothing resolves it; a mapping the deployment
   * cannot give counts as empty. Rejects when the list cannot be read, or with the caller's abort.
   */
  async resolve(id: string, options: { signal?: AbortSignal } = {}): Promise<ServiceModel | undefined> {
    await this.load(options);
    if (this.resolveId(id) === undefined && this.#mappingStale()) await awaitShared(this.#readMapping(), options.signal);
    return this.get(id);
  }

  /**
   * The compatibility mapping of this list (alias -> model id), read once and kept like the records (a failed read
   * gives undefined and is asked again after `MODEL_RECORDS_RETRY_MS`).
   */
  async compatibilityMapping(options: { signal?: AbortSignal } = {}): Promise<ReadonlyMap<string, string> | undefined> {
    if (this.#mappingStale()) return awaitShared(this.#readMapping(), options.signal);
    return this.#state.mapping;
  }

  #mappingStale(): boolean {
    const state = this.#state;
    const now = Date.now();
    if (state.mapping && now - state.mappingLoadedAt < MODEL_RECORDS_TTL_MS) return false;
    return !(state.mappingFailedAt && now - state.mappingFailedAt < MODEL_RECORDS_RETRY_MS);
  }

  #readMapping(): Promise<ReadonlyMap<string, string> | undefined> {
    const state = this.#state;
    // a list the service keeps no mapping for (`code`, `all`: a 400, one more failure toward its abuse block) is not asked
    if (UNMAPPED_LIST_TYPES.includes(this.type)) return Promise.resolve(undefined);
    state.mappingReading ??= readPublic(this.#fetch, "/models/compatibility_mapping", this.type, ModelAliasListSchema)
      .then(
        (list) => {
          state.mapping = new Map(Object.entries(list.data));
          state.mappingLoadedAt = Date.now();
          state.mappingFailedAt = 0;
          return state.mapping;
        },
        () => {
          state.mappingFailedAt = Date.now();
          return state.mapping;
        },
      )
      .finally(() => {
        state.mappingReading = undefined;
      });
    return state.mappingReading;
  }

  /** Every record of the list read last (empty before the first read). */
  list(): ServiceModel[] {
    return [...(this.#state.records?.values() ?? [])];
  }

  /** The typed prices of `id` (`modelPricing` of its record); undefined when not listed, not read or unpriced. */
  pricing(id: string): ModelPricing | undefined {
    return modelPricing(this.get(id));
  }

  /**
   * The records, read when none is fresh (single flight: concurrent callers share one request, and `signal` ends
   * only this caller's wait). A failed read rejects with the stack's typed error and is asked again next time.
   */
  load(options: { signal?: AbortSignal; force?: boolean } = {}): Promise<ReadonlyMap<string, ServiceModel>> {
    const state = this.#state;
    if (!options.force && state.records && Date.now() - state.loadedAt < MODEL_RECORDS_TTL_MS) return Promise.resolve(state.records);
    return awaitShared(this.#read(), options.signal);
  }

  /**
   * Starts a read in the background when the records are missing or stale and none failed lately; never throws,
   * never waits. The first call of a model does this, so that later calls find its profile. The compatibility
   * mapping is not read here: a deployment without that route (the seed's) would answer a 404 on a call's path,
   * one more failure toward its abuse block; `loadProfile()` and `resolve()` read it when asked.
   */
  refreshInBackground(): void {
    const state = this.#state;
    const now = Date.now();
    if (state.reading) return;
    if (state.records && now - state.loadedAt < MODEL_RECORDS_TTL_MS) return;
    if (state.failedAt && now - state.failedAt < MODEL_RECORDS_RETRY_MS) return;
    this.#read().catch(() => {});
  }

  #read(): Promise<ReadonlyMap<string, ServiceModel>> {
    const state = this.#state;
    state.reading ??= readList(this.#fetch, this.type)
      .then(
        (records) => {
          state.records = records;
          state.traits = traitsOf(records);
          state.loadedAt = Date.now();
          state.failedAt = 0;
          return records;
        },
        (err: unknown) => {
          state.failedAt = Date.now();
          throw err;
        },
      )
      .finally(() => {
        state.reading = undefined;
      });
    return state.reading;
  }
}

/** The model list `type` (default `text`: the chat models) of the deployment `fetch` talks to. */
export function modelRecordsFor(fetch: TransportFetch, type = "text"): ModelRecords {
  if (typeof type !== "string" || !/^[a-z]+$/.test(type))
    throw new ValidationError(`model list type must be a word such as "text" (got ${JSON.stringify(type)})`);
  return new ModelRecords(fetch, type);
}
