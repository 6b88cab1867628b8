/**
 * The answer text as a token sequence that can be produced lazily: a 100k-token stream (`[[emu:tokens=N]]`) is
 * never held whole. Sources compose (think block + answer) and cut (max_tokens, refusals) without building text.
 */
import { fillerToken, tokenize } from "./tokenizer.js";

export interface TokenSource {
  count: number;
  tokens(): Iterable<string>;
}

export function textSource(text: string): TokenSource {
  const tokens = tokenize(text);
  return { count: tokens.length, tokens: () => tokens };
}

export function fillerSource(count: number): TokenSource {
  return {
    count,
    *tokens() {
      for (let i = 0; i < count; i++) yield fillerToken(i);
    },
  };
}

export function concatSources(a: TokenSource, b: TokenSource): TokenSource {
  return {
    count: a.count + b.count,
    *tokens() {
      yield* a.tokens();
      yield* b.tokens();
    },
  };
}

export function takeSource(src: TokenSource, max: number): TokenSource {
  return {
    count: Math.min(src.count, max),
    *tokens() {
      let i = 0;
      if (max <= 0) return;
      for (const t of src.tokens()) {
        yield t;
        if (++i >= max) return;
      }
    },
  };
}

export function sourceText(src: TokenSource): string {
  let s = "";
  for (const t of src.tokens()) s += t;
  return s;
}
