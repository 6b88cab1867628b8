/**
 * The emulator's own server-side wire helpers (the client keeps its versions private): base58 of a fixed length,
 * an Ed25519 public key for node:crypto's verify, USD to a token's atomic units.
 */
import { createPublicKey, type KeyObject } from "node:crypto";
import { decodeBase58, encodeBase58, parseUnits, toBeArray } from "ethers";

/** Base58 text to exactly `length` bytes, or undefined; ethers decodes to a bigint, so pad and re-encode to check. */
export function base58ToBytes(text: string, length: number): Uint8Array | undefined {
  if (!/^[1-9A-HJ-NP-Za-km-z]+$/.test(text)) return undefined;
  let raw: Uint8Array;
  try {
    const value = decodeBase58(text);
    raw = value === 0n ? new Uint8Array() : toBeArray(value);
  } catch {
    return undefined;
  }
  if (raw.length > length) return undefined;
  const out = new Uint8Array(length);
  out.set(raw, length - raw.length);
  return encodeBase58(out) === text ? out : undefined;
}

// SPKI prefix of a raw Ed25519 key: node:crypto verifies Ed25519 natively, no Solana library needed
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

export function ed25519PublicKeyObject(publicKey: Uint8Array): KeyObject {
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, publicKey]), format: "der", type: "spki" });
}

/** USD (the emulator's options: 5, 0.01) to atomic units, rounded to the token's decimals. */
export function usdToAtomic(usd: number, decimals = 6): bigint {
  return parseUnits(usd.toFixed(decimals), decimals);
}
