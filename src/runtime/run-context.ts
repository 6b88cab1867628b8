/**
 * The LangChain run a call is made in, read from the async context the way LangChain's own helpers read it
 * (`dispatchCustomEvent`, LangGraph's `getConfig()`), for events raised by requests that carry no run of their own.
 * `@langchain/core/callbacks/dispatch` would install that context by importing `node:async_hooks` at load,
 * which breaks bundles for browsers and workers; here it is installed only where the runtime has
 * `AsyncLocalStorage` (Node, Bun, Deno, workerd with nodejs_compat), reached by `process.getBuiltinModule`,
 * which bundlers do not follow. Elsewhere there is no implicit run: events reach a run through the listener
 * its own requests carry.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";

type AsyncHooks = typeof import("node:async_hooks");
const hooks = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule?.(
  "node:async_hooks",
) as AsyncHooks | undefined;
// a no-op when another module (LangGraph, core's dispatch) installed it first
if (hooks?.AsyncLocalStorage) AsyncLocalStorageProviderSingleton.initializeGlobalInstance(new hooks.AsyncLocalStorage());

/** The config of the run this call is made in, if any. */
export function currentRunConfig(): RunnableConfig | undefined {
  return AsyncLocalStorageProviderSingleton.getRunnableConfig() as RunnableConfig | undefined;
}
