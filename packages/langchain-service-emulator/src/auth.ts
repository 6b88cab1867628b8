/**
 * Who is calling (spec part 5): a bearer API key, a wallet signed in with SIWX (`SIGN-IN-WITH-X`, legacy
 * `X-Sign-In-With-X`, verified by the x402 hooks), or nobody. Also the identities the server counts limits
 * and failures against, and the non-secret id under which an API key appears in logs.
 */
import { createHash } from "node:crypto";
import { SIWX_HEADER, SIWX_LEGACY_HEADER } from "langchain-service";
import type { Ledger } from "./ledger.js";
import type { X402EmulatorOptions } from "./x402/options.js";
import {
  EmulatorHttpError,
  isLiveMode,
  type Account,
  type Caller,
  type EmulatorContext,
  type EmulatorRequest,
  type Route,
} from "./types.js";

// request header names arrive lower-cased
const SIWX = SIWX_HEADER.toLowerCase();
const LEGACY_SIWX = SIWX_LEGACY_HEADER.toLowerCase();

/** The bearer token of `Authorization`, or undefined when the header is absent. "" for a malformed header. */
export function bearerToken(headers: EmulatorRequest["headers"]): string | undefined {
  const value = headers.authorization;
  if (value === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(value);
  return match?.[1] ?? "";
}

export function siwxHeader(headers: EmulatorRequest["headers"]): string | undefined {
  return headers[SIWX] || headers[LEGACY_SIWX] || undefined;
}

/** The identity limits, failures and logs are kept under. */
export function accountIdentity(account: Account): string {
  return account.kind === "apiKey" ? `key:${account.id}` : `wallet:${account.id}`;
}

/** The ledger account behind an identity (`key:…`, `wallet:…`), if any. */
export function accountForIdentity(identity: string, ledger: Ledger): Account | undefined {
  if (identity.startsWith("key:")) return ledger.apiKey(identity.slice(4));
  if (identity.startsWith("wallet:")) return ledger.accounts.get(identity);
  return undefined;
}

export function callerIdentity(caller: Caller, remoteAddress: string | undefined): string {
  return caller.kind === "anonymous" ? `ip:${remoteAddress ?? "unknown"}` : accountIdentity(caller.account);
}

/** The identity of the sender's network address: what anonymous callers and refused credentials count against. */
export function addressIdentity(req: EmulatorRequest): string {
  return `ip:${req.remoteAddress ?? "unknown"}`;
}

/**
 * The identity a request claims, before it is verified: a known API key, the address inside a SIWX payload,
 * else the peer address. The abuse block is checked against it before any route (or signature check) runs;
 * failures are counted only against a verified identity (a refused sign-in counts against the peer address).
 */
export function claimedIdentity(req: EmulatorRequest, ledger: Ledger): string {
  const token = bearerToken(req.headers);
  if (token) {
    const account = ledger.apiKey(token);
    if (account) return accountIdentity(account);
  } else {
    const siwx = siwxHeader(req.headers);
    const address = siwx ? siwxAddress(siwx) : undefined;
    if (address) return `wallet:${address.startsWith("0x") ? address.toLowerCase() : address}`;
  }
  return addressIdentity(req);
}

/** The `address` member of a SIWX payload (base64 JSON), unverified. */
function siwxAddress(header: string): string | undefined {
  try {
    const payload = JSON.parse(Buffer.from(header, "base64").toString("utf8")) as { address?: unknown };
    return typeof payload.address === "string" && payload.address ? payload.address : undefined;
  } catch {
    return undefined;
  }
}

/** A stable, non-secret id for an account: API keys are secrets, so logs carry a hash prefix instead. */
export function publicAccountId(account: Account): string {
  if (account.kind === "wallet") return account.id;
  return `key_${createHash("sha256").update(account.id).digest("hex").slice(0, 16)}`;
}

/** Routes that take an API key only (a sign-in alone is refused there, and beside a key it is ignored). */
const BEARER_ONLY = /^\/(api_keys|billing|characters)(\/|$)/;

/**
 * Both credentials on a route that takes a wallet: the live service signs the wallet in and bills it (the key is
 * not read); the seed used the key (option `x402.bothCredentials`).
 */
function walletWins(req: EmulatorRequest, ctx: EmulatorContext): boolean {
  if (BEARER_ONLY.test(req.path)) return false;
  // read here (auth runs before the x402 hooks' behaviour is consulted): X402EmulatorOptions.bothCredentials
  const chosen = (ctx.options.x402 as Pick<X402EmulatorOptions, "bothCredentials"> | undefined)?.bothCredentials;
  return (chosen ?? (isLiveMode(ctx.options) ? "wallet" : "key")) === "wallet";
}

/**
 * Decides the caller of a route. Bad credentials answer 401; no credentials on a "required" route answer the
 * x402 discovery 402 (thrown as an EmulatorHttpError so the server writes it like any other error).
 */
export async function authenticate(route: Route, req: EmulatorRequest, ctx: EmulatorContext): Promise<Caller> {
  if (route.auth === "public") return { kind: "anonymous" };
  const token = bearerToken(req.headers);
  const siwx = siwxHeader(req.headers);
  if (token !== undefined && !(siwx && walletWins(req, ctx))) {
    const account = token ? ctx.ledger.apiKey(token) : undefined;
    if (!account) throw new EmulatorHttpError(401, { error: "Authentication failed" });
    return { kind: "apiKey", account };
  }
  if (siwx) {
    const { address, chain } = await ctx.x402.verifySiwx(siwx, req, ctx);
    const account = ctx.ledger.wallet(address, ctx.options.walletStartingUsd ?? 0);
    return { kind: "wallet", account, address, chain };
  }
  if (route.auth === "required") {
    const response = ctx.x402.discovery402(req, ctx);
    throw new EmulatorHttpError(response.status, response.body, response.headers);
  }
  return { kind: "anonymous" };
}
