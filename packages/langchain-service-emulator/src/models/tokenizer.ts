/**
 * The emulator's tokenizer. Real tokenizers are model-specific BPE tables; the emulator only needs a
 * deterministic count that grows with the text and pieces that concatenate back to the exact text (so a
 * stream can be cut into tokens and re-joined). Rule: a token is optional leading whitespace followed by
 * either one run of letters/digits/underscore or one other character; trailing whitespace is its own token.
 *
 *   tokenize("Hi, there!") -> ["Hi", ",", " there", "!"]   (4 tokens)
 */

const TOKEN_RE = /\s*(?:[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_])|\s+/gu;

export function tokenize(text: string): string[] {
  return text.match(TOKEN_RE) ?? [];
}

export function countTokens(text: string): number {
  if (!text) return 0;
  let n = 0;
  TOKEN_RE.lastIndex = 0;
  // counting without building the array keeps large prompts cheap
  while (TOKEN_RE.exec(text) !== null) n++;
  return n;
}

/** The first `max` tokens of `text`, joined. */
export function truncateTokens(text: string, max: number): string {
  return tokenize(text).slice(0, Math.max(0, max)).join("");
}

/** Words used for generated filler text (`[[emu:tokens=N]]`); each is exactly one token with its leading space. */
const FILLER = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do"];

/** Token i of the filler sequence: "lorem", " ipsum", " dolor", ... (the first has no leading space). */
export function fillerToken(i: number): string {
  const word = FILLER[i % FILLER.length] ?? "lorem";
  return i === 0 ? word : ` ${word}`;
}

/** Lazily yields `count` filler tokens: a 100k-token answer is never held in memory at once. */
export function* fillerTokens(count: number, start = 0): Generator<string> {
  for (let i = start; i < count; i++) yield fillerToken(i);
}
