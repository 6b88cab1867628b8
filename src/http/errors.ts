/**
 * Typed errors: one base class, one subclass per condition of the spec's part 7 and per client-side refusal.
 * An error keeps the status, parsed body, parsed response headers and request id; it never holds request
 * headers, so credentials cannot leak through `String(err)`, `JSON.stringify(err)` or `err.stack`.
 */
import type { ServiceResponseHeaders } from "./header-types.js";

export interface ServiceErrorInit {
  status?: number;
  code?: string;
  body?: unknown;
  headers?: ServiceResponseHeaders;
  requestId?: string;
  cause?: unknown;
}

export class ServiceError extends Error {
  override name = "ServiceError";
  readonly status?: number;
  readonly code?: string;
  readonly body?: unknown;
  readonly headers?: ServiceResponseHeaders;
  readonly requestId?: string;

  constructor(message: string, init: ServiceErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.body = init.body;
    this.headers = init.headers;
    this.requestId = init.requestId ?? init.headers?.requestId;
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      message: this.message,
      status: this.status,
      code: this.code,
      requestId: this.requestId,
      body: this.body,
    };
  }
}

/** Bad options or input, caught before any network call. */
export class ConfigurationError extends ServiceError {
  override name = "ConfigurationError";
}
export class ValidationError extends ServiceError {
  override name = "ValidationError";
  readonly issues?: unknown;
  constructor(message: string, init: ServiceErrorInit & { issues?: unknown } = {}) {
    super(message, init);
    this.issues = init.issues;
  }
}

/**
 * A request the model cannot serve, refused before it is sent: its profile (from the service's `/models`, or the
 * `profile` option) says it lacks `capability` (a LangChain `ModelProfile` field: `toolCalling`, `toolChoice`,
 * `structuredOutput`, `imageInputs`, `audioInputs`, `videoInputs`, or `logprobs`), which `field` of the request
 * needs. The service would answer 400 and count it against the caller's unsupported-feature budget.
 */
export class UnsupportedCapabilityError extends ValidationError {
  override name = "UnsupportedCapabilityError";
  readonly capability: string;
  readonly model: string;
  /** the request field that needs the capability (`tools`, `response_format`, `messages.1.content.0`, …) */
  readonly field?: string;
  constructor(message: string, init: ServiceErrorInit & { capability: string; model: string; field?: string }) {
    super(message, init);
    this.capability = init.capability;
    this.model = init.model;
    this.field = init.field;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), capability: this.capability, model: this.model, field: this.field };
  }
}

/** 400: invalid request parameters (DetailedError `{error, details, issues?}`). */
export class BadRequestError extends ServiceError {
  override name = "BadRequestError";
  readonly details?: unknown;
  constructor(message: string, init: ServiceErrorInit & { details?: unknown } = {}) {
    super(message, init);
    this.details = init.details;
  }
}
/** 401: authentication failed. */
export class AuthenticationError extends ServiceError {
  override name = "AuthenticationError";
}
/** 401: the model is available to Pro users only. */
export class ProOnlyModelError extends AuthenticationError {
  override name = "ProOnlyModelError";
}
/** 403: authenticated, but not allowed (for example another wallet's balance). */
export class PermissionDeniedError extends ServiceError {
  override name = "PermissionDeniedError";
}
export class NotFoundError extends ServiceError {
  override name = "NotFoundError";
}
/** 404 for a model the service does not know ("Specified model not found…", often with a "did you mean"). */
export class ModelNotFoundError extends NotFoundError {
  override name = "ModelNotFoundError";
}
/**
 * A character the service does not know: its 404 "No character could be found from the provided character_slug"
 * (chat), or `GET /characters/{slug}`'s 404; also thrown before sending for a slug the loaded character list
 * lacks (no request made: `status` is undefined then).
 */
export class CharacterNotFoundError extends NotFoundError {
  override name = "CharacterNotFoundError";
  /** the slug asked for, when known */
  readonly slug?: string;
  constructor(message: string, init: ServiceErrorInit & { slug?: string } = {}) {
    super(message, init);
    this.slug = init.slug;
  }
}
/** 402 variant 1: an API-key caller without balance (`INSUFFICIENT_BALANCE`); no wallet to pay with. */
export class InsufficientBalanceError extends ServiceError {
  override name = "InsufficientBalanceError";
}
/**
 * 402 variants 2 (no credentials: x402 discovery with `accepts`) and 3 (`PAYMENT_REQUIRED`: wallet credit
 * too low, with `topUpInstructions`).
 */
export class PaymentRequiredError extends ServiceError {
  override name = "PaymentRequiredError";
  readonly variant: "discovery" | "insufficient_credit";
  /** x402 payment requirements (from the body or the PAYMENT-REQUIRED header) */
  readonly accepts?: unknown[];
  readonly topUpInstructions?: Record<string, unknown>;
  constructor(
    message: string,
    init: ServiceErrorInit & {
      variant: "discovery" | "insufficient_credit";
      accepts?: unknown[];
      topUpInstructions?: Record<string, unknown>;
    },
  ) {
    super(message, init);
    this.variant = init.variant;
    this.accepts = init.accepts;
    this.topUpInstructions = init.topUpInstructions;
  }
}
/**
 * 429: rate limited. `resetAt` is when the limits it names clear: the latest of `x-ratelimit-reset-requests`,
 * the crypto RPC proxy's `X-RateLimit-Reset` and `retry-after`.
 */
export class RateLimitError extends ServiceError {
  override name = "RateLimitError";
  readonly resetAt?: Date;
  constructor(message: string, init: ServiceErrorInit & { resetAt?: Date } = {}) {
    super(message, init);
    this.resetAt = init.resetAt;
  }
}
/**
 * The abuse block: more than 20 failed requests in 30 s block the caller for 30 s. `source: "service"` when
 * the service answered with the block, `"client"` when this client refused to send because the next failure
 * could trip it.
 */
export class AbuseBlockError extends ServiceError {
  override name = "AbuseBlockError";
  readonly source: "service" | "client";
  readonly retryAfterMs?: number;
  constructor(message: string, init: ServiceErrorInit & { source: "service" | "client"; retryAfterMs?: number }) {
    super(message, init);
    this.source = init.source;
    this.retryAfterMs = init.retryAfterMs;
  }
}
/** 500, 503 and other 5xx, after retries. */
export class ServerError extends ServiceError {
  override name = "ServerError";
}
/**
 * 504: the service timed the request out. Never re-sent unless it asked for a stream: the published
 * description's remedy for a long-running inference request is the streaming API (`stream=true`).
 */
export class GatewayTimeoutError extends ServerError {
  override name = "GatewayTimeoutError";
}
/** Any other non-success status. */
export class UnexpectedStatusError extends ServiceError {
  override name = "UnexpectedStatusError";
}
/** The request never got an answer (DNS, refused connection, reset). */
export class NetworkError extends ServiceError {
  override name = "NetworkError";
}
/** No answer within `timeout` ms. */
export class TimeoutError extends ServiceError {
  override name = "TimeoutError";
}
/** The caller aborted the request. */
export class AbortError extends ServiceError {
  override name = "AbortError";
}
/** A stream that ended without its end marker, or carried an in-band `{error}`. Never retried blindly. */
export class StreamError extends ServiceError {
  override name = "StreamError";
}
/**
 * An in-band stream error `{"error": {type, code, param, message}}` that is neither an overloaded model nor a content
 * filter (`type` `server_error` or `api_error`; `code` such as `upstream_error`, `e2ee_attestation_stale`).
 * `transient`: an outage (`server_error`, `upstream_error`) that a fresh request may not meet; such a stream is
 * requested again only while nothing of it reached the caller. `partial`: the content that had arrived.
 */
export class InBandStreamError extends StreamError {
  override name = "InBandStreamError";
  readonly type?: string;
  readonly param?: string;
  readonly transient: boolean;
  readonly partial?: string;
  constructor(message: string, init: ServiceErrorInit & { type?: string; param?: string; transient: boolean; partial?: string }) {
    super(message, init);
    this.type = init.type;
    this.param = init.param;
    this.transient = init.transient;
    this.partial = init.partial;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), type: this.type, param: this.param, transient: this.transient };
  }
}
/** A 200 whose body breaks the contract (e.g. no `choices`, invalid JSON). The body is kept. */
export class ResponseFormatError extends ServiceError {
  override name = "ResponseFormatError";
}
/**
 * A body past a size cap: a JSON response over `maxResponseBytes`, or one stream event over `maxEventBytes`.
 * The read stops there (the connection is dropped); raise the option named in the message if the answer is
 * legitimately that large.
 */
export class ResponseTooLargeError extends ServiceError {
  override name = "ResponseTooLargeError";
  /** the option that set the cap */
  readonly option: "maxResponseBytes" | "maxEventBytes";
  /** the cap, in bytes */
  readonly limit: number;
  constructor(message: string, init: ServiceErrorInit & { option: "maxResponseBytes" | "maxEventBytes"; limit: number }) {
    super(message, init);
    this.option = init.option;
    this.limit = init.limit;
  }
}
/**
 * A JSON request body over the service's limit (over 35 MB: its `413 PAYLOAD_TOO_LARGE`, which no retry cures): the
 * service's 413 (`status` 413), or the client's refusal before sending a JSON body over `maxRequestBytes` (no
 * `status`; `bytes` and `limit` say by how much; nothing was sent and nothing paid). Send large images, audio or
 * files by URL, or split the request.
 */
export class PayloadTooLargeError extends ServiceError {
  override name = "PayloadTooLargeError";
  /** the body's UTF-8 size, when the client measured it before sending */
  readonly bytes?: number;
  /** the `maxRequestBytes` the client held the body to */
  readonly limit?: number;
  constructor(message: string, init: ServiceErrorInit & { bytes?: number; limit?: number } = {}) {
    super(message, init);
    this.bytes = init.bytes;
    this.limit = init.limit;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), bytes: this.bytes, limit: this.limit };
  }
}
/**
 * A redirect this client will not follow: a request carrying credentials (API key, wallet sign-in, payment)
 * sent to another origin, too many hops, or `redirect: "error"`. Nothing was sent to the redirect's target.
 */
export class RedirectError extends ServiceError {
  override name = "RedirectError";
  /** the origin the service pointed to (never its path or query, which may carry tokens) */
  readonly targetOrigin?: string;
  constructor(message: string, init: ServiceErrorInit & { targetOrigin?: string } = {}) {
    super(message, init);
    this.targetOrigin = init.targetOrigin;
  }
}
/** A crypto RPC network slug the service does not list. */
export class UnsupportedNetworkError extends ServiceError {
  override name = "UnsupportedNetworkError";
  readonly network: string;
  readonly validNetworks?: string[];
  constructor(message: string, init: ServiceErrorInit & { network: string; validNetworks?: string[] }) {
    super(message, init);
    this.network = init.network;
    this.validNetworks = init.validNetworks;
  }
}
/** A payment the owner's PaymentPolicy does not allow. Nothing was signed. */
export class PaymentPolicyError extends ServiceError {
  override name = "PaymentPolicyError";
  readonly rule: string;
  constructor(message: string, init: ServiceErrorInit & { rule: string }) {
    super(message, init);
    this.rule = init.rule;
  }
}
/**
 * A spend budget (`SpendBudget`) cannot fit a request's worst-case cost: nothing was sent. The figures are the
 * budget's as the refusal saw them (a fleet's, with a store).
 */
export class BudgetExceededError extends ServiceError {
  override name = "BudgetExceededError";
  /** the budget's name */
  readonly budget: string;
  readonly spentUsd: number;
  readonly reservedUsd: number;
  readonly limitUsd: number;
  /** the request's worst-case estimate (Infinity: it could not be priced) */
  readonly estimateUsd: number;
  constructor(
    message: string,
    init: ServiceErrorInit & { budget: string; spentUsd: number; reservedUsd: number; limitUsd: number; estimateUsd: number },
  ) {
    super(message, init);
    this.budget = init.budget;
    this.spentUsd = init.spentUsd;
    this.reservedUsd = init.reservedUsd;
    this.limitUsd = init.limitUsd;
    this.estimateUsd = init.estimateUsd;
  }

  override toJSON(): Record<string, unknown> {
    return {
      ...super.toJSON(),
      budget: this.budget,
      spentUsd: this.spentUsd,
      reservedUsd: this.reservedUsd,
      limitUsd: this.limitUsd,
      estimateUsd: this.estimateUsd,
    };
  }
}
/** A payment was attempted and failed (settlement refused, or its outcome is unknown). */
export class PaymentFailedError extends ServiceError {
  override name = "PaymentFailedError";
}
/**
 * The shared payment store (budgets and payee pins, e.g. a `RedisStore`) could not be used: unreachable, no
 * answer in time, a Redis error, or a budget reservation whose lease ran out before the payment was committed.
 * Payments fail closed: nothing was signed, or what was signed was never sent. Retry once the store is back.
 */
export class StoreUnavailableError extends ServiceError {
  override name = "StoreUnavailableError";
  /** the store method that failed: `reserveSpend`, `commitSpend`, … */
  readonly operation: string;
  constructor(message: string, init: ServiceErrorInit & { operation: string }) {
    super(message, init);
    this.operation = init.operation;
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), operation: this.operation };
  }
}

/**
 * The model is overloaded: a 429 with `Retry-After` ("The model is currently overloaded…"), or an in-band stream
 * error `{code: "model_overloaded", retry_after}`. The stack retries it within `maxRetries` while nothing has been
 * handed to the caller; it surfaces once output has started (a stream cut mid-answer) or retries are spent.
 */
export class ModelOverloadedError extends RateLimitError {
  override name = "ModelOverloadedError";
  /** how long the service asked to wait, in ms (`Retry-After` / `retry_after`) */
  readonly retryAfterMs?: number;
  constructor(message: string, init: ServiceErrorInit & { resetAt?: Date; retryAfterMs?: number } = {}) {
    super(message, init);
    this.retryAfterMs = init.retryAfterMs;
  }
}
/**
 * The model (or its provider) refused or cut the answer: `finish_reason: "content_filter"` on a 200, or an in-band
 * stream error `type: "content_filter_error"` (`code: "content_blocked_by_provider"`). Not retried. `partial` holds
 * what content had arrived before the cut, if any.
 */
export class ContentFilterError extends ServiceError {
  override name = "ContentFilterError";
  readonly partial?: string;
  constructor(message: string, init: ServiceErrorInit & { partial?: string } = {}) {
    super(message, init);
    this.partial = init.partial;
  }
}
/** 422: the prompt violates a content policy. `suggestedPrompt`: the service's safer prompt, when it offers one. */
export class ContentPolicyError extends ServiceError {
  override name = "ContentPolicyError";
  readonly suggestedPrompt?: string;
  constructor(message: string, init: ServiceErrorInit & { suggestedPrompt?: string } = {}) {
    super(message, init);
    this.suggestedPrompt = init.suggestedPrompt;
  }
}
/**
 * A top-up the service refused, with its code (`INVALID_PAYMENT`, `AMOUNT_TOO_LOW`, `SETTLEMENT_FAILED`, …: on the
 * top-up route the code is in `error`). `fundsMoved` is false when the service says no funds moved (a 400, or
 * `402 SETTLEMENT_FAILED`): then a new payment is safe within the caps.
 */
export class TopUpRejectedError extends PaymentFailedError {
  override name = "TopUpRejectedError";
  readonly fundsMoved: false;
  constructor(message: string, init: ServiceErrorInit & { code: string }) {
    super(message, init);
    this.fundsMoved = false;
  }
}
/** `503 X402_NOT_CONFIGURED`: the service takes no payments for now. Nothing was signed, or what was signed was not taken. */
export class PaymentsUnavailableError extends PaymentFailedError {
  override name = "PaymentsUnavailableError";
}
/**
 * A 402 that a top-up would not cure, so nothing was paid: the wallet's credit is already at or above the minimum,
 * or the wallet is linked to an account whose staking-token credit is billed first (`diemBalanceUsd`).
 */
export class PaymentNotCurableError extends PaymentFailedError {
  override name = "PaymentNotCurableError";
  /** `linked_account`: a linked account is billed first; `credit_sufficient`: credit is there, the 402 is for another reason */
  readonly reason: "linked_account" | "credit_sufficient";
  /** the wallet's credit in USD and the linked account's, from `GET /x402/balance` */
  readonly balanceUsd?: number;
  readonly diemBalanceUsd?: number;
  constructor(
    message: string,
    init: ServiceErrorInit & { reason: "linked_account" | "credit_sufficient"; balanceUsd?: number; diemBalanceUsd?: number },
  ) {
    super(message, init);
    this.reason = init.reason;
    this.balanceUsd = init.balanceUsd;
    this.diemBalanceUsd = init.diemBalanceUsd;
  }
}

/** The caller's abort as a typed error: a deadline (`AbortSignal.timeout`) is a TimeoutError, else an AbortError. */
export function abortErrorOf(reason: unknown): ServiceError {
  if (reason instanceof ServiceError) return reason;
  if ((reason as { name?: string } | undefined)?.name === "TimeoutError") {
    return new TimeoutError("no response within the caller's timeout", { cause: reason });
  }
  return new AbortError("request aborted", { cause: reason });
}

/** The service's abuse-block message (spec part 7). */
