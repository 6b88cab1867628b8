/**
 * The emulator's SIWX check, done for real: EIP-4361 parsed by `siwe` and the signer recovered with ethers (a
 * smart account's signature checked on the local chain, EIP-1271 or ERC-6492: smart-accounts.ts);
 * Solana's text parsed here and its Ed25519 signature verified with Node's crypto. Chain, `issuedAt` window, expiry
 * and single-use nonces are checked, and the domain: live, as the service does it, against a list of the
 * service's own hosts after stripping protocol, port and path (not the request's `Host`; `uri` is not checked),
 * with 30 s of future skew; seed, domain (host with port) and URI (the origin or any URL on it) against `req.url`,
 * which the server builds on the emulator's public origin (never from the request line), with 5 s of skew.
 *
 * Every failure is a 401 `{error: "Invalid Sign-in-with-x signature", code, details: {reason, message}}`. Its
 * `code` is the live service's for the check that failed (its auth guide's `X402_SIGN_IN_*` list: `EXPIRED`,
 * `NONCE_REUSED`, `INVALID_SIGNATURE`, `DOMAIN_MISMATCH`, …), or with `codes: "seed"` the seed contract's one
 * code for them all, `X402_INVALID_SIGN_IN`. Which check failed is also in `details.reason`, for people reading
 * it (the service publishes no such field).
 */
import { verify as nodeVerify } from "node:crypto";
import { verifyMessage, getAddress } from "ethers";
import { z } from "zod";
import { EmulatorHttpError, type EmulatorRequest } from "../types.js";
import { BASE_CHAIN_ID, SOLANA_MAINNET } from "langchain-service";
import { base58ToBytes, ed25519PublicKeyObject } from "./encoding.js";
import type { ContractSignatureCheck } from "./smart-accounts.js";

export const SIWX_MAX_AGE_MS = 5 * 60_000;
/**
 * How far ahead an `issuedAt` may be. The x402 reference validator tolerates none; the service publishes no
 * figure. A few seconds covers clocks kept by NTP, and still refuses a client clock that runs ahead: clients
 * should sign with the service's time (its `Date` header), not their own.
 */
export const SIWX_FUTURE_SKEW_MS = 5_000;
/** The live service's figure (its auth guide): `issuedAt` at most 30 s in the future. */
export const SIWX_LIVE_FUTURE_SKEW_MS = 30_000;
export const SIWX_INVALID = { error: "Invalid Sign-in-with-x signature", code: "X402_INVALID_SIGN_IN" } as const;

/**
 * The live service's 401 codes of a refused sign-in on inference routes (all prefixed `X402_SIGN_IN_`), as its
 * auth guide lists them; the emulator answers those of the checks it makes.
 */
export type SignInCode =
  | "PARSE_ERROR"
  | "INVALID_PAYLOAD"
  | "INVALID_MESSAGE"
  | "ADDRESS_MISMATCH"
  | "CHAIN_MISMATCH"
  | "UNSUPPORTED_CHAIN"
  | "DOMAIN_MISMATCH"
  | "EXPIRED"
  | "FUTURE_TIMESTAMP"
  | "NOT_BEFORE"
  | "INVALID_SIGNATURE"
  | "NONCE_REUSED";

/** Which codes a refusal carries: the live service's specific ones, or the seed contract's single one. */
export type SignInCodes = "live" | "seed";

/** How a sign-in is checked beyond its signature. */
export interface SiwxRules {
  codes?: SignInCodes;
  /**
   * the service's own hosts: the message's domain, stripped of protocol, port and path, must be one of them (its
   * `uri` is not checked). Absent: the domain must be `req.url.host` and the uri on `req.url.origin` (the seed's).
   */
  domains?: readonly string[];
  /** how far ahead of `now` an `issuedAt` may be (default SIWX_FUTURE_SKEW_MS) */
  futureSkewMs?: number;
  /**
   * an EVM signature the address's key did not make is asked of the chain (smart-accounts.ts): EIP-1271 for a
   * deployed smart account, ERC-6492 for one not deployed yet. Absent (no local chain): only keys sign in.
   */
  contractSignatures?: ContractSignatureCheck;
}

/** A domain as the live service compares it: protocol, port and path stripped, lower case. */
export function bareHost(domain: string): string {
  const noProtocol = domain.trim().replace(/^[a-z][a-z0-9+.-]*:\/\//i, "");
  const authority = noProtocol.split(/[/?#]/, 1)[0]!.replace(/^[^@]*@/, "");
  const host = authority.startsWith("[") ? authority.slice(0, authority.indexOf("]") + 1) : authority.replace(/:\d*$/, "");
  return host.toLowerCase();
}

const HeaderSchema = z.object({
  address: z.string().min(1),
  message: z.string().min(1),
  signature: z.string().min(1),
  timestamp: z.union([z.number(), z.string()]).optional(),
  chainId: z.union([z.number(), z.string()]),
  type: z.string().optional(),
});

export interface SiwxIdentity {
  address: string;
  chain: "evm" | "solana";
}

/** The refusal's code, as `codes` says: the live `X402_SIGN_IN_<code>`, or the seed's `X402_INVALID_SIGN_IN`. */
export function signInCode(code: SignInCode, codes: SignInCodes): string {
  return codes === "live" ? `X402_SIGN_IN_${code}` : SIWX_INVALID.code;
}

/** Single-use nonces, remembered as long as a message carrying them could still be accepted. */
export class NonceStore {
  readonly #seen = new Map<string, number>();
  /** true when the nonce was fresh (and is now used) */
  use(nonce: string, now: number, keepUntil: number): boolean {
    if (this.#seen.size > 10_000) for (const [n, until] of this.#seen) if (until < now) this.#seen.delete(n);
    const until = this.#seen.get(nonce);
    if (until !== undefined && until >= now) return false;
    this.#seen.set(nonce, keepUntil);
    return true;
  }
}

interface ParsedFields {
  domain: string;
  address: string;
  uri: string;
  chainId: string;
  nonce: string;
  issuedAt: string;
  expirationTime?: string;
  notBefore?: string;
}

/** Solana SIWX text: `<domain> wants you to sign in with your Solana account:`, address, then `Key: value` lines. */
export function parseSolanaSiwxMessage(message: string): ParsedFields | undefined {
  const lines = message.split("\n");
  const head = /^(.+) wants you to sign in with your Solana account:$/.exec(lines[0] ?? "");
  if (!head || !lines[1]) return undefined;
  const fields = new Map<string, string>();
  for (const line of lines.slice(2)) {
    const m = /^(URI|Version|Chain ID|Nonce|Issued At|Expiration Time|Not Before|Request ID): (.+)$/.exec(line);
    if (m) fields.set(m[1]!, m[2]!);
  }
  const uri = fields.get("URI");
  const nonce = fields.get("Nonce");
  const issuedAt = fields.get("Issued At");
  const chainId = fields.get("Chain ID");
  if (!uri || !nonce || !issuedAt || !chainId || fields.get("Version") !== "1") return undefined;
  return {
    domain: head[1]!,
    address: lines[1],
    uri,
    chainId: chainId.startsWith("solana:") ? chainId : `solana:${chainId}`,
    nonce,
    issuedAt,
    expirationTime: fields.get("Expiration Time"),
    notBefore: fields.get("Not Before"),
  };
}

// a dynamic import is re-resolved on every call under some loaders: keep the module promise
let siweModule: Promise<typeof import("siwe")> | undefined;
function loadSiwe(): Promise<typeof import("siwe")> {
  siweModule ??= import("siwe");
  return siweModule;
}

async function parseEvmSiwxMessage(message: string): Promise<ParsedFields | undefined> {
  const { SiweMessage } = await loadSiwe();
  try {
    const m = new SiweMessage(message);
    return {
      domain: m.domain,
      address: m.address,
      uri: m.uri,
      chainId: String(m.chainId),
      nonce: m.nonce,
      issuedAt: m.issuedAt ?? "",
      expirationTime: m.expirationTime,
      notBefore: m.notBefore,
    };
  } catch {
    return undefined;
  }
}

function decodeSolanaSignature(signature: string): Uint8Array | undefined {
  const b58 = base58ToBytes(signature, 64);
  if (b58) return b58;
  const b64 = Buffer.from(signature, "base64");
  return b64.length === 64 ? new Uint8Array(b64) : undefined;
}

function isEvmChain(chainId: string | number): boolean {
  const s = String(chainId);
  return s === String(BASE_CHAIN_ID) || s === `eip155:${BASE_CHAIN_ID}`;
}

/**
 * Verifies one header against the request it came with. Throws `EmulatorHttpError(401)` when invalid, with the
 * live service's code for the check that failed (`codes: "live"`, the emulator's default mode) or the seed's.
 */
export async function verifySiwxHeader(
  header: string,
  req: EmulatorRequest,
  nonces: NonceStore,
  now: number,
  rules: SignInCodes | SiwxRules = "live",
): Promise<SiwxIdentity> {
  const {
    codes = "live",
    domains,
    futureSkewMs = SIWX_FUTURE_SKEW_MS,
    contractSignatures,
  } = typeof rules === "string" ? { codes: rules } : rules;
  function fail(code: SignInCode, reason: string, message: string): never {
    throw new EmulatorHttpError(401, { error: SIWX_INVALID.error, code: signInCode(code, codes), details: { reason, message } });
  }
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(header.trim(), "base64").toString("utf8"));
  } catch {
    fail("PARSE_ERROR", "malformed", "Invalid SIGN-IN-WITH-X header: not base64 JSON");
  }
  const parsed = HeaderSchema.safeParse(json);
  if (!parsed.success)
    fail("INVALID_PAYLOAD", "malformed", "Invalid SIGN-IN-WITH-X header: expected {address, message, signature, timestamp, chainId}");
  const payload = parsed.data;
  const solana = payload.type === "ed25519" || String(payload.chainId).startsWith("solana:");
  if (!solana && !isEvmChain(payload.chainId))
    fail("UNSUPPORTED_CHAIN", "unsupported_chain", `Unsupported chain ${String(payload.chainId)}`);
  if (solana && payload.chainId !== SOLANA_MAINNET)
    fail("UNSUPPORTED_CHAIN", "unsupported_chain", `Unsupported chain ${String(payload.chainId)}`);

  const fields = solana ? parseSolanaSiwxMessage(payload.message) : await parseEvmSiwxMessage(payload.message);
  if (!fields) fail("INVALID_MESSAGE", "malformed", "Invalid sign-in message");

  // the message must be about the wallet the header names
  const sameAddress = solana ? fields.address === payload.address : fields.address.toLowerCase() === payload.address.toLowerCase();
  if (!sameAddress) fail("ADDRESS_MISMATCH", "address_mismatch", "Sign-in message address does not match the header address");
  if (solana ? fields.chainId !== SOLANA_MAINNET : !isEvmChain(fields.chainId)) {
    fail("CHAIN_MISMATCH", "chain_mismatch", "Sign-in message chain does not match a supported chain");
  }

  if (domains) {
    // live: the service's own hosts, whatever host the request reached (a proxy, a custom base URL)
    if (!domains.some((d) => bareHost(d) === bareHost(fields.domain)))
      fail("DOMAIN_MISMATCH", "domain_mismatch", `Sign-in domain must be one of ${domains.map(bareHost).join(", ")}`);
  } else {
    if (fields.domain !== req.url.host) fail("DOMAIN_MISMATCH", "domain_mismatch", `Sign-in domain must be ${req.url.host}`);
    let uriOrigin: string | undefined;
    try {
      uriOrigin = new URL(fields.uri).origin;
    } catch {
      uriOrigin = undefined;
    }
    if (uriOrigin !== req.url.origin) fail("DOMAIN_MISMATCH", "uri_mismatch", `Sign-in URI must be on ${req.url.origin}`);
  }

  const issuedAt = Date.parse(fields.issuedAt);
  if (!Number.isFinite(issuedAt)) fail("INVALID_MESSAGE", "malformed", "Sign-in message has no valid Issued At");
  if (issuedAt > now + futureSkewMs)
    fail("FUTURE_TIMESTAMP", "issued_in_future", "Sign-in message issued in the future: sign with the service's time (its Date header)");
  if (now - issuedAt > SIWX_MAX_AGE_MS) fail("EXPIRED", "stale", "Sign-in message is older than 5 minutes; sign a fresh one");
  const expiresAt = fields.expirationTime ? Date.parse(fields.expirationTime) : issuedAt + SIWX_MAX_AGE_MS;
  if (!Number.isFinite(expiresAt) || expiresAt <= now) fail("EXPIRED", "expired", "Sign-in message has expired");
  if (fields.notBefore && Date.parse(fields.notBefore) > now) fail("NOT_BEFORE", "not_yet_valid", "Sign-in message is not valid yet");

  let address: string;
  if (solana) {
    const publicKey = base58ToBytes(payload.address, 32);
    const signature = decodeSolanaSignature(payload.signature);
    if (!publicKey || !signature) fail("INVALID_SIGNATURE", "invalid_signature", "Malformed Solana address or signature");
    let ok = false;
    try {
      ok = nodeVerify(null, Buffer.from(payload.message, "utf8"), ed25519PublicKeyObject(publicKey), signature);
    } catch {
      ok = false;
    }
    if (!ok) fail("INVALID_SIGNATURE", "invalid_signature", "Signature does not verify");
    address = payload.address;
  } else {
    let recovered: string | undefined;
    try {
      recovered = verifyMessage(payload.message, payload.signature);
    } catch {
      recovered = undefined;
    }
    if (recovered?.toLowerCase() === payload.address.toLowerCase()) address = getAddress(recovered);
    // not the address's key: a smart account's signature (EIP-1271, or ERC-6492 before deployment), or none
    else if (contractSignatures && (await contractSignatures(payload.address, payload.message, payload.signature)))
      address = getAddress(payload.address);
    else fail("INVALID_SIGNATURE", "invalid_signature", "Signature does not verify");
  }

  // only a message that passed every check uses up its nonce
  if (!nonces.use(`${address}:${fields.nonce}`, now, Math.max(expiresAt, issuedAt + SIWX_MAX_AGE_MS) + futureSkewMs)) {
    fail("NONCE_REUSED", "nonce_reused", "Sign-in nonce already used; sign a fresh message for every request");
  }
  return { address, chain: solana ? "solana" : "evm" };
}
