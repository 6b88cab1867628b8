/**
 * An error answer of the service as its typed error (./errors.ts): the status, the body's code and message, and
 * the parsed headers (a rate limit's reset instant). Above both the errors and the header parsing.
 */
import { rateLimitResetAtMs } from "./headers.js";
import { signInAdvice } from "./sign-in-refusals.js";
import type { ServiceResponseHeaders } from "./header-types.js";
import {
  AbuseBlockError,
  AuthenticationError,
  BadRequestError,
  CharacterNotFoundError,
  ContentPolicyError,
  GatewayTimeoutError,
  InsufficientBalanceError,
  ModelNotFoundError,
  NotFoundError,
  PayloadTooLargeError,
  PaymentRequiredError,
  PermissionDeniedError,
  ProOnlyModelError,
  RateLimitError,
  ServerError,
  type ServiceError,
  UnexpectedStatusError,
  ModelOverloadedError,
} from "./errors.js";
import {
  ModelAccessDeniedError,
  ModelOfflineError,
  UnsupportedParameterError,
  modelAccessReasonOf,
  saysModelOffline,
  unsupportedParameterOf,
} from "./model-errors.js";

export const ABUSE_BLOCK_MESSAGE = "Too many failed attempts (> 20) resulting in a non-success status code. Please wait 30s and try again.";

/**
 * The longest message kept from a body (the whole body stays on the error): the patterns read over it are linear
 * in it at best, and `<field> is not supported by this model` backtracks at every word boundary (a 40 KB message of
 * `a.a.a.` took 4 s).
 */
const MAX_MESSAGE = 1_000;

function bodyMessage(body: unknown): string | undefined {
  const message = fullMessage(body);
  return message !== undefined && message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message;
}

function fullMessage(body: unknown): string | undefined {
  if (typeof body === "string") return body.trim().slice(0, 500) || undefined;
  if (!body || typeof body !== "object") return undefined;
  const b = body as Record<string, unknown>;
  const err = b.error;
  // `message`, or the crypto RPC proxy's `customMessage` (which cap tripped), says more than `error`
  const more = typeof b.message === "string" ? b.message : typeof b.customMessage === "string" ? b.customMessage : undefined;
  if (typeof err === "string") return more !== undefined && more !== err ? `${err}: ${more}` : err;
  if (err && typeof err === "object" && typeof (err as { message?: unknown }).message === "string") {
    return (err as { message: string }).message;
  }
  if (typeof b.message === "string") return b.message;
  return undefined;
}

function bodyCode(body: unknown): string | undefined {
  if (!body || typeof body !== "object") return undefined;
  const b = body as Record<string, unknown>;
  if (typeof b.code === "string") return b.code;
  const err = b.error;
  if (err && typeof err === "object" && typeof (err as { code?: unknown }).code === "string") {
    return (err as { code: string }).code;
  }
  if (typeof err === "string" && /^[A-Z0-9_]+$/.test(err)) return err;
  return undefined;
}

/** `request_id` of a body (the live service's upstream rejections carry one): the id to quote, before any header's. */
function bodyRequestId(body: unknown): string | undefined {
  if (!body || typeof body !== "object") return undefined;
  const id = (body as { request_id?: unknown }).request_id;
  return typeof id === "string" && id !== "" ? id : undefined;
}

/** The 402 of an x402 wallet (discovery, or `PAYMENT_REQUIRED`): anything else is an account's plain 402. */
function isX402Body(body: unknown, code: string | undefined, headers: ServiceResponseHeaders): boolean {
  const b = (body && typeof body === "object" ? body : {}) as Record<string, unknown>;
  return (
    code === "PAYMENT_REQUIRED" ||
    b.x402Version !== undefined ||
    Array.isArray(b.accepts) ||
    b.topUpInstructions !== undefined ||
    headers.paymentRequired !== undefined
  );
}

/** What the stack knows of the request beyond its answer. */
export interface ErrorContext {
  /** a refused wallet sign-in was signed again once and re-sent, and this is the answer to the re-send */
  signInResent?: boolean;
}

/** Builds the typed error for a non-success response whose body has been read (JSON or text). */
export function errorFromResponse(
  status: number,
  body: unknown,
  headers: ServiceResponseHeaders,
  context: ErrorContext = {},
): ServiceError {
  const code = bodyCode(body);
  const text = bodyMessage(body);
  // which id to quote to support: the body's `request_id`, else `X-Request-ID`, else CF-RAY (headers.requestId)
  const base = { status, body, headers, code, requestId: bodyRequestId(body) ?? headers.requestId };
  const msg = (fallback: string) => `${status} ${text ?? fallback}`;
  if (text?.includes("Too many failed attempts")) {
    return new AbuseBlockError(msg(ABUSE_BLOCK_MESSAGE), { ...base, source: "service", retryAfterMs: 30_000 });
  }
  switch (status) {
    case 400: {
      const b = body as Record<string, unknown> | undefined;
      // a parameter this model refuses (`stop` on an OpenAI reasoning model): the error names the field
      const field = unsupportedParameterOf(body, text);
      if (field)
        return new UnsupportedParameterError(`${msg("Bad request")} (${field} is not supported by this model)`, {
          ...base,
          details: b?.details ?? b?.issues,
          field,
        });
      return new BadRequestError(msg("Bad request"), { ...base, details: b?.details ?? b?.issues });
    }
    case 401: {
      if (/\bpro\b/i.test(text ?? "")) return new ProOnlyModelError(msg("This model is available to Pro users only"), base);
      // a refused wallet sign-in: its code, and what to do about it
      const advice = signInAdvice(code, context.signInResent === true);
      return new AuthenticationError(msg("Authentication failed") + (advice ? ` (${code}: ${advice})` : ""), base);
    }
    case 402: {
      const b = (body ?? {}) as Record<string, unknown>;
      // the spec's INSUFFICIENT_BALANCE, or the live service's plain 402 of an account ("Insufficient USD or Diem
      // balance…", a per-key spend limit): no code, no x402 fields
      if (code === "INSUFFICIENT_BALANCE" || (code === undefined && !isX402Body(body, code, headers))) {
        return new InsufficientBalanceError(`${msg("Insufficient balance")} (API-key account; add credit or use a wallet)`, base);
      }
      const accepts = Array.isArray(b.accepts) ? b.accepts : headers.paymentRequired?.accepts;
      if (code === "PAYMENT_REQUIRED" || b.topUpInstructions) {
        return new PaymentRequiredError(msg("Payment required: wallet credit too low"), {
          ...base,
          variant: "insufficient_credit",
          accepts,
          topUpInstructions: b.topUpInstructions as Record<string, unknown> | undefined,
        });
      }
      return new PaymentRequiredError(msg("Payment required: sign in with a wallet or pass an API key"), {
        ...base,
        variant: "discovery",
        accepts,
      });
    }
    case 403: {
      // the model's region restrictions or the key's privacy setting
      const reason = modelAccessReasonOf(text);
      if (reason)
        return new ModelAccessDeniedError(
          `${msg("Forbidden")} (${reason === "region" ? "the model is not served in this region" : "the key's privacy setting forbids this model"}; not retried)`,
          { ...base, reason },
        );
      return new PermissionDeniedError(msg("Forbidden"), base);
    }
    case 404:
      if (/\bcharacter(_slug)?\b/i.test(text ?? "")) return new CharacterNotFoundError(msg("Character not found"), base);
      if (/\bmodel\b/i.test(text ?? "")) return new ModelNotFoundError(msg("Model not found"), base);
      return new NotFoundError(msg("Not found"), base);
    case 413:
      // "Request body exceeds the maximum allowed size." (JSON over 35 MB) or a multipart file over 25 MB
      return new PayloadTooLargeError(msg("Request body exceeds the maximum allowed size"), base);
    case 422: {
      const suggested = (body as { suggested_prompt?: unknown } | undefined)?.suggested_prompt;
      return new ContentPolicyError(msg("The prompt violates the content policy"), {
        ...base,
        suggestedPrompt: typeof suggested === "string" ? suggested : undefined,
      });
    }
    case 429: {
      const reset = rateLimitResetAtMs(headers);
      const resetAt = reset !== undefined ? new Date(reset) : undefined;
      if (/overloaded/i.test(text ?? "")) {
        const after = headers.retryAfterAtMs;
        return new ModelOverloadedError(msg("The model is currently overloaded"), {
          ...base,
          resetAt,
          retryAfterMs: after === undefined ? undefined : Math.max(0, after - Date.now()),
        });
      }
      return new RateLimitError(msg("Rate limit exceeded"), { ...base, resetAt });
    }
    case 504:
      return new GatewayTimeoutError(
        `${msg("Gateway timeout")} (the request took too long and was timed out; for long-running inference requests use the streaming API: stream=true)`,
        base,
      );
    default:
      if (saysModelOffline(status, text)) return new ModelOfflineError(`${msg("Model offline")} (not retried: use another model)`, base);
      if (status >= 500) return new ServerError(msg("Server error"), base);
      return new UnexpectedStatusError(msg("Unexpected status"), base);
  }
}
