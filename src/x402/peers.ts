/**
 * The wallet face's libraries (`@x402/*`, `viem`, `siwe`, `@solana/kit`) are optional peers: an API-key user never
 * installs them. A wallet user who has not gets a `ConfigurationError` with the install line at the first use,
 * never Node's bare "Cannot find package".
 */
import { ConfigurationError } from "../http/errors.js";

export const WALLET_PEERS = {
  // as the README's install lines (viem and @solana-program/token come with @x402/evm and @x402/svm)
  evm: "@x402/core @x402/evm siwe",
  solana: "@x402/core @x402/svm @solana/kit@5",
} as const;

function missingModule(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND";
}

/** Runs a dynamic import of a wallet library; a missing package becomes a ConfigurationError saying what to install. */
export async function loadWalletPeer<T>(rail: keyof typeof WALLET_PEERS, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if (!missingModule(err)) throw err;
    throw new ConfigurationError(
      `paying or signing in with ${rail === "evm" ? "an EVM" : "a Solana"} wallet needs its optional packages: npm install ${WALLET_PEERS[rail]}`,
      { cause: err },
    );
  }
}
