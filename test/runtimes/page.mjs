/**
 * The scenario in a browser page (bundled by esbuild for the browser, loaded by headless Chromium). The page's
 * wallet is an injected EIP-1193 provider, as a browser wallet extension gives one: `window.ethereum`, here a small
 * object over test keys held by viem's local accounts (the scenario never sees a key, it asks the provider).
 */
import { privateKeyToAccount } from "viem/accounts";
import { runScenario } from "./scenario.mjs";

/** A minimal EIP-1193 provider: accounts, chain id, personal_sign and eth_signTypedData_v4 by viem local accounts. */
export function injectedProvider(keys, chainId) {
  const accounts = keys.map((k) => privateKeyToAccount(k));
  const find = (address) => {
    const account = accounts.find((a) => a.address.toLowerCase() === String(address).toLowerCase());
    if (!account) throw Object.assign(new Error(`unknown account ${address}`), { code: 4100 });
    return account;
  };
  return {
    isScenarioWallet: true,
    async request({ method, params = [] }) {
      switch (method) {
        case "eth_requestAccounts":
        case "eth_accounts":
          return accounts.map((a) => a.address);
        case "eth_chainId":
          return `0x${chainId.toString(16)}`;
        case "net_version":
          return String(chainId);
        case "personal_sign": {
          const [data, address] = params;
          return find(address).signMessage({ message: { raw: data } });
        }
        case "eth_signTypedData_v4": {
          const [address, json] = params;
          const { domain, types, primaryType, message } = typeof json === "string" ? JSON.parse(json) : json;
          const { EIP712Domain: _omit, ...rest } = types;
          return find(address).signTypedData({ domain, types: rest, primaryType, message });
        }
        default:
          throw Object.assign(new Error(`method ${method} not supported by this wallet`), { code: 4200 });
      }
    },
  };
}

globalThis.runScenarioInPage = async (config, keys) => {
  const lines = [];
  const ethereum = injectedProvider(keys, config.chain.chainId);
  globalThis.ethereum = ethereum;
  await runScenario({ ...config, evmProvider: ethereum }, (line) => lines.push(line), async () => ({ entry: "langchain-service", module: await import("langchain-service") }));
  return lines;
};
