/**
 * The payment layer's own options (`topUp`), checked when the stack is built: the x402 code itself loads on a
 * wallet stack's first request, after any error should have been raised.
 */
import { checkCount, checkGroup, checkMs, delay } from "../http/options.js";

/** A ConfigurationError naming the member of `topUp` that is wrong. */
export function checkTopUpOptions(topUp: unknown): void {
  checkGroup(
    topUp,
    "topUp",
    {
      topUpTimeoutMs: (v, p) => checkMs(v, p, true),
      maxResends: (v, p) => checkCount(v, p),
      resendDelayMs: delay,
      topUpLeaseMs: (v, p) => checkMs(v, p, true),
    },
    false,
  );
}
