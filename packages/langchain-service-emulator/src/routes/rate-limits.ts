/**
 * GET /api_keys/rate_limits (the caller's balances and limits, the canonical source of them) and the log of
 * exceeded limits, served at both `/api_keys/rate_limit_logs` (spec 4.4) and `/api_keys/rate_limits/log`
 * (the published description); live, the log takes an ADMIN key. Shapes follow openapi-subset.yaml.
 */
import { accountIdentity } from "../auth.js";
import { EMBEDDING_MODELS, MODELS } from "../models/catalog.js";
import { RateLimiter } from "../rate-limits.js";
import type { Account, Caller, EmulatorContext, RouteSpec, RouteHandler } from "../types.js";
import { EmulatorHttpError, isLiveMode } from "../types.js";

/** The API tier id of an account (`apiTier.id`, and `rateLimitTier` in the log). */
export function apiTierId(account: Account): string {
  return account.partner ? "partner" : "paid";
}

function accountOf(caller: Caller): Account {
  // auth "required" never lets an anonymous caller through; this guards a misconfigured route
  if (caller.kind === "anonymous") throw new EmulatorHttpError(401, { error: "Authentication failed" });
  return caller.account;
}

function limiterOf(ctx: EmulatorContext): RateLimiter {
  return ctx.rateLimiter ?? new RateLimiter(ctx.options.rateLimits, ctx.now, isLiveMode(ctx.options));
}

function nextUtcMidnight(now: number): string {
  const d = new Date(now);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)).toISOString();
}

const rateLimitsHandler: RouteHandler = (_req, ctx, caller) => {
  const account = accountOf(caller);
  const limiter = limiterOf(ctx);
  return {
    status: 200,
    body: {
      data: {
        accessPermitted: ctx.ledger.available(account) > 0,
        apiTier: { id: apiTierId(account), isCharged: true },
        balances: { USD: account.usd, DIEM: account.diem },
        keyExpiration: null,
        nextEpochBegins: nextUtcMidnight(ctx.now()),
        rateLimits: [
          ...MODELS.map((model) => {
            const limits = limiter.limitsFor(model.tier, account.partner);
            return {
              apiModelId: model.id,
              rateLimits: [
                { type: "RPM", amount: limits.requests },
                { type: "TPM", amount: limits.tokens },
              ],
            };
          }),
          // embedding models: requests per minute only (spec part 8 publishes no token limit for them)
          ...EMBEDDING_MODELS.map((model) => ({
            apiModelId: model.id,
            rateLimits: [{ type: "RPM", amount: limiter.limitsFor("embedding", account.partner).requests }],
          })),
        ],
      },
    },
  };
};

const rateLimitLogHandler: RouteHandler = (_req, ctx, caller) => {
  const account = accountOf(caller);
  // live: the log is an ADMIN key's (an inference key or a wallet is refused), as /billing/* is
  if (isLiveMode(ctx.options)) {
    if (caller.kind !== "apiKey") throw new EmulatorHttpError(401, { error: "Authentication failed" });
    if (account.admin === false) throw new EmulatorHttpError(401, { error: "Admin API key required" });
  }
  return { status: 200, body: { object: "list", data: limiterOf(ctx).logFor(accountIdentity(account)) } };
};

export const rateLimitRoutes = {
  rateLimits: { auth: "required", handler: rateLimitsHandler },
  rateLimitLogs: { auth: "required", handler: rateLimitLogHandler },
  rateLimitLog: { auth: "required", handler: rateLimitLogHandler },
} satisfies Record<string, RouteSpec>;
