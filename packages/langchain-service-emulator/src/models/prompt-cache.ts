/**
 * Prompt caching, emulated per caller. A prompt is a list of message "blocks" (the service system prompt
 * first when included). Cacheable prefixes:
 * - with `prompt_cache_key`: every prefix (by messages), scoped by (caller, key);
 * - without it: prefixes ending at a leading system/developer message (system prompts are cached
 *   automatically) or at a message with a `cache_control` text part, scoped by caller.
 * `cached_tokens` = tokens of the longest cacheable prefix seen before in that scope;
 * `cache_creation_input_tokens` = tokens of the longest cacheable prefix of this request minus the cached ones
 * (what is written now). Prefixes are identified by a chained SHA-256 over the blocks.
 */
import { createHash } from "node:crypto";

export interface PromptBlock {
  /** stable serialization of the message (role, text, tool calls) */
  key: string;
  tokens: number;
  /** a cache breakpoint without prompt_cache_key (leading system message, cache_control part) */
  breakpoint: boolean;
}

export interface CacheUsage {
  cachedTokens: number;
  cacheCreationTokens: number;
}

export class PromptCache {
  private readonly seen = new Map<string, Set<string>>();
  /** bounded so a long-running emulator does not grow without end */
  constructor(private readonly maxScopes = 10_000) {}

  lookupAndStore(callerId: string, promptCacheKey: string | undefined, blocks: readonly PromptBlock[]): CacheUsage {
    const scopeId = promptCacheKey === undefined ? `${callerId}\u0000auto` : `${callerId}\u0000key\u0000${promptCacheKey}`;
    let scope = this.seen.get(scopeId);
    if (!scope) {
      if (this.seen.size >= this.maxScopes) {
        const oldest = this.seen.keys().next().value;
        if (oldest !== undefined) this.seen.delete(oldest);
      }
      scope = new Set();
      this.seen.set(scopeId, scope);
    }
    let hash = "";
    let tokens = 0;
    let cachedTokens = 0;
    let cacheableTokens = 0;
    const newPrefixes: string[] = [];
    for (const block of blocks) {
      hash = createHash("sha256").update(hash).update(block.key).digest("hex");
      tokens += block.tokens;
      const cacheable = promptCacheKey !== undefined || block.breakpoint;
      if (!cacheable) continue;
      cacheableTokens = tokens;
      if (scope.has(hash)) cachedTokens = tokens;
      else newPrefixes.push(hash);
    }
    for (const p of newPrefixes) scope.add(p);
    return { cachedTokens, cacheCreationTokens: Math.max(0, cacheableTokens - cachedTokens) };
  }
}
