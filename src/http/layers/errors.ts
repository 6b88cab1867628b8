/**
 * The outermost layer: a `Request` input read once into (url, init); the per-request hints, the JSON body's size
 * (`maxRequestBytes`, as the service's 413) and an Idempotency-Key checked before anything waits, reserves or
 * pays; a non-success answer thrown as its typed error (or handed back to the `openai` SDK, which types it itself).
 */
import { ConfigurationError } from "../errors.js";
import { checkBytes, validateHints } from "../options.js";
import { DEFAULT_MAX_REQUEST_BYTES, checkRequestSize, requestHeader } from "../request-size.js";
import { checkIdempotencyKey } from "../idempotency-key.js";
import { fromRequest, throwForStatus } from "../responses.js";
import type { FetchLayer } from "../types.js";
import type { LayerContext } from "./context.js";

export interface ErrorsLayerOptions {
  /** largest JSON request body in bytes of UTF-8 (default 35 MiB; `Infinity`: no check) */
  maxRequestBytes?: number;
}

/** The request limit in force (checked: a ConfigurationError naming the option). */
export function maxRequestBytesOf(options: ErrorsLayerOptions): number {
  // Infinity: a deployment without a limit (the check is then skipped)
  if (options.maxRequestBytes !== Infinity) checkBytes(options.maxRequestBytes, "maxRequestBytes", ConfigurationError);
  return options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
}

/** The request came from the `openai` SDK (it stamps every attempt with `X-Stainless-Retry-Count`). */
function fromOpenAiSdk(headers: HeadersInit | undefined): boolean {
  return requestHeader(headers, "x-stainless-retry-count") !== undefined;
}

/** The layer, carrying the request limit in force (`maxRequestBytes`). */
export function errors(options: ErrorsLayerOptions, ctx: Pick<LayerContext, "brand">): FetchLayer & { maxRequestBytes: number } {
  const maxRequestBytes = maxRequestBytesOf(options);
  const brand = ctx.brand;
  const layer: FetchLayer = (next) => async (input, init) => {
    if (typeof input !== "string" && !(input instanceof URL)) [input, init] = await fromRequest(input, init);
    // every layer's per-request hints, here: a bad one is refused before anything waits, reserves or pays
    validateHints(init?.service);
    // a JSON body the service would refuse with 413: refused here, before any wait, reservation or payment
    if (init?.body != null) checkRequestSize(init.body, init.headers, maxRequestBytes);
    // an Idempotency-Key the crypto RPC proxy would silently ignore
    checkIdempotencyKey(typeof input === "string" ? input : input.href, init?.headers);
    const response = await next(input, init);
    if (response.ok || init?.service?.throwOnError === false) return response;
    if (fromOpenAiSdk(init?.headers)) {
      // The SDK builds its own typed APIError from the response (a thrown error would become an
      // APIConnectionError, and be re-sent). This stack already retried what is worth retrying: tell the SDK not to.
      const headers = new Headers(response.headers);
      headers.set("x-should-retry", "false");
      return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
    }
    return throwForStatus(response, brand);
  };
  return Object.assign(layer, { maxRequestBytes });
}
