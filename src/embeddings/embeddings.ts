/**
 * `ServiceEmbeddings`: a LangChain `Embeddings` for the service's POST /embeddings, over the one fetch stack (API
 * key or wallet sign-in, x402 top-ups on 402, pacing, retries, typed errors). A drop-in where `OpenAIEmbeddings`
 * is used, minus its trap: only strings go on the wire, never token arrays (which the service refuses with 400).
 *
 *   const embeddings = new ServiceEmbeddings({ model: "text-embedding-bge-m3", apiKey });
 *   const vectors = await embeddings.embedDocuments(["first text", "second text"]);
 *   embeddings.lastUsage; // { promptTokens, totalTokens, requests, headers: [...] }
 *
 * Written on `Embeddings` rather than `OpenAIEmbeddings`: the requests must go through the package's stack (the
 * openai SDK would add its own retries and defaults), batches may be up to the service's 2,048 inputs, and
 * the vectors' base64 is decoded here in one pass.
 */
import { Embeddings, type EmbeddingsParams } from "@langchain/core/embeddings";
import { DEFAULT_BRAND } from "../config.js";
import { responseHeaders } from "../http/fetch-stack.js";
import { createServiceFetch, faceStackOptions, sharedStackOf, type FetchStackOptions, type ServiceFetch } from "../stack.js";
import type { ServiceClient } from "../client.js";
import { ConfigurationError, ResponseFormatError, ValidationError } from "../http/errors.js";
import { readResponseText } from "../http/body.js";
import { estimateEmbeddingTokens } from "../http/token-estimate.js";
import type { ServiceResponseHeaders } from "../http/headers.js";
import type { RetryOptions } from "../http/retry.js";
import { modelRecordsFor } from "../models/records.js";
import { batches, MAX_BATCH_SIZE, readEmbeddingsResponse, type EncodingFormat } from "./wire.js";

/** the published description's example embedding model */
export const DEFAULT_EMBEDDING_MODEL = "text-embedding-bge-m3";
const DEFAULT_MAX_CONCURRENCY = 4;

/** Cost in USD and in the staking-token unit (as chat's `response_metadata.cost`). */
export interface EmbeddingsCost {
  usd: number;
  diem: number;
}

/** What one `embedQuery` / `embedDocuments` call used, summed over its requests. */
export interface EmbeddingsUsage {
  /** `usage.prompt_tokens`, summed over the batches */
  promptTokens: number;
  /** `usage.total_tokens`, summed over the batches */
  totalTokens: number;
  /** requests sent (one per batch; 0 for an empty list) */
  requests: number;
  /** the model that answered (the response's `model`) */
  model?: string;
  /**
   * `cost` summed over the responses, when the deployment reports one. The published embeddings response has no
   * `cost` member: use `estimateCost(usage)` for a figure from the model's published price.
   */
  cost?: EmbeddingsCost;
  /** x402 credit left after the last request (`X-Balance-Remaining`; wallet callers only) */
  balanceRemainingUsd?: number;
  /** the parsed response headers of each request, in batch order (rate limits, balances, model, request id) */
  headers: ServiceResponseHeaders[];
}

export interface ServiceEmbeddingsInput extends EmbeddingsParams, Omit<FetchStackOptions, "paymentLayer" | "pacingLayer"> {
  /** embedding model id (default `text-embedding-bge-m3`); see `GET /models?type=embedding` */
  model?: string;
  /** output dimensions, for models that support fewer than their native number (`supportsCustomDimensions`) */
  dimensions?: number;
  /**
   * how vectors travel (default `"base64"`: little-endian float32, a quarter of the JSON, decoded here to the
   * same numbers `"float"` gives; the `openai` SDK makes the same choice)
   */
  encodingFormat?: EncodingFormat;
  /** texts per request, 1..2048 (default 2048, the service's limit: the fewest requests) */
  batchSize?: number;
  /** requests in flight at once for one `embedDocuments` (LangChain's AsyncCaller; default 4) */
  maxConcurrency?: number;
  /** share one fetch stack (limiters, guards, wallet and payment state) with a `ChatService` or `ServiceClient` */
  serviceFetch?: ServiceFetch;
  /** send through this client's stack (as `serviceFetch: client.fetch`) */
  client?: Pick<ServiceClient, "fetch">;
  /** called after each `embedQuery` / `embedDocuments` with what it used (race-free, unlike `lastUsage`) */
  onUsage?: (usage: EmbeddingsUsage) => void;
}

function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (value === null || typeof value !== "object") return String(value);
  return Array.isArray(value) ? "an array" : "an object";
}

/**
 * `maxRetries` (LangChain's AsyncCaller option) becomes the stack's `retry.maxRetries`: the stack is the only
 * place requests are retried (the AsyncCaller here only bounds concurrency). As in `ChatService`.
 */
function retryOf(fields: ServiceEmbeddingsInput): { retry: ServiceEmbeddingsInput["retry"]; noRetry: boolean } {
  const max: unknown = fields.maxRetries;
  if (max === undefined) return { retry: fields.retry, noRetry: false };
  if (!(typeof max === "number" && Number.isInteger(max) && max >= 0)) {
    throw new ConfigurationError(`maxRetries must be a non-negative integer (retries after the first attempt); got ${describe(max)}`);
  }
  if (fields.serviceFetch || fields.client) {
    if (max === 0) return { retry: undefined, noRetry: true };
    throw new ConfigurationError(
      `maxRetries: ${max} cannot change a shared serviceFetch's retry policy; set retry.maxRetries where the stack is built`,
    );
  }
  if (fields.retry === false) {
    if (max === 0) return { retry: false, noRetry: false };
    throw new ConfigurationError(`maxRetries: ${max} contradicts retry: false; give one of them`);
  }
  const stackMax = (fields.retry as Partial<RetryOptions> | undefined)?.maxRetries;
  if (stackMax !== undefined && stackMax !== max) {
    throw new ConfigurationError(`maxRetries (${max}) and retry.maxRetries (${String(stackMax)}) disagree; give one of them`);
  }
  return { retry: { ...fields.retry, maxRetries: max }, noRetry: false };
}

/** The texts as the service takes them, or a ValidationError naming the first bad one (before any request). */
function checkTexts(texts: unknown, what: string): string[] {
  if (!Array.isArray(texts)) throw new ValidationError(`${what} takes an array of strings (got ${describe(texts)})`);
  for (let i = 0; i < texts.length; i++) {
    const t: unknown = texts[i];
    if (typeof t !== "string") {
      throw new ValidationError(
        `${what}: text ${i} is ${describe(t)}, not a string (the service embeds strings only; token arrays are refused)`,
      );
    }
    if (t === "") throw new ValidationError(`${what}: text ${i} is empty (the service refuses empty strings)`);
  }
  return texts as string[];
}

export class ServiceEmbeddings extends Embeddings {
  static lc_name() {
    return "ServiceEmbeddings";
  }

  readonly model: string;
  readonly dimensions?: number;
  readonly encodingFormat: EncodingFormat;
  readonly batchSize: number;
  readonly maxConcurrency: number;
  readonly brand: string;
  /**
   * What the last finished `embedQuery` / `embedDocuments` of this object used. Calls running at the same time
   * overwrite each other here: use `onUsage` or `embedWithUsage` for a per-call figure.
   */
  lastUsage?: EmbeddingsUsage;

  readonly #fetch: ServiceFetch;
  readonly #url: string;
  readonly #noRetry: boolean;
  readonly #onUsage?: (usage: EmbeddingsUsage) => void;

  constructor(fields: ServiceEmbeddingsInput = {}) {
    const maxConcurrency = fields.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY;
    if (!(maxConcurrency === Infinity || (Number.isInteger(maxConcurrency) && maxConcurrency >= 1))) {
      throw new ValidationError(`maxConcurrency must be a positive integer (got ${describe(maxConcurrency)})`);
    }
    // the AsyncCaller bounds concurrency only: retries are the stack's (see retryOf)
    super({ maxConcurrency, maxRetries: 0, onFailedAttempt: () => undefined });
    const model = fields.model ?? DEFAULT_EMBEDDING_MODEL;
    if (typeof model !== "string" || model.trim() === "")
      throw new ValidationError(`model must be a non-empty string (got ${describe(model)})`);
    const { dimensions, encodingFormat = "base64", batchSize = MAX_BATCH_SIZE } = fields;
    if (dimensions !== undefined && !(Number.isInteger(dimensions) && dimensions >= 1)) {
      throw new ValidationError(`dimensions must be a positive integer (got ${describe(dimensions)})`);
    }
    if (encodingFormat !== "float" && encodingFormat !== "base64") {
      throw new ValidationError(`encodingFormat must be "float" or "base64" (got ${describe(encodingFormat)})`);
    }
    if (!(Number.isInteger(batchSize) && batchSize >= 1 && batchSize <= MAX_BATCH_SIZE)) {
      throw new ValidationError(
        `batchSize must be an integer from 1 to ${MAX_BATCH_SIZE}, the service's limit (got ${describe(batchSize)})`,
      );
    }
    if (fields.onUsage !== undefined && typeof fields.onUsage !== "function") throw new ValidationError("onUsage must be a function");
    const { retry, noRetry } = retryOf(fields);
    this.model = model;
    this.dimensions = dimensions;
    this.encodingFormat = encodingFormat;
    this.batchSize = batchSize;
    this.maxConcurrency = maxConcurrency;
    this.#noRetry = noRetry;
    this.#onUsage = fields.onUsage;
    const shared = sharedStackOf(fields);
    this.brand = shared?.brand ?? fields.brand ?? DEFAULT_BRAND;
    // the key goes into the stack and nowhere else on this object
    this.#fetch = shared ?? createServiceFetch({ ...faceStackOptions(fields), brand: this.brand, retry });
    this.#url = this.#fetch.url("/embeddings");
  }

  /** The fetch stack this object sends through (share it with `serviceFetch`). */
  get serviceFetch(): ServiceFetch {
    return this.#fetch;
  }

  /** The embedding of one text (a query). */
  async embedQuery(text: string): Promise<number[]> {
    const [vector] = (await this.embedWithUsage(checkTexts([text], "embedQuery"))).embeddings;
    return vector!;
  }

  /**
   * The embeddings of `texts`, in their order: sent in batches of `batchSize` (at most 2,048, the service's
   * limit), `maxConcurrency` requests at a time. An empty list sends nothing.
   */
  async embedDocuments(texts: string[]): Promise<number[][]> {
    return (await this.embedWithUsage(texts)).embeddings;
  }

  /** `embedDocuments` with what the call used (tokens, requests, headers), free of races with other calls. */
  async embedWithUsage(
    texts: string[],
    options: { signal?: AbortSignal } = {},
  ): Promise<{ embeddings: number[][]; usage: EmbeddingsUsage }> {
    const inputs = checkTexts(texts, "embedDocuments");
    options.signal?.throwIfAborted();
    const parts = batches(inputs, this.batchSize);
    // the signal goes to the stack, which ends the request with its typed AbortError (the AsyncCaller's own race
    // with the signal would reject first, with the bare DOMException); a batch still queued sends nothing
    const results = await Promise.all(parts.map((part) => this.caller.call(() => this.#request(part.texts, options.signal))));
    const embeddings = new Array<number[]>(inputs.length);
    const usage: EmbeddingsUsage = { promptTokens: 0, totalTokens: 0, requests: parts.length, headers: [] };
    for (let b = 0; b < parts.length; b++) {
      const { start } = parts[b]!;
      const { response, headers } = results[b]!;
      // each response is checked on its own (./wire.ts); one call's vectors must also agree across its batches
      const width = response.vectors[0]?.length;
      const first = results[0]!.response.vectors[0]?.length;
      if (width !== first) {
        throw new ResponseFormatError(
          `unexpected /embeddings response: embeddings of different lengths across batches (${first} and ${width})`,
          { headers },
        );
      }
      for (let i = 0; i < response.vectors.length; i++) embeddings[start + i] = response.vectors[i]!;
      usage.promptTokens += response.promptTokens;
      usage.totalTokens += response.totalTokens;
      usage.model ??= response.model;
      if (response.cost)
        usage.cost = { usd: (usage.cost?.usd ?? 0) + response.cost.usd, diem: (usage.cost?.diem ?? 0) + response.cost.diem };
      if (headers.balance?.remainingUsd !== undefined) usage.balanceRemainingUsd = headers.balance.remainingUsd;
      usage.headers.push(headers);
    }
    this.lastUsage = usage;
    this.#onUsage?.(usage);
    return { embeddings, usage };
  }

  async #request(input: string[], signal: AbortSignal | undefined) {
    const body: Record<string, unknown> = {
      model: this.model,
      // one text travels as a string (as the OpenAI clients send a query); never token ids
      input: input.length === 1 ? input[0] : input,
      encoding_format: this.encodingFormat,
    };
    if (this.dimensions !== undefined) body.dimensions = this.dimensions;
    const response = await this.#fetch(this.#url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
      signal,
      // the input's tokens, for a token window the service may tell (the pacing layer holds a send that does not fit)
      service: {
        model: this.model,
        modelType: "embedding",
        estimatedTokens: estimateEmbeddingTokens(input),
        ...(this.#noRetry ? { retry: false } : {}),
      },
    });
    const headers = responseHeaders(response, this.brand);
    const text = await readResponseText(response, { what: "the embeddings", signal, headers });
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (cause) {
      throw new ResponseFormatError("invalid JSON from /embeddings", { status: response.status, headers, cause });
    }
    return { response: readEmbeddingsResponse(json, input.length, headers), headers };
  }

  /**
   * The cost of `usage` (default: `lastUsage`) from the model's published price (`model_spec.pricing.input` per
   * million tokens, from the `/models?type=embedding` records shared by every object in the process: read once per
   * base URL, see src/models/records.ts). The service's own figure when the response carried one; undefined when
   * the model lists no price.
   */
  async estimateCost(usage: EmbeddingsUsage | undefined = this.lastUsage): Promise<EmbeddingsCost | undefined> {
    if (!usage) return undefined;
    if (usage.cost) return usage.cost;
    const records = modelRecordsFor(this.#fetch, "embedding");
    await records.load();
    const price = records.pricing(usage.model ?? this.model)?.input;
    if (!price) return undefined;
    return { usd: (usage.promptTokens * price.usd) / 1e6, diem: (usage.promptTokens * price.diem) / 1e6 };
  }

  /** The options that describe this object: never the key, the wallet or functions. */
  toJSON(): Record<string, unknown> {
    return {
      name: "ServiceEmbeddings",
      model: this.model,
      dimensions: this.dimensions,
      encodingFormat: this.encodingFormat,
      batchSize: this.batchSize,
      maxConcurrency: this.maxConcurrency,
      brand: this.brand,
      baseUrl: this.#fetch.baseUrl,
    };
  }

  /** `console.log(embeddings)` shows `toJSON()`. */
  [Symbol.for("nodejs.util.inspect.custom")](): unknown {
    return this.toJSON();
  }
}
