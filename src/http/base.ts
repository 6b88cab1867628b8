/**
 * The stack's base away from Node (workers, browsers, Deno, Bun): the runtime's own `fetch`, looked up at each
 * call so that a fetch put in place later (a test's spy, msw) is the one used. Picked by the `default` condition
 * of the package's `#base` import; on Node the `node` condition picks base.node.ts (undici) instead.
 */
import type { FetchLike } from "./types.js";

export const defaultFetch: FetchLike = (input, init) => globalThis.fetch(input, init);
