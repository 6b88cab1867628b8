/**
 * A minimal injected EIP-1193 wallet, as a browser extension gives one (`window.ethereum`): test keys held by viem's
 * local accounts behind `request()`; whoever holds the provider asks it to sign and never sees a key.
 */
import { privateKeyToAccount } from "viem/accounts";

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
