/** Small encoding helpers shared by the client and the emulator. */
import { decodeBase58, encodeBase58, toBeArray } from "ethers";
import { base64ToBytes, bytesToBase64, utf8Bytes, utf8Text } from "../runtime/bytes.js";

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
  return bytesToBase64(utf8Bytes(JSON.stringify(value)));
}

export function fromBase64Json<T = unknown>(value: string): T | undefined {
  try {
    const bytes = base64ToBytes(value);
    return bytes ? (JSON.parse(utf8Text(bytes)) as T) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * USD (number) to atomic units of a token with `decimals`, rounded down to the unit (never more than asked).
 * Works on the number's shortest decimal text, so neither float products (5.1 * 1e6 = 5099999.999...) nor
 * `toFixed`'s binary expansion (7.123456789 -> 7.123456788999999567 at 18 decimals) leak into the amount.
 */
export function usdToAtomic(usd: number, decimals = 6): bigint {
  if (!Number.isFinite(usd)) throw new RangeError(`not a finite amount: ${usd}`);
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(usd));
  if (!m) throw new RangeError(`not a decimal amount: ${usd}`);
  const [, sign, whole, frac = "", exp = "0"] = m;
  const digits = BigInt(whole! + frac);
  const shift = Number(exp) - frac.length + decimals;
  const atomic = shift >= 0 ? digits * 10n ** BigInt(shift) : digits / 10n ** BigInt(-shift);
  return sign ? -atomic : atomic;
}

export function atomicToUsd(atomic: bigint | string, decimals = 6): number {
  return Number(BigInt(atomic)) / 10 ** decimals;
}
