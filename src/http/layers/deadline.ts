/**
 * One deadline for a whole call (`totalTimeout`): every attempt, the retries' and pacing waits, payment, and the
 * body read to its end; body-guard.ts keeps the deadline and hands it on to the body limits.
 */
import { ConfigurationError } from "../errors.js";
import { checkMs } from "../options.js";
import { deadlineLayer } from "../body-guard.js";
import type { FetchLayer, FetchLike } from "../types.js";

export interface DeadlineLayerOptions {
  /** ms for a whole call, body included (default: none) */
  totalTimeout?: number;
}

/** The stack's deadline in ms (checked: a ConfigurationError naming the option); undefined: none. */
export function totalTimeoutOf(options: DeadlineLayerOptions): number | undefined {
  if (options.totalTimeout !== undefined) checkMs(options.totalTimeout, "totalTimeout", true, ConfigurationError);
  return options.totalTimeout;
}

/** The layer, carrying the deadline in force (`totalTimeout`). */
export function deadline(options: DeadlineLayerOptions): FetchLayer & { totalTimeout: number | undefined } {
  const totalTimeout = totalTimeoutOf(options);
  return Object.assign((next: FetchLike) => deadlineLayer(next, totalTimeout), { totalTimeout });
}
