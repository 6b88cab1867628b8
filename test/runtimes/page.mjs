/**
 * The scenario in a browser page (bundled by esbuild for the browser, loaded by headless Chromium). The page's
 * wallet is an injected EIP-1193 provider, as a browser wallet extension gives one: `window.ethereum`, here a small
 * object over test keys held by viem's local accounts; the scenario wraps it with `EvmWallet.fromEip1193` and never
 * sees a key.
 */
import { runScenario } from "./scenario.mjs";
import { injectedProvider } from "./eip1193.mjs";

globalThis.runScenarioInPage = async (config, keys) => {
  const lines = [];
  const ethereum = injectedProvider(keys, config.chain.chainId);
  globalThis.ethereum = ethereum;
  const entries = {
    "langchain-service": () => import("langchain-service"),
    "langchain-service/evm": () => import("langchain-service/evm"),
    "langchain-service/solana": () => import("langchain-service/solana"),
  };
  await runScenario({ ...config, evmProvider: ethereum }, (line) => lines.push(line), entries);
  return lines;
};
