/** Usage and cost of a planned completion. */
import type { EmulatedModel } from "./catalog.js";
import type { CompletionPlan } from "./plan.js";

/** flat fee per request that used web search, USD */
export const WEB_SEARCH_FEE_USD = 0.01;

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number; cache_creation_input_tokens: number };
  completion_tokens_details: { reasoning_tokens: number };
}

export function usageOf(plan: CompletionPlan, cache: { cachedTokens: number; cacheCreationTokens: number }): Usage {
  const completion = plan.choices.reduce((sum, c) => sum + c.completionTokens, 0);
  const reasoning = plan.choices.reduce((sum, c) => sum + c.reasoningTokens, 0);
  return {
    prompt_tokens: plan.promptTokens,
    completion_tokens: completion,
    total_tokens: plan.promptTokens + completion,
    prompt_tokens_details: { cached_tokens: cache.cachedTokens, cache_creation_input_tokens: cache.cacheCreationTokens },
    completion_tokens_details: { reasoning_tokens: reasoning },
  };
}

/**
 * The model's charge in USD: pricing per 1M tokens, cached prompt tokens at the cache_input price. Web search
 * is an add-on charged apart (WEB_SEARCH_FEE_USD, its own ledger row).
 */
export function costUsd(model: EmulatedModel, usage: Usage): number {
  const cached = usage.prompt_tokens_details.cached_tokens;
  const cachePrice = model.pricing.cache_input ?? model.pricing.input;
  const usd =
    ((usage.prompt_tokens - cached) * model.pricing.input + cached * cachePrice + usage.completion_tokens * model.pricing.output) / 1e6;
  return Math.round(usd * 1e9) / 1e9;
}
