/**
 * Bytes without `Buffer`: base64, hex, concatenation and randomness on what every runtime has (`atob`/`btoa`,
 * `TextEncoder`, WebCrypto's `getRandomValues`), so the faces run in browsers and workers as well as in Node.
 * (`@scure/base` does base64 too, but it comes only with the optional peers viem and ethers' newer releases.)
 */

/** Standard base64 of bytes. */
export function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  // in slices: String.fromCharCode takes its arguments on the stack
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/**
 * Bytes of base64 text, as leniently as Node's `Buffer.from(text, "base64")` reads it: standard or URL-safe
 * alphabet, padding optional, whitespace ignored. `undefined` for text that is not base64 at all.
 */
export function base64ToBytes(text: string): Uint8Array | undefined {
  const clean = text.replace(/\s+/g, "").replace(/-/g, "+").replace(/_/g, "/").replace(/=+$/, "");
  if (!/^[A-Za-z0-9+/]*$/.test(clean) || clean.length % 4 === 1) return undefined;
  const binary = atob(clean + "=".repeat((4 - (clean.length % 4)) % 4));
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** Lowercase hex of bytes. */
export function bytesToHex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

/** `n` random bytes from WebCrypto (Node 20+, browsers, workers, Deno, Bun). */
export function randomBytes(n: number): Uint8Array {
  return globalThis.crypto.getRandomValues(new Uint8Array(n));
}

/** The parts one after another, in one new array. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

const utf8 = new TextEncoder();
/** UTF-8 bytes of text. */
export function utf8Bytes(text: string): Uint8Array {
  return utf8.encode(text);
}
/** Text of UTF-8 bytes (malformed sequences become U+FFFD, as Buffer's toString does). */
export function utf8Text(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}
/** Byte length of text in UTF-8, without copying it. */
export function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}
