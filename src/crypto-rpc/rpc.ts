/**
 * `POST /crypto/rpc/{network}`: JSON-RPC 2.0 through the one fetch stack (API key or wallet auth, retries,
 * payments apply unchanged). Single and batch (≤ 100, ids correlated); JSON-RPC errors inside a 200 are
 * returned as data, never thrown; the pricing headers and `Idempotent-Replayed` are parsed.
 */
import { z } from "zod";
import { BadRequestError, ResponseFormatError, ValidationError } from "../http/errors.js";
import { IDEMPOTENCY_KEY_PATTERN, malformedIdempotencyKey } from "../http/idempotency-key.js";
import { underCallDeadline } from "../http/body-guard.js";
import type { ServiceApi } from "../api/request.js";
import type { NetworkLister } from "./networks.js";

/** What a crypto RPC call needs of a client (`ServiceClient` has it): the stack's requests and the network list. */
type RpcClient = ServiceApi & NetworkLister;
import type { ServiceResponseHeaders } from "../http/headers.js";
import { networkCacheFor, unsupportedNetwork, type NetworkCache } from "./networks.js";

export const MAX_BATCH_SIZE = 100;
const SLUG_RE = /^[a-z0-9][a-z0-9-]{0,63}$/;

export type JsonRpcId = string | number;

export interface JsonRpcRequest {
  jsonrpc?: "2.0";
  method: string;
  params?: unknown[] | Record<string, unknown>;
  id?: JsonRpcId;
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export interface JsonRpcResponse<T = unknown> {
  jsonrpc: "2.0";
  id: JsonRpcId | null;
  result?: T;
  error?: JsonRpcErrorObject;
}

/** What the proxy charged and how it answered (from the response headers). */
export interface CryptoRpcBilling {
  /**
   * `x-<brand>-rpc-credits`: this call's credits (its share when the stack coalesced it into a batch); on a replay
   * (`idempotentReplayed`) the original's, not billed again
   */
  credits?: number;
  /** `x-<brand>-rpc-cost-usd`, as `credits` */
  costUsd?: number;
  /** `x-request-id`: quote it to support */
  requestId?: string;
  /** `Idempotent-Replayed: true`: served from the idempotency cache (not re-sent upstream, not re-billed) */
  idempotentReplayed: boolean;
}

export interface CryptoRpcSingleResult<T = unknown> extends CryptoRpcBilling {
  response: JsonRpcResponse<T>;
  /** `response.result` (undefined on a JSON-RPC error) */
  result?: T;
  /** `response.error`: a JSON-RPC error inside a 200, returned as data */
  error?: JsonRpcErrorObject;
  headers: ServiceResponseHeaders;
}

export interface CryptoRpcBatchResult extends CryptoRpcBilling {
  /** one response per request, in the order of the requests (correlated by id) */
  responses: JsonRpcResponse[];
  headers: ServiceResponseHeaders;
}

export interface CryptoRpcOptions {
  /**
   * `Idempotency-Key` (`[A-Za-z0-9_-]{1,255}`): the same key with the same body replays the cached answer (24 h);
   * `true` generates one, so the stack's retries of this call can never run it twice.
   */
  idempotencyKey?: string | true;
  signal?: AbortSignal;
  /**
   * The network list to check the slug against before sending (default: the client's shared cache).
   * `false`: don't check (one request fewer; the proxy still answers 400 for an unknown slug).
   */
  networks?: NetworkCache | false;
}

const paramsSchema = z.union([z.array(z.unknown()), z.record(z.string(), z.unknown())]);
const requestSchema = z
  .object({
    jsonrpc: z.literal("2.0").optional(),
    method: z.string().min(1, "method must be a non-empty string").max(200),
    params: paramsSchema.optional(),
    id: z.union([z.string(), z.number().int()]).optional(),
  })
  .strict();

const errorObjectSchema = z.object({ code: z.number(), message: z.string(), data: z.unknown().optional() }).passthrough();
const responseSchema = z
  .object({
    jsonrpc: z.string().optional(),
    id: z.union([z.string(), z.number(), z.null()]).optional(),
    result: z.unknown().optional(),
    error: errorObjectSchema.optional(),
  })
  .passthrough()
  .refine((r) => "result" in r || r.error !== undefined, "neither result nor error");

function issuesText(error: z.ZodError, prefix = ""): string {
  return error.issues.map((i) => `${prefix}${i.path.length ? `${i.path.join(".")}: ` : ""}${i.message}`).join("; ");
}

/** Validates and normalizes one request (adds `jsonrpc`, and `id` when missing). Throws `ValidationError`. */
export function normalizeRequest(
  request: unknown,
  fallbackId: JsonRpcId,
  where = "request",
): Required<Pick<JsonRpcRequest, "jsonrpc" | "method" | "id">> & JsonRpcRequest {
  const parsed = requestSchema.safeParse(request);
  if (!parsed.success) {
    throw new ValidationError(`invalid JSON-RPC ${where}: ${issuesText(parsed.error)}`, { issues: parsed.error.issues });
  }
  const r = parsed.data;
  return { jsonrpc: "2.0", method: r.method, ...(r.params !== undefined ? { params: r.params } : {}), id: r.id ?? fallbackId };
}

export function validateSlug(network: string): void {
  if (typeof network !== "string" || !SLUG_RE.test(network)) {
    throw new ValidationError(
      `network must be a slug like "base-mainnet" (lowercase letters, digits, dashes), got ${JSON.stringify(network)}`,
    );
  }
}

function billingOf(headers: ServiceResponseHeaders): CryptoRpcBilling {
  return {
    credits: headers.rpc?.credits,
    costUsd: headers.rpc?.costUsd,
    requestId: headers.rpc?.requestId,
    idempotentReplayed: headers.rpc?.idempotentReplayed === true,
  };
}

function parseResponse(value: unknown, headers: ServiceResponseHeaders, where: string): JsonRpcResponse {
  const parsed = responseSchema.safeParse(value);
  if (!parsed.success) {
    throw new ResponseFormatError(`not a JSON-RPC response (${where}): ${issuesText(parsed.error)}`, { body: value, headers });
  }
  const r = parsed.data;
  return {
    jsonrpc: "2.0",
    id: r.id ?? null,
    ...("result" in r ? { result: r.result } : {}),
    ...(r.error ? { error: stripStack(r.error) } : {}),
  };
}

/** Node errors (ganache's) carry a `stack` in `data`: never hand internals to a model or a log. */
function stripStack(error: JsonRpcErrorObject): JsonRpcErrorObject {
  const { code, message } = error;
  let data = error.data;
  if (data && typeof data === "object" && !Array.isArray(data)) {
    const { stack: _stack, ...rest } = data as Record<string, unknown>;
    data = Object.keys(rest).length ? rest : undefined;
  }
  return data === undefined ? { code, message } : { code, message, data };
}

/** Sends one JSON-RPC request. */
export function cryptoRpc<T = unknown>(
  client: RpcClient,
  network: string,
  request: JsonRpcRequest,
  options?: CryptoRpcOptions,
): Promise<CryptoRpcSingleResult<T>>;
/** Sends a batch (1–100 requests); responses come back in request order. */
export function cryptoRpc(
  client: RpcClient,
  network: string,
  batch: JsonRpcRequest[],
  options?: CryptoRpcOptions,
): Promise<CryptoRpcBatchResult>;
export function cryptoRpc(
  client: RpcClient,
  network: string,
  requestOrBatch: JsonRpcRequest | JsonRpcRequest[],
  options: CryptoRpcOptions = {},
): Promise<CryptoRpcSingleResult | CryptoRpcBatchResult> {
  // the network list and the call are two requests: the stack's totalTimeout covers them as one call
  return underCallDeadline(client.fetch.limits.totalTimeout, options.signal, (signal) =>
    send(client, network, requestOrBatch, { ...options, signal }),
  );
}

async function send(
  client: RpcClient,
  network: string,
  requestOrBatch: JsonRpcRequest | JsonRpcRequest[],
  options: CryptoRpcOptions,
): Promise<CryptoRpcSingleResult | CryptoRpcBatchResult> {
  // --- everything the caller got wrong is reported here, before any request ---
  validateSlug(network);
  let idempotencyKey: string | undefined;
  if (options.idempotencyKey === true) idempotencyKey = globalThis.crypto.randomUUID();
  else if (options.idempotencyKey !== undefined) {
    // the live proxy would ignore a malformed key silently (the stack refuses one set by hand, too)
    if (typeof options.idempotencyKey !== "string" || !IDEMPOTENCY_KEY_PATTERN.test(options.idempotencyKey))
      throw malformedIdempotencyKey();
    idempotencyKey = options.idempotencyKey;
  }
  const isBatch = Array.isArray(requestOrBatch);
  let body: JsonRpcRequest | JsonRpcRequest[];
  if (isBatch) {
    if (requestOrBatch.length === 0) throw new ValidationError("a batch needs at least one request");
    if (requestOrBatch.length > MAX_BATCH_SIZE) {
      throw new ValidationError(`a batch holds at most ${MAX_BATCH_SIZE} requests (got ${requestOrBatch.length}); split it`);
    }
    const ids = new Set<JsonRpcId>();
    const explicit = new Set(requestOrBatch.map((r) => (r && typeof r === "object" ? r.id : undefined)).filter((id) => id !== undefined));
    let next = 1;
    body = requestOrBatch.map((r, i) => {
      while (explicit.has(next)) next++;
      const normalized = normalizeRequest(r, next, `request at index ${i}`);
      if (normalized.id === next) next++;
      if (ids.has(normalized.id))
        throw new ValidationError(`duplicate id ${JSON.stringify(normalized.id)} in batch: ids correlate responses`);
      ids.add(normalized.id);
      return normalized;
    });
  } else {
    body = normalizeRequest(requestOrBatch, 1);
  }
  const cache = options.networks === false ? undefined : (options.networks ?? networkCacheFor(client));
  if (cache) await cache.assertSupported(network, { signal: options.signal });

  // --- the request, through the one stack ---
  const headers: Record<string, string> = {};
  if (idempotencyKey) headers["idempotency-key"] = idempotencyKey;
  let res;
  try {
    res = await client.request<unknown>(`/crypto/rpc/${encodeURIComponent(network)}`, {
      method: "POST",
      body,
      headers,
      signal: options.signal,
    });
  } catch (error) {
    // The proxy knows best: an unknown slug it rejects becomes the same typed error, with the fresh list.
    if (error instanceof BadRequestError && /unsupported network/i.test(error.message)) {
      const list = cache ?? networkCacheFor(client);
      const fresh = await list.get({ refresh: true, signal: options.signal }).catch(() => undefined);
      const err = unsupportedNetwork(network, fresh ?? []);
      throw Object.assign(err, { cause: error });
    }
    throw error;
  }
  const billing = billingOf(res.headers);
  const data = res.data;
  if (typeof data === "string") {
    throw new ResponseFormatError(`the proxy answered ${network} with non-JSON: ${data.slice(0, 200)}`, {
      body: data,
      headers: res.headers,
    });
  }

  if (!isBatch) {
    const response = parseResponse(data, res.headers, network);
    return { ...billing, response, result: response.result, error: response.error, headers: res.headers };
  }

  const requests = body as (JsonRpcRequest & { id: JsonRpcId })[];
  if (!Array.isArray(data)) {
    // A node may answer a whole batch with one error object (e.g. it does not take batches).
    const single = parseResponse(data, res.headers, network);
    const reason = single.error ? `${single.error.message} (code ${single.error.code})` : "a single response";
    throw new ResponseFormatError(`batch of ${requests.length} answered with ${reason}`, { body: data, headers: res.headers });
  }
  const byId = new Map<string, JsonRpcResponse>();
  for (const item of data) {
    const response = parseResponse(item, res.headers, network);
    byId.set(JSON.stringify(response.id), response);
  }
  const responses = requests.map((r) => {
    const found = byId.get(JSON.stringify(r.id));
    if (!found)
      throw new ResponseFormatError(`batch response has no answer for id ${JSON.stringify(r.id)} (${r.method})`, {
        body: data,
        headers: res.headers,
      });
    return found;
  });
  return { ...billing, responses, headers: res.headers };
}
