/**
 * ServiceClient: the plain API over the one fetch stack. Methods for what the spec names; `request()` for
 * what is not wrapped. Bodies the spec leaves open are typed from the published description and validated
 * with zod where the client relies on a field.
 */
import { z } from "zod";
import { ConfigurationError, ValidationError } from "./http/errors.js";
import { underCallDeadline } from "./http/body-guard.js";
import { parseWith, serviceRequest, type RequestOptions, type ServiceApi, type ServiceResult } from "./api/request.js";
import { createServiceFetch, sharedStackOf, type FetchStackOptions, type ServiceFetch } from "./stack.js";
import { networkCacheFor, type NetworkCache } from "./crypto-rpc/networks.js";
import {
  ModelAliasListSchema,
  ModelListSchema,
  checkMappingType,
  modelRecordsFor,
  type ModelAliasList,
  type ModelRecords,
  type ServiceModel,
} from "./models/records.js";
import {
  cryptoRpc,
  type JsonRpcRequest,
  type CryptoRpcOptions,
  type CryptoRpcSingleResult,
  type CryptoRpcBatchResult,
} from "./crypto-rpc/rpc.js";
import type { X402Wallet } from "./x402/wallets.js";
import { X402BalanceSchema, type X402Balance } from "./x402/balance.js";
import type { TopUpResult } from "./x402/layer.js";
import type { TransactionsOptions, X402Transactions } from "./x402/client.js";
import { transcribe, type TranscribeOptions, type TranscriptionResult } from "./media/transcription.js";
import type { MediaInput } from "./media/input.js";
import { jobsApi, type JobsApi } from "./media/jobs-api.js";
import type { AudioJobParameters, VideoJobParameters } from "./media/jobs.js";
import {
  editImage,
  multiEditImage,
  removeBackground,
  upscaleImage,
  type EditedImage,
  type EditImageParameters,
  type MultiEditImageParameters,
  type RemoveBackgroundParameters,
  type UpscaleImageParameters,
} from "./media/images.js";
import { getCharacter, listCharacters, type Character, type ListCharactersOptions } from "./account/characters.js";
import { getUsage, type UsageRange, type UsageReport } from "./account/billing.js";
import type {
  CallOptions,
  CreateSpeechParameters,
  GenerateImageParameters,
  GenerateImageResult,
  SimpleGenerateImageParameters,
  SpeechResult,
  WebScrapeResult,
  WebSearchParameters,
  WebSearchResult,
  simpleGenerateImage,
} from "./tools/api.js";

export { parseWith, type RequestOptions, type ServiceApi, type ServiceResult } from "./api/request.js";

export interface ServiceClientOptions extends FetchStackOptions {
  /** an existing stack to share (limiters, guards, payment state) instead of building one */
  serviceFetch?: ServiceFetch;
}

const RateLimitsSchema = z
  .object({
    data: z
      .object({
        accessPermitted: z.boolean().optional(),
        apiTier: z.object({ id: z.string(), isCharged: z.boolean().optional() }).passthrough().optional(),
        balances: z.object({ USD: z.number().optional(), DIEM: z.number().optional() }).passthrough().optional(),
        keyExpiration: z.string().nullable().optional(),
        nextEpochBegins: z.string().optional(),
        rateLimits: z
          .array(
            z
              .object({
                apiModelId: z.string(),
                rateLimits: z.array(z.object({ type: z.string(), amount: z.number() }).passthrough()),
              })
              .passthrough(),
          )
          .optional(),
      })
      .passthrough(),
  })
  .passthrough();
export type RateLimits = z.infer<typeof RateLimitsSchema>["data"];

const RateLimitLogSchema = z
  .object({
    data: z.array(z.record(z.string(), z.unknown())),
  })
  .passthrough();
export type RateLimitLogEntry = Record<string, unknown>;

const NetworksSchema = z.object({ networks: z.array(z.string()) }).passthrough();
export type { X402Balance };

export class ServiceClient implements ServiceApi {
  readonly fetch: ServiceFetch;
  #video?: JobsApi<VideoJobParameters>;
  #audio?: JobsApi<AudioJobParameters>;

  constructor(options: ServiceClientOptions = {}) {
    // a context beside a given serviceFetch would be ignored (the stack has its own): refused unless it is that one
    this.fetch = sharedStackOf(options) ?? createServiceFetch(options);
  }

  get baseUrl(): string {
    return this.fetch.baseUrl;
  }
  get brand(): string {
    return this.fetch.brand;
  }

  /** Raw request: JSON in, JSON (or text) out, typed errors on non-success. */
  request<T = unknown>(path: string, options: RequestOptions = {}): Promise<ServiceResult<T>> {
    return serviceRequest<T>(this.fetch, path, options);
  }

  /**
   * The shared `/models` records of this client's deployment (read once per base URL and list `type`, default
   * `text`, for every object of its context; see src/models/records.ts): `await client.models().load()`, then
   * `client.models().get(id)` and `.pricing(id)` synchronously.
   */
  models(type = "text"): ModelRecords {
    return modelRecordsFor(this.fetch, type);
  }

  /** GET /models (optionally `?type=text`), validated; always asked afresh (`models()` is the shared cache). */
  async listModels(options: { type?: string; signal?: AbortSignal } = {}): Promise<ServiceModel[]> {
    const res = await this.request("/models", { query: { type: options.type }, signal: options.signal });
    return parseWith(ModelListSchema, res.data, "/models", res.headers).data;
  }

  /**
   * GET /models/traits (optionally `?type=image`): trait -> model id (`{ default: "...", fastest: "..." }` in
   * `data`), validated; always asked afresh. A trait is accepted as `model` and resolved by the service.
   */
  async listModelTraits(type?: string, options: { signal?: AbortSignal } = {}): Promise<ModelAliasList> {
    const res = await this.request("/models/traits", { query: { type }, signal: options.signal });
    return parseWith(ModelAliasListSchema, res.data, "/models/traits", res.headers);
  }

  /**
   * GET /models/compatibility_mapping (optionally `?type=text`): OpenAI-style or legacy id -> model id (in `data`),
   * validated; always asked afresh. Such a name is accepted as `model` and served as the model it maps to. The
   * service keeps one per list: `type` `all` or `code` is a `ValidationError`, unsent.
   */
  async getCompatibilityMapping(type?: string, options: { signal?: AbortSignal } = {}): Promise<ModelAliasList> {
    checkMappingType(type); // type=all and type=code are the service's 400s
    const res = await this.request("/models/compatibility_mapping", { query: { type }, signal: options.signal });
    return parseWith(ModelAliasListSchema, res.data, "/models/compatibility_mapping", res.headers);
  }

  /** GET /api_keys/rate_limits: the canonical source of the caller's limits. */
  async getRateLimits(options: { signal?: AbortSignal } = {}): Promise<RateLimits> {
    const res = await this.request("/api_keys/rate_limits", { signal: options.signal });
    return parseWith(RateLimitsSchema, res.data, "/api_keys/rate_limits", res.headers).data;
  }

  /**
   * The last 50 limits the caller exceeded, newest first. Asked at `/api_keys/rate_limits/log`, the only path
   * the published description (and the live service) has; a deployment that answers it 404 is asked at the
   * spec's `/api_keys/rate_limit_logs` instead. (The other order would put a 404, which counts towards the
   * abuse block, on the wire of every call to the real service.)
   */
  async getRateLimitLogs(options: { signal?: AbortSignal } = {}): Promise<RateLimitLogEntry[]> {
    let res: ServiceResult<unknown>;
    try {
      res = await this.request("/api_keys/rate_limits/log", { signal: options.signal });
    } catch (err) {
      if ((err as { status?: number }).status !== 404) throw err;
      res = await this.request("/api_keys/rate_limit_logs", { signal: options.signal });
    }
    return parseWith(RateLimitLogSchema, res.data, "rate limit log", res.headers).data;
  }

  /** GET /crypto/rpc/networks: public, sent without credentials. */
  async listCryptoNetworks(options: { signal?: AbortSignal } = {}): Promise<string[]> {
    const res = await this.request("/crypto/rpc/networks", { signal: options.signal, service: { auth: false } });
    return parseWith(NetworksSchema, res.data, "/crypto/rpc/networks", res.headers).networks;
  }

  /** GET /x402/balance/{walletAddress}: the wallet's credit (needs that wallet's sign-in; default: this client's wallet). */
  async getX402Balance(address: string | undefined = this.wallet?.address, options: { signal?: AbortSignal } = {}): Promise<X402Balance> {
    if (address === undefined) throw new ConfigurationError("getX402Balance needs an address or a client built with a `wallet`");
    if (!/^(0x[0-9a-fA-F]{40}|[1-9A-HJ-NP-Za-km-z]{32,44})$/.test(address)) {
      throw new ValidationError(`not an EVM or Solana address: ${JSON.stringify(address)}`);
    }
    const res = await this.request(`/x402/balance/${address}`, { signal: options.signal });
    return parseWith(X402BalanceSchema, res.data, "/x402/balance", res.headers).data;
  }

  /** The cached crypto RPC network list of this client (TTL, single flight). */
  get networks(): NetworkCache {
    return networkCacheFor(this);
  }

  /**
   * JSON-RPC through the service's proxy: one request or a batch (≤ 100, ids correlated). JSON-RPC errors
   * come back as data; an unknown slug is refused before the request once the network list is known.
   */
  cryptoRpc(network: string, request: JsonRpcRequest, options?: CryptoRpcOptions): Promise<CryptoRpcSingleResult>;
  cryptoRpc(network: string, batch: JsonRpcRequest[], options?: CryptoRpcOptions): Promise<CryptoRpcBatchResult>;
  cryptoRpc(
    network: string,
    requestOrBatch: JsonRpcRequest | JsonRpcRequest[],
    options?: CryptoRpcOptions,
  ): Promise<CryptoRpcSingleResult | CryptoRpcBatchResult> {
    return Array.isArray(requestOrBatch)
      ? cryptoRpc(this, network, requestOrBatch, options)
      : cryptoRpc(this, network, requestOrBatch, options);
  }

  // The other inference endpoints: thin doors to src/tools/api.ts (loaded on first use; it imports this file).

  /** POST /augment/search: web results for a query. */
  async webSearch(parameters: WebSearchParameters, options?: CallOptions): Promise<WebSearchResult> {
    return (await import("./tools/api.js")).webSearch(this, parameters, options);
  }

  /** POST /augment/scrape: one public http(s) page as text (loopback and private addresses are refused unsent). */
  async webScrape(url: string, options?: CallOptions): Promise<WebScrapeResult> {
    return (await import("./tools/api.js")).webScrape(this, url, options);
  }

  /** POST /image/generate: the service's own image endpoint. */
  async generateImage(parameters: GenerateImageParameters, options?: CallOptions): Promise<GenerateImageResult> {
    return (await import("./tools/api.js")).generateImage(this, parameters, options);
  }

  /** POST /images/generations: the OpenAI-compatible image endpoint (one image, base64). */
  async simpleGenerateImage(parameters: SimpleGenerateImageParameters, options?: CallOptions): ReturnType<typeof simpleGenerateImage> {
    return (await import("./tools/api.js")).simpleGenerateImage(this, parameters, options);
  }

  /** POST /audio/speech: text to speech (audio bytes, format, duration). */
  async createSpeech(parameters: CreateSpeechParameters, options?: CallOptions): Promise<SpeechResult> {
    return (await import("./tools/api.js")).createSpeech(this, parameters, options);
  }

  // Transcription, long-running jobs, image editing (src/media/), characters and billing (src/account/).

  /** POST /audio/transcriptions: speech to text from a file path, bytes, a Blob or a stream (≤ 25 MB). */
  transcribe(audio: MediaInput, options?: TranscribeOptions): Promise<TranscriptionResult> {
    return transcribe(this, audio, options);
  }

  /** Video jobs: `quote`, `queue`, `retrieve`, `complete` (POST /video/…) and the whole run, `generate`. */
  get video(): JobsApi<VideoJobParameters> {
    return (this.#video ??= jobsApi(this, "video"));
  }

  /** Asynchronous audio jobs (music, sound effects, long narration; POST /audio/quote|queue|retrieve|complete). */
  get audio(): JobsApi<AudioJobParameters> {
    return (this.#audio ??= jobsApi(this, "audio"));
  }

  /** POST /image/edit: one image changed as the prompt says. */
  editImage(parameters: EditImageParameters, options?: { signal?: AbortSignal }): Promise<EditedImage> {
    return editImage(this, parameters, options);
  }

  /** POST /image/multi-edit: several images composed by a prompt (the first is the base). */
  multiEditImage(parameters: MultiEditImageParameters, options?: { signal?: AbortSignal }): Promise<EditedImage> {
    return multiEditImage(this, parameters, options);
  }

  /** POST /image/upscale: 2× or 4× (PNG). */
  upscaleImage(parameters: UpscaleImageParameters, options?: { signal?: AbortSignal }): Promise<EditedImage> {
    return upscaleImage(this, parameters, options);
  }

  /** POST /image/background-remove: a transparent PNG cutout. */
  removeBackground(parameters: RemoveBackgroundParameters, options?: { signal?: AbortSignal }): Promise<EditedImage> {
    return removeBackground(this, parameters, options);
  }

  /** GET /characters (API keys only): every matching character, or one page with `limit`. */
  listCharacters(options?: ListCharactersOptions): Promise<Character[]> {
    return listCharacters(this, options);
  }

  /** GET /characters/{slug} (API keys only); `CharacterNotFoundError` when the service has none. */
  getCharacter(slug: string, options?: { signal?: AbortSignal }): Promise<Character> {
    return getCharacter(this, slug, options);
  }

  /** The account's usage in a time range, every page, summed per model (an ADMIN API key; see src/account/billing.ts). */
  getUsage(range?: UsageRange): Promise<UsageReport> {
    return getUsage(this, range);
  }

  /** The wallet this client signs in and pays with, if any. */
  get wallet(): X402Wallet | undefined {
    return this.fetch.wallet;
  }

  /**
   * Tops up the wallet's credit by `amountUsd` (≥ $5) within the payment policy; needs a wallet. `signal` ends the
   * wait: before the payment is signed it cancels the top-up; a payment already signed is still delivered, and
   * the next call finds its outcome.
   */
  async topUp(amountUsd: number, options: { signal?: AbortSignal } = {}): Promise<TopUpResult> {
    const controller = await this.fetch.paymentController();
    if (!controller) throw new ConfigurationError("topUp needs a client built with a `wallet`");
    const { topUp } = await import("./x402/client.js");
    // the stack's deadline covers the whole top-up (the wait for one in flight, the requirements, the signing)
    return underCallDeadline(this.fetch.limits.totalTimeout, options.signal, (signal) => topUp(this, amountUsd, { controller, signal }));
  }

  /** The wallet's top-ups and charges, newest first; needs a wallet (or pass `address` of the signed-in wallet). */
  async getX402Transactions(options: Omit<TransactionsOptions, "wallet"> = {}): Promise<X402Transactions> {
    const { getX402Transactions } = await import("./x402/client.js");
    return getX402Transactions(this, { wallet: this.wallet, ...options });
  }

  /**
   * The wallet's credit in USD: `X-Balance-Remaining` when the service sends it (the live one does not), else
   * `GET /x402/balance`, read only when the last figure is stale (a paid request was served since, or it is a
   * minute old; see src/x402/balance.ts), paced within the route's 30 reads a minute. Shared by every client of
   * the wallet in the process; undefined without a wallet, or before any figure could be learned.
   */
  async lastBalanceUsd(): Promise<number | undefined> {
    return (await this.fetch.paymentController())?.currentBalanceUsd();
  }

  toJSON() {
    return { baseUrl: this.baseUrl, brand: this.brand, identity: this.fetch.identity };
  }
}
