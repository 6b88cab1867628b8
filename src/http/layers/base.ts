/**
 * The innermost layer: the fetch that sends (the `fetch` option, else the default base: undici on Node, the
 * runtime's fetch elsewhere, picked by the `node` export condition through `#base`: base.node.ts / base.ts).
 */
import { ConfigurationError } from "../errors.js";
import { describe } from "../options.js";
import { defaultFetch } from "#base";
import type { FetchLike } from "../types.js";

export interface BaseLayerOptions {
  /** the underlying fetch (default: `defaultFetch`) */
  fetch?: FetchLike;
}

/** A base takes no `next`: it is where the list ends. */
export function base(options: BaseLayerOptions): () => FetchLike {
  if (options.fetch !== undefined && typeof options.fetch !== "function")
    throw new ConfigurationError(`fetch must be a function (got ${describe(options.fetch)})`);
  const send = options.fetch ?? defaultFetch;
  return () => send;
}
