/**
 * Sign-In-With-X as the service speaks it: header `SIGN-IN-WITH-X` = base64 of JSON
 * `{address, message, signature, timestamp, chainId, type?}`. EVM signs an EIP-4361 message (built by the
 * wallet with viem's `createSiweMessage`), Solana signs the Solana SIWX text with Ed25519. The domain is `signInDomain` when given (the service
 * checks it against its own hosts, not the host a request reached: a proxy or custom base URL needs it), else the
 * request URL's host with port; the URI is the request's origin (the service does not check it); nonce and `issuedAt` are fresh for every call, because the service accepts each nonce
 * once and wants `issuedAt` at most 5 minutes old: every attempt, retries included, signs anew.
 */
import { bytesToHex, randomBytes } from "../runtime/bytes.js";
import type { AuthProvider } from "../http/fetch-stack.js";
import type { ServiceClock } from "../http/clock.js";
import { defaultServiceContext } from "../http/context.js";
import { ConfigurationError } from "../http/errors.js";
import { toBase64Json } from "./encoding.js";
import { normalizeSignInDomain } from "./sign-in-domain.js";
import { BASE_CHAIN_ID, SOLANA_MAINNET, isX402Wallet, type SiwxFields, type X402Wallet } from "./wallets.js";

export const SIWX_HEADER = "SIGN-IN-WITH-X";
export const SIWX_LEGACY_HEADER = "X-Sign-In-With-X";
export const SIWX_STATEMENT = "Sign in with your wallet to use the API";
/** lifetime of one signed header; the service also requires `issuedAt` within 5 minutes */
export const SIWX_TTL_MS = 5 * 60_000;

export type { SiwxFields };

/** The decoded header. */
export interface SiwxPayload {
  address: string;
  message: string;
  signature: string;
  timestamp: number;
  chainId: number | string;
  type?: "ed25519" | "eip191";
}

export interface SiwxOptions {
  /** ms clock (tests) */
  now?: number;
  /** override the nonce (tests); otherwise 16 random hex digits */
  nonce?: string;
  statement?: string;
  ttlMs?: number;
  /** the domain to sign in to (the service's host, e.g. behind a proxy); default: the request URL's host */
  signInDomain?: string;
}

/** 16 hex digits: SIWE wants at least 8 alphanumerics, the service's docs show 16 hex. */
export function siwxNonce(): string {
  return bytesToHex(randomBytes(8));
}

/** Solana SIWX text (CAIP-122 form, as `@x402/extensions` formats it). */
export function formatSolanaSiwxMessage(f: SiwxFields): string {
  const lines = [`${f.domain} wants you to sign in with your Solana account:`, f.address, ""];
  if (f.statement) lines.push(f.statement, "");
  const chainRef = String(f.chainId).replace(/^solana:/, "");
  lines.push(
    `URI: ${f.uri}`,
    "Version: 1",
    `Chain ID: ${chainRef}`,
    `Nonce: ${f.nonce}`,
    `Issued At: ${f.issuedAt}`,
    `Expiration Time: ${f.expirationTime}`,
  );
  return lines.join("\n");
}

function requestOrigin(url: string | URL): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigurationError(`SIWX: not a URL: ${JSON.stringify(String(url))}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new ConfigurationError(`SIWX: the URL must be http(s): ${parsed.origin}`);
  }
  return parsed;
}

/** Signs a fresh SIWX payload for a request to `url`. */
export async function createSiwxPayload(wallet: X402Wallet, url: string | URL, options: SiwxOptions = {}): Promise<SiwxPayload> {
  if (!isX402Wallet(wallet)) throw new ConfigurationError("SIWX: expected an EvmWallet or a SolanaWallet");
  const target = requestOrigin(url);
  const now = options.now ?? Date.now();
  const fields: SiwxFields = {
    domain: options.signInDomain !== undefined ? normalizeSignInDomain(options.signInDomain) : target.host,
    uri: target.origin,
    address: wallet.address,
    nonce: options.nonce ?? siwxNonce(),
    issuedAt: new Date(now).toISOString(),
    expirationTime: new Date(now + (options.ttlMs ?? SIWX_TTL_MS)).toISOString(),
    statement: options.statement ?? SIWX_STATEMENT,
    chainId: wallet.kind === "evm" ? BASE_CHAIN_ID : SOLANA_MAINNET,
  };
  const message = await wallet.signInMessage(fields);
  const signature = await wallet.signMessage(message);
  return wallet.kind === "evm"
    ? { address: wallet.address, message, signature, timestamp: now, chainId: BASE_CHAIN_ID }
    : { address: wallet.address, message, signature, timestamp: now, chainId: SOLANA_MAINNET, type: "ed25519" };
}

/** The `SIGN-IN-WITH-X` header value for one request to `url`. Single use: sign one per request. */
export async function createSiwxHeader(wallet: X402Wallet, url: string | URL, options: SiwxOptions = {}): Promise<string> {
  return toBase64Json(await createSiwxPayload(wallet, url, options));
}

/**
 * An `AuthProvider` for the fetch stack: a freshly signed SIWX header on every attempt, `issuedAt` and
 * `expirationTime` on the service's clock (this machine's, corrected by the service's `Date` headers).
 */
export function createWalletAuth(
  wallet: X402Wallet,
  options: Omit<SiwxOptions, "now" | "nonce"> & { clock?: ServiceClock } = {},
): AuthProvider {
  if (!isX402Wallet(wallet)) throw new ConfigurationError("wallet must be an EvmWallet or a SolanaWallet");
  // a bad domain is refused as the auth is made, before any request
  if (options.signInDomain !== undefined) options = { ...options, signInDomain: normalizeSignInDomain(options.signInDomain) };
  // the clock of the stack's context (its answers teach it); default: the process's
  const { clock = defaultServiceContext().clock, ...siwx } = options;
  return {
    identity: `wallet:${wallet.address}`,
    clockSensitive: true,
    async headers(url: string) {
      return { [SIWX_HEADER]: await createSiwxHeader(wallet, url, { ...siwx, now: clock.now(url) }) };
    },
  };
}
