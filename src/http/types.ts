/**
 * The types every layer of the transport shares (kept apart from fetch-stack.ts, which assembles the layers, so
 * that no layer imports the assembly that imports it).
 */

/** A model's type, for its published requests per minute (spec part 8). */
export type ModelType = "text" | "image" | "audio" | "embedding" | "video";
export const MODEL_TYPES: readonly ModelType[] = ["text", "image", "audio", "embedding", "video"];

/** Per-request hints to the stack; plain `fetch` ignores them. */
export interface ServiceRequestHints {
  /** model id, for pacing per key and model */
  model?: string;
  /**
   * the model's type, for its published requests per minute (spec part 8) when the service sends no rate-limit
   * headers; default: told by the path (`/embeddings`, `/image(s)/…`, `/audio/…`, `/video/…`; else text)
   */
  modelType?: ModelType;
  /** tokens this request may use, for token pacing */
  estimatedTokens?: number;
  /** false: send no credentials (public endpoints) */
  auth?: boolean;
  /** false: never retry (e.g. a payment that must not be re-sent blindly) */
  retry?: boolean;
  /** per-request timeout in ms (overrides the stack's) */
  timeout?: number;
  /** per-request idle timeout of the body read, in ms (overrides the stack's `idleTimeout`) */
  idleTimeout?: number;
  /** per-request deadline of the whole call, body included, in ms (overrides the stack's `totalTimeout`) */
  totalTimeout?: number;
  /** per-request cap of a non-stream body, in bytes (overrides the stack's `maxResponseBytes`) */
  maxResponseBytes?: number;
  /** false: hand back non-success responses instead of throwing typed errors */
  throwOnError?: boolean;
  /**
   * spend governance of this request, beside the stack's own: `SpendBudget`s to reserve its worst case on and
   * `SpendLog`s to record its charge and payments to; false: not metered at all (the stack's own reads)
   */
  spend?: RequestSpend | false;
  /** receives the events of payments this request causes (a LangChain run's callbacks; a `PaymentEvent`) */
  onPaymentEvent?(event: { type: string }): void | Promise<void>;
}

/** A request's spend governance beside its stack's (see `ServiceRequestHints.spend`). */
export interface RequestSpend {
  budgets?: readonly object[];
  logs?: readonly object[];
  /**
   * the request's price when the caller knows it and the route does not tell it (a job's quote, charged at its
   * queue): reserved as its worst case and settled as its cost
   */
  estimateUsd?: number;
}

export interface ServiceRequestInit extends RequestInit {
  service?: ServiceRequestHints;
}

export type FetchLike = (input: string | URL | Request, init?: ServiceRequestInit) => Promise<Response>;
export type FetchLayer = (next: FetchLike) => FetchLike;
