/**
 * Requests in flight as the service allows them: a wallet's 5, crypto RPC's one at a time per caller (and a
 * coalesced batch of crypto RPC calls), queued here instead of drawing 429s (concurrency.ts).
 */
import { brandNames } from "../config.js";
import { checkGroup, delay, fn, positiveInt } from "../options.js";
import { concurrencyLayer, type ConcurrencyOptions } from "../concurrency.js";
import type { FetchLayer } from "../types.js";
import type { LayerContext } from "./context.js";

export interface ConcurrencyLayerOptions {
  /** `false` turns the queue off */
  concurrency?: Partial<ConcurrencyOptions> | false;
}

/** undefined: off, or nobody's credentials to count */
export function concurrency(options: ConcurrencyLayerOptions, ctx: LayerContext): FetchLayer | undefined {
  checkGroup(
    options.concurrency,
    "concurrency",
    {
      perWallet: positiveInt,
      cryptoRpc: positiveInt,
      cryptoRpcBatchStallMs: delay,
      cryptoRpcBatchMaxCount: positiveInt,
      cryptoRpcItemCredits: fn,
    },
    true,
  );
  if (options.concurrency === false || !ctx.auth) return undefined;
  const wallet = ctx.auth.kind === "wallet" || ctx.identity.startsWith("wallet:");
  const names = brandNames(ctx.brand);
  const rpcCost = { creditsHeader: names.rpcCreditsHeader, costUsdHeader: names.rpcCostUsdHeader };
  const shared = ctx.limitStore && { store: ctx.limitStore, label: ctx.brand };
  return concurrencyLayer(ctx.origin, ctx.identity, wallet, options.concurrency || {}, shared, rpcCost, ctx.service);
}
