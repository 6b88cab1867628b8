/**
 * The emulator's embedding "model": deterministic, offline vectors whose cosine similarity follows shared words,
 * so that retrieval over a small corpus finds the right document.
 *
 * A text becomes a bag of normalized words (NFKC, lower case, letters and digits, common English stop words
 * dropped, a light suffix stemmer so "payments" meets "payment"); each word is hashed (FNV-1a, seeded with the
 * model id, so two models give different vectors) into one of `dimensions` buckets with a hashed sign, and the
 * vector is L2-normalized. Two texts sharing words share buckets (same signs), so their dot product grows with
 * what they share; unrelated words land on random buckets with random signs and cancel out on average.
 * Values are float32 (what the service returns, and what `encoding_format: "base64"` carries).
 *
 * Written by hand: a hashed bag of words is a dozen lines, and no kept library makes one.
 */
import { endianness } from "node:os";

const STOP_WORDS = new Set(
  (
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it its " +
    "me my no not of on or our so than that the their them then there these they this to was we were what when " +
    "where which who why will with would you your"
  ).split(" "),
);

/** A light suffix stemmer: enough for plural and tense forms to meet ("payments"/"payment", "signed"/"sign"). */
export function stem(word: string): string {
  if (word.length > 4 && word.endsWith("ies")) return `${word.slice(0, -3)}y`;
  if (word.length > 5 && word.endsWith("ing")) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith("ed")) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith("s") && !/(ss|us|is)$/.test(word)) return word.slice(0, -1);
  return word;
}

/** The normalized words of `text` that carry meaning. */
export function embeddingWords(text: string): string[] {
  const raw =
    text
      .normalize("NFKC")
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? [];
  const out: string[] = [];
  for (const w of raw) if (!STOP_WORDS.has(w)) out.push(stem(w));
  return out;
}

/** FNV-1a, 32 bits, over the UTF-16 code units of `seed` + NUL + `text`. */
function fnv1a(seed: string, text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 0x01000193);
  h = Math.imul(h, 0x01000193); // the NUL separator
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * The unit vector of `text` with `dimensions` components (float32 values in a Float32Array). A text with no
 * word ("!!!") still gets a vector: its whole string hashed as one feature.
 */
export function embedText(text: string, dimensions: number, seed: string): Float32Array {
  const acc = new Float64Array(dimensions);
  const words = embeddingWords(text);
  const features = words.length ? words : [text];
  for (const word of features) {
    const h = fnv1a(seed, word);
    // the bucket from the hash, the sign from a bit the modulo barely uses
    acc[h % dimensions]! += h & 0x80000000 ? -1 : 1;
  }
  let norm = 0;
  for (let i = 0; i < dimensions; i++) norm += acc[i]! * acc[i]!;
  const out = new Float32Array(dimensions);
  if (norm === 0) {
    // every feature cancelled out in a tiny space: a fixed unit vector rather than NaNs
    out[fnv1a(seed, text) % dimensions] = 1;
    return out;
  }
  const scale = 1 / Math.sqrt(norm);
  for (let i = 0; i < dimensions; i++) out[i] = acc[i]! * scale;
  return out;
}

const LITTLE_ENDIAN = endianness() === "LE";

/** `encoding_format: "base64"`: the vector's float32 values, little-endian, base64-encoded. */
export function toBase64Float32(vector: Float32Array): string {
  // a Float32Array is in the platform's byte order: on a little-endian host its bytes are the wire's
  if (LITTLE_ENDIAN) return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString("base64");
  const buf = Buffer.allocUnsafe(vector.length * 4);
  for (let i = 0; i < vector.length; i++) buf.writeFloatLE(vector[i]!, i * 4);
  return buf.toString("base64");
}
