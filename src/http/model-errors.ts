/**
 * Typed errors for what a model's `/models` record (or the service's answer about one model) says it cannot take
 * today: offline (503), out of the caller's region or key privacy setting (403), a request parameter the model
 * refuses (400, e.g. `stop` on an OpenAI reasoning model), and a picture the service withheld for its content
 * policy (a 200 with `x-<brand>-is-content-violation: true`). Beside ./errors.ts, which they extend.
 */
import { BadRequestError, ContentPolicyError, PermissionDeniedError, ServerError, type ServiceErrorInit } from "./errors.js";

/**
 * The model is offline: its record says `offline: true` (refused before sending: no `status`), or the service
 * answered 503 saying so. Not retried: the model stays offline for longer than a backoff series.
 */
export class ModelOfflineError extends ServerError {
  override name = "ModelOfflineError";
  readonly model?: string;
  constructor(message: string, init: ServiceErrorInit & { model?: string } = {}) {
    super(message, init);
    this.model = init.model;
  }
}

/** Why a 403 refused a model: its `regionRestrictions`, or the key's privacy setting. */
export type ModelAccessReason = "region" | "privacy";

/**
 * 403 for one model: outside the countries of its `regionRestrictions` (`reason: "region"`), or a key whose
 * privacy setting forbids it (`"privacy"`). Never retried.
 */
export class ModelAccessDeniedError extends PermissionDeniedError {
  override name = "ModelAccessDeniedError";
  readonly reason: ModelAccessReason;
  readonly model?: string;
  constructor(message: string, init: ServiceErrorInit & { reason: ModelAccessReason; model?: string }) {
    super(message, init);
    this.reason = init.reason;
    this.model = init.model;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), reason: this.reason, model: this.model };
  }
}

/**
 * The service's 400 for a request parameter this model refuses (`"<field> is not supported by this model"`:
 * `stop`, `seed`, `n`, penalties on OpenAI reasoning models; a `reasoning_effort` outside the model's options).
 */
export class UnsupportedParameterError extends BadRequestError {
  override name = "UnsupportedParameterError";
  /** the refused request field (`stop`, `seed`, `n`, `presence_penalty`, `reasoning_effort`, …) */
  readonly field: string;
  constructor(message: string, init: ServiceErrorInit & { details?: unknown; field: string }) {
    super(message, init);
    this.field = init.field;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), field: this.field };
  }
}

/**
 * A picture the service withheld for its content policy: `/image/generate` and `/images/generations` answer 200
 * with `x-<brand>-is-content-violation: true` instead of a 422. What came with it is not the picture asked for.
 */
export class ContentViolationError extends ContentPolicyError {
  override name = "ContentViolationError";
}

/** Request fields the service refuses per model with "<field> is not supported by this model". */
const PARAMETER_FIELDS = new Set([
  "stop",
  "seed",
  "n",
  "presence_penalty",
  "frequency_penalty",
  "repetition_penalty",
  "reasoning_effort",
  "reasoning.effort",
]);

/** The field a 400 body refuses as "not supported by this model" (its `issues[]`, else its message); undefined when none. */
export function unsupportedParameterOf(body: unknown, text: string | undefined): string | undefined {
  const issues = (body as { issues?: unknown } | undefined)?.issues;
  if (Array.isArray(issues)) {
    for (const issue of issues as { path?: unknown; message?: unknown }[]) {
      const field = Array.isArray(issue?.path) ? issue.path.join(".") : undefined;
      if (field && PARAMETER_FIELDS.has(field) && typeof issue.message === "string" && /not supported/i.test(issue.message)) return field;
    }
  }
  const named = /\b([a-z_.]+) is not supported by this model/i.exec(text ?? "")?.[1];
  return named && PARAMETER_FIELDS.has(named) ? named : undefined;
}

/** Whether a 503's message says the model is offline (rather than busy: that one is worth a backoff). */
export function saysModelOffline(status: number, text: string | undefined): boolean {
  return status === 503 && /\boffline\b/i.test(text ?? "");
}

/** The reason a 403's message gives for refusing a model; undefined for any other 403. */
export function modelAccessReasonOf(text: string | undefined): ModelAccessReason | undefined {
  if (/\b(region|country|countries)\b/i.test(text ?? "")) return "region";
  if (/\bprivacy\b/i.test(text ?? "")) return "privacy";
  return undefined;
}
