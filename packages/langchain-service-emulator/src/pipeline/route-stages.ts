/**
 * The stages of a matched route, in order: auth, the wallet's requests in flight, the served request's latency,
 * [inference: the model, Pro-only, balance], the request and token limits, [an overloaded model], the handler.
 * Each reads what the earlier ones left on the pass (./state.ts).
 */
import { addressIdentity, authenticate as authenticateCaller, callerIdentity, publicAccountId } from "../auth.js";
import { chargedRequestIds } from "../ledger.js";
import { findModel, type EmulatedModel, type ServedModel } from "../models/catalog.js";
import { arrivalPromptTokens } from "../rate-limits.js";
import { apiTierId } from "../routes/rate-limits.js";
import { EmulatorHttpError, isLiveMode, type EmulatorResponse, type ResolvedModel, type Route } from "../types.js";
import { abuseBlockAnswer, sleep } from "./gates.js";
import { answer, decide, errorResponse, onward, type Stage, type StageContext } from "./state.js";
import { walletFlightsOf } from "./wallet-flights.js";

/** The live service's answer to an overloaded model (also its default wait: 30 s). */
export const OVERLOADED_MESSAGE = "The model is currently overloaded. Please try again later.";

function fromHttpError(err: EmulatorHttpError): EmulatorResponse {
  return { status: err.status, body: err.body, headers: err.headers };
}

/** The route the router matched, and its path parameters. */
export function bindRoute(route: Route): Stage {
  return async (c, next) => {
    const pass = c.var.pass;
    pass.route = route;
    pass.req.params = c.req.param() as Record<string, string>;
    await next();
  };
}

/**
 * A refused credential proves no identity: its failure counts against the sender's address, never against the
 * wallet or key it names (junk headers naming a victim must not get the victim blocked), and a sender blocked for
 * that is answered with the block.
 */
export const authenticate: Stage = async (c, next) => {
  const { ctx, limiter } = c.var.state;
  const pass = c.var.pass;
  try {
    pass.caller = await authenticateCaller(pass.route!, pass.req, ctx);
  } catch (err) {
    if (!(err instanceof EmulatorHttpError)) throw err;
    pass.identity = addressIdentity(pass.req);
    const senderBlockedMs = limiter.blockedFor(pass.identity);
    if (senderBlockedMs > 0) return decide(c, abuseBlockAnswer(limiter, senderBlockedMs, pass.identity), { countFailure: false });
    return decide(c, fromHttpError(err));
  }
  pass.identity = callerIdentity(pass.caller, pass.req.remoteAddress);
  pass.account = pass.caller.kind === "anonymous" ? undefined : pass.caller.account;
  await next();
};

/** A wallet's requests in flight (live: at most 5; the 6th is refused, and a refusal is not a failure). */
export const holdWalletPlace: Stage = async (c, next) => {
  const pass = c.var.pass;
  const { caller, route } = pass;
  if (caller?.kind !== "wallet" || !(route!.inference || route!.pattern.startsWith("/crypto/rpc/"))) return onward(next);
  const flights = walletFlightsOf(c.var.state);
  if (!flights) return onward(next);
  pass.onWritten = flights.take(caller.account.id);
  if (!pass.onWritten) {
    const message = `Too many concurrent requests for this wallet (at most ${flights.limit} in flight)`;
    return decide(c, errorResponse(429, message, { code: "X402_CONCURRENCY_LIMIT" }), { countFailure: false });
  }
  await next();
};

/** The fault's latency (a model's time, counted in flight), then the balances as they were before the request. */
export const admit: Stage = async (c, next) => {
  const pass = c.var.pass;
  if (pass.fault.latencyMs > 0) await sleep(pass.fault.latencyMs);
  if (pass.account) {
    const p = c.var.state.ctx.names.headerPrefix;
    pass.headers[`${p}balance-usd`] = String(pass.account.usd);
    pass.headers[`${p}balance-diem`] = String(pass.account.diem);
  }
  await next();
};

/** an API key without balance, or a wallet under the minimum credit: the 402 (spec part 7) */
function creditRefusal(c: StageContext): EmulatorResponse | undefined {
  const { ctx } = c.var.state;
  const { caller, req } = c.var.pass;
  if (caller?.kind === "apiKey" && ctx.ledger.available(caller.account) <= 0) {
    // live: a plain message without a code; seed: the spec's INSUFFICIENT_BALANCE
    if (isLiveMode(ctx.options))
      return errorResponse(402, "Insufficient USD or Diem balance to complete request. Add credits to your account.");
    return errorResponse(402, "Insufficient balance", { code: "INSUFFICIENT_BALANCE" });
  }
  if (caller?.kind === "wallet") return ctx.x402.walletRefusal(req, ctx, caller.account);
  return undefined;
}

function modelHeaders(c: StageContext, served: ServedModel): void {
  const p = c.var.state.ctx.names.headerPrefix;
  const headers = c.var.pass.headers;
  headers[`${p}model-id`] = served.id;
  headers[`${p}model-name`] = served.name;
  headers[`${p}model-router`] = served.router;
  if (served.deprecated) {
    headers[`${p}model-deprecation-warning`] = served.deprecated.warning;
    headers[`${p}model-deprecation-date`] = served.deprecated.date;
  }
}

/** The JSON body of an inference request, or a 400 explaining why not. */
function parseInferenceBody(body: Buffer): { json: Record<string, unknown> } | { error: EmulatorResponse } {
  let json: unknown;
  try {
    json = JSON.parse(body.toString("utf8"));
  } catch {
    return { error: errorResponse(400, "Invalid request body: expected JSON", { details: { _errors: ["Body is not valid JSON"] } }) };
  }
  if (!json || typeof json !== "object" || Array.isArray(json)) {
    return { error: errorResponse(400, "Invalid request body: expected a JSON object", { details: { _errors: ["Expected object"] } }) };
  }
  return { json: json as Record<string, unknown> };
}

/** The chat model a body names (live: 404 for an unknown one; seed: a 400 DetailedError), or its refusal. */
function textModelOf(c: StageContext): EmulatedModel | EmulatorResponse {
  const parsed = parseInferenceBody(c.var.pass.req.body);
  if ("error" in parsed) return parsed.error;
  const modelId = parsed.json.model;
  if (typeof modelId !== "string" || modelId === "") {
    return errorResponse(400, "Invalid request: model is required", { details: { model: { _errors: ["Required"] } } });
  }
  const textModel = findModel(modelId);
  if (textModel) {
    c.var.pass.arrivalTokens = arrivalPromptTokens(parsed.json);
    return textModel;
  }
  const id = modelId.split(":")[0];
  if (isLiveMode(c.var.state.ctx.options))
    return errorResponse(404, `Specified model not found: ${id}. See GET /models for the models available.`);
  return errorResponse(400, `Invalid request: unknown model "${id}"`, {
    details: { model: { _errors: ["Model not found; see GET /models"] } },
  });
}

/**
 * Inference routes: the model (chat's from its body; images, speech, web search and scrape find their own, or
 * have none), its headers and rate-limit bucket, Pro-only, then the caller's credit.
 */
export const inferenceModel: Stage = async (c, next) => {
  const pass = c.var.pass;
  const route = pass.route!;
  if (!route.inference) return onward(next);
  if (route.resolveModel) {
    let resolved: ResolvedModel;
    try {
      resolved = await route.resolveModel(pass.req);
    } catch (err) {
      if (!(err instanceof EmulatorHttpError)) throw err;
      return answer(c, fromHttpError(err));
    }
    pass.model = resolved.model;
    pass.bucket = resolved.bucket;
    if (pass.model) modelHeaders(c, pass.model);
  } else {
    const found = textModelOf(c);
    if ("status" in found) return answer(c, found);
    pass.model = found;
    modelHeaders(c, found);
    pass.bucket = found.tier;
  }
  if (pass.account) {
    if (pass.model?.proOnly && !pass.account.pro) return answer(c, errorResponse(401, "This model is available to Pro users only"));
    const refused = creditRefusal(c);
    if (refused) return answer(c, refused);
  }
  await next();
};

/** Request and token limits per (caller, tier); a refusal is logged for /api_keys/rate_limits/log. */
export const limitRate: Stage = async (c, next) => {
  const { ctx, limiter } = c.var.state;
  const pass = c.var.pass;
  const { account } = pass;
  if (!account) return onward(next);
  const admitted = limiter.admit(pass.identity, pass.bucket, account.partner, pass.arrivalTokens);
  Object.assign(pass.headers, admitted.headers);
  if (admitted.allowed) return onward(next);
  limiter.record(pass.identity, {
    apiKeyId: publicAccountId(account),
    modelId: pass.model?.id ?? "",
    rateLimitTier: apiTierId(account),
    rateLimitType: admitted.exceeded ?? "RPM",
    timestamp: new Date(ctx.now()).toISOString(),
  });
  answer(c, errorResponse(429, "Rate limit exceeded"));
};

/** An overloaded model (fault knob): 429 with Retry-After, after the limits counted the request. */
export const refuseOverloaded: Stage = async (c, next) => {
  const pass = c.var.pass;
  const retryAfter = pass.route!.inference ? c.var.state.faults.overloaded(pass.req.path) : undefined;
  if (retryAfter === undefined) return onward(next);
  answer(c, { ...errorResponse(429, OVERLOADED_MESSAGE), headers: { "retry-after": String(retryAfter) } });
};

/** The route itself, then what it used (tokens) and the headers that follow from it. */
export const handle: Stage = async (c) => {
  const { ctx, limiter, faults } = c.var.state;
  const pass = c.var.pass;
  const { account, caller, headers, identity, bucket, req } = pass;
  let response: EmulatorResponse;
  const charged: string[] = [];
  try {
    response = await chargedRequestIds.run(charged, () => pass.route!.handler(req, ctx, caller!));
  } catch (err) {
    if (!(err instanceof EmulatorHttpError)) throw err;
    response = fromHttpError(err);
  }
  // the id the ledger charged this request under, for the client to quote and match
  if (charged.length && !Object.keys(response.headers ?? {}).some((k) => k.toLowerCase() === "x-request-id")) {
    response = { ...response, headers: { ...response.headers, "x-request-id": charged[0]! } };
  }
  if (account) {
    const tokens = response.meta?.tokens;
    if (tokens) limiter.addTokens(identity, bucket, Math.max(0, tokens - pass.arrivalTokens));
    // A route's own 429 (the crypto RPC cap; its one-at-a-time rule, `meta.ownLimit`) carries only the headers the
    // route gives it (the cap's `X-RateLimit-Limit`, `-Remaining`, `-Reset`): no chat-limit `x-ratelimit-*` to misread.
    pass.ownLimit =
      response.status === 429 &&
      (response.meta?.ownLimit === true || Object.keys(response.headers ?? {}).some((h) => h.toLowerCase() === "x-ratelimit-limit"));
    if (pass.ownLimit) {
      for (const h of Object.keys(headers)) if (h.startsWith("x-ratelimit-")) delete headers[h];
    } else {
      Object.assign(headers, limiter.headers(identity, bucket, account.partner), limiter.budgetHeaders(identity));
    }
    if (caller?.kind === "wallet" && pass.route!.inference && response.status >= 200 && response.status < 300 && ctx.x402.balanceHeader) {
      headers["x-balance-remaining"] = account.usd.toFixed(6);
    }
  }
  answer(c, response, { cutAfter: faults.streamCutAfter(req.path), loseAnswer: faults.loseAnswer(req.path) });
};
