/**
 * The scenario in a browser page (bundled by esbuild for the browser, loaded by headless Chromium). The page's
 * wallet is an injected EIP-1193 provider, as a browser wallet extension gives one: `window.ethereum`, here a small
 * object over test keys held by viem's local accounts; the scenario wraps it with `EvmWallet.fromEip1193` and never
 * sees a key. The Solana wallet is a wallet-standard wallet the page's "extension" registers (./wallet-standard.mjs);
 * the page finds it by the Wallet Standard's app-ready handshake, as the README's example does, and the scenario
 * wraps it with `SolanaWallet.fromWalletStandard`.
 */
import { runScenario } from "./scenario.mjs";
import { injectedProvider } from "./eip1193.mjs";
import { registerSolanaWallet } from "./wallet-standard.mjs";

globalThis.runScenarioInPage = async (config, keys, solanaKey) => {
  const lines = [];
  const ethereum = injectedProvider(keys, config.chain.chainId);
  globalThis.ethereum = ethereum;
  registerSolanaWallet(solanaKey);
  const wallets = [];
  const register = (...found) => (wallets.push(...found), () => {});
  globalThis.dispatchEvent(new CustomEvent("wallet-standard:app-ready", { detail: { register } }));
  const solanaWallet = wallets.find((w) => "solana:signMessage" in w.features);
  const entries = {
    "langchain-service": () => import("langchain-service"),
    "langchain-service/evm": () => import("langchain-service/evm"),
    "langchain-service/solana": () => import("langchain-service/solana"),
  };
  await runScenario({ ...config, evmProvider: ethereum, solanaWallet }, (line) => lines.push(line), entries);
  return lines;
};
