/** Small encoding helpers shared by the client and the emulator. */
import { decodeBase58, encodeBase58, toBeArray } from "ethers";

/**
 * Base58 to bytes of a fixed length. ethers decodes base58 to a bigint (dropping leading zero bytes), so the
 * result is left-padded and checked by re-encoding. Returns undefined when the text is not that.
 */
export function base58ToBytes(text: string, length: number): Uint8Array | undefined {
  if (!/^[1-9A-HJ-NP-Za-km-z]+$/.test(text)) return undefined;
  let value: bigint;
  try {
    value = decodeBase58(text);
  } catch {
    return undefined;
  }
  const raw = value === 0n ? new Uint8Array() : toBeArray(value);
  if (raw.length > length) return undefined;
  const out = new Uint8Array(length);
  out.set(raw, length - raw.length);
  return encodeBase58(out) === text ? out : undefined;
}

export function toBase64Json(value: unknown): string {
  return Buffer.from(JSON.stringify(value), "utf8").toString("base64");
}

export function fromBase64Json<T = unknown>(value: string): T | undefined {
  try {
    return JSON.parse(Buffer.from(value, "base64").toString("utf8")) as T;
  } catch {
    return undefined;
  }
}

/** USD (number) to atomic units of a token with `decimals`, rounded down to the unit. */
export function usdToAtomic(usd: number, decimals = 6): bigint {
  // via a fixed-decimal string: avoids float products such as 5.1 * 1e6 = 5099999.999...
  const [whole, frac = ""] = usd.toFixed(decimals).split(".");
  return BigInt(whole!) * 10n ** BigInt(decimals) + BigInt((frac + "0".repeat(decimals)).slice(0, decimals) || "0");
}

export function atomicToUsd(atomic: bigint | string, decimals = 6): number {
  return Number(BigInt(atomic)) / 10 ** decimals;
}
