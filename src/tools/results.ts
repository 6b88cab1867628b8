/**
 * What every agent tool of the package (crypto, web, image, speech) hands back: the model's own mistakes as
 * `{"error": {code, message}}` text it can act on, the system's failures thrown to the caller.
 */
import { BadRequestError, ContentPolicyError, ValidationError } from "../http/errors.js";

/** A mistake in the model's arguments: reported to the model, never thrown out of the tool. */
export class ToolInputError extends Error {
  override name = "ToolInputError";
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** content for the model, artifact for the caller */
export type ToolResult = [string, unknown];

export function errorContent(code: string, message: string, extra: Record<string, unknown> = {}): ToolResult {
  const error = { code, message, ...extra };
  return [JSON.stringify({ error }), { error }];
}

/**
 * Runs a tool body: a refused argument (ToolInputError, ValidationError) or a 400 from the service (the request
 * itself was wrong) goes back to the model as `{error}` text, as does what `modelsMistake` recognizes (a tool's
 * own cases); the rest (auth, payment, rate limits after retries, network, 5xx, an abort) is thrown.
 */
export async function guard(
  body: () => Promise<ToolResult>,
  modelsMistake?: (err: unknown) => ToolResult | undefined,
): Promise<ToolResult> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof ToolInputError) return errorContent(err.code, err.message);
    const own = modelsMistake?.(err);
    if (own) return own;
    if (err instanceof ValidationError) return errorContent("INVALID_PARAMS", err.message);
    if (err instanceof BadRequestError)
      return errorContent("BAD_REQUEST", err.message, err.details === undefined ? {} : { details: err.details });
    throw err;
  }
}

/**
 * A content-policy refusal (a 422, or a picture withheld with `x-<brand>-is-content-violation: true`) as text the
 * model can act on: the prompt must change; nothing was made. Other errors: undefined.
 */
export function policyRefusal(err: unknown): ToolResult | undefined {
  if (!(err instanceof ContentPolicyError)) return undefined;
  return errorContent(
    "CONTENT_POLICY",
    "the service refused this request under its content policy; nothing was made. Change the prompt (what it shows, not how it is worded) and try again",
    {
      ...(err.suggestedPrompt ? { suggestedPrompt: err.suggestedPrompt } : {}),
    },
  );
}
