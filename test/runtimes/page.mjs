/**
 * The scenario in a browser page (bundled by esbuild for the browser, loaded by headless Chromium). The page's
 * wallet is an injected EIP-1193 provider, as a browser wallet extension gives one: `window.ethereum`, here a small
 * object over test keys held by viem's local accounts (the scenario never sees a key, it asks the provider).
 */
import { runScenario } from "./scenario.mjs";
import { injectedProvider } from "./eip1193.mjs";

globalThis.runScenarioInPage = async (config, keys) => {
  const lines = [];
  const ethereum = injectedProvider(keys, config.chain.chainId);
  globalThis.ethereum = ethereum;
  await runScenario({ ...config, evmProvider: ethereum }, (line) => lines.push(line), async () => ({ entry: "langchain-service", module: await import("langchain-service") }));
  return lines;
};
