/** Pure functions of the emulated model family: tokenizer, suffix, directives, corpus, reasoning, cache. */
import { describe, expect, it } from "vitest";
import { brandNames } from "../../src/config.js";
import {
  compatibilityMapping,
  findEmbeddingModel,
  findImageModel,
  findModel,
  modelTraits,
  MODELS,
} from "../../packages/langchain-service-emulator/src/models/catalog.js";
import { answerFromDocuments, looksLikeItNeedsSearch, searchCorpus } from "../../packages/langchain-service-emulator/src/models/corpus.js";
import { parseDirectives } from "../../packages/langchain-service-emulator/src/models/directives.js";
import { decodeFileData } from "../../packages/langchain-service-emulator/src/models/seen-messages.js";
import { PromptCache } from "../../packages/langchain-service-emulator/src/models/prompt-cache.js";
import { buildReasoningDetails, verifyReasoningDetails } from "../../packages/langchain-service-emulator/src/models/reasoning.js";
import {
  effectiveParameters,
  InvalidRequest,
  parametersEcho,
  parseModelSuffix,
} from "../../packages/langchain-service-emulator/src/models/request.js";
import { countTokens, fillerTokens, tokenize, truncateTokens } from "../../packages/langchain-service-emulator/src/models/tokenizer.js";

const names = brandNames("service");

describe("catalog", () => {
  it("has the contract's model ids with their tiers", () => {
    const tiers = Object.fromEntries(MODELS.map((m) => [m.id, m.tier]));
    expect(tiers).toEqual({
      "emu-xs": "XS",
      "emu-s": "S",
      "emu-m": "M",
      "emu-l": "L",
      "emu-reasoner": "M",
      "emu-thinker": "S",
      "emu-legacy": "S",
      "emu-basic": "XS",
      "emu-pro": "L",
      // what live records say of availability (./live-model-gates.test.ts)
      "emu-offline": "S",
      "emu-regional": "S",
      "emu-sunset": "S",
      "emu-o-reasoner": "M",
    });
    expect(findModel("emu-reasoner")?.reasoning).toBe("details");
    expect(findModel("emu-thinker")?.reasoning).toBe("think-tags");
    expect(findModel("emu-legacy")?.deprecated?.date).toMatch(/^\d{4}-\d{2}-\d{2}/);
    expect(findModel("emu-pro")?.proOnly).toBe(true);
  });

  it("finds a model by id with a feature suffix and nothing for unknown ids", () => {
    expect(findModel("emu-s:enable_web_search=on")?.id).toBe("emu-s");
    expect(findModel("gpt-4")).toBeUndefined();
  });

  it("finds the model a text trait or a compatibility name stands for, as the service serves them", () => {
    expect(findModel("fastest")?.id).toBe("emu-xs");
    expect(findModel("default:enable_web_search=on")?.id).toBe("emu-s");
    expect(findModel("gpt-4o")?.id).toBe("emu-m");
    expect(findModel("constructor")).toBeUndefined();
    expect(modelTraits("text")).toMatchObject({ fastest: "emu-xs", default: "emu-s" });
    expect(compatibilityMapping("code")).toEqual(compatibilityMapping("text"));
    expect(findEmbeddingModel("text-embedding-ada-002")?.id).toBe("text-embedding-bge-m3");
    expect(findEmbeddingModel("constructor")).toBeUndefined();
    expect(findImageModel("highest_quality")?.id).toBe("emu-image-hd");
    expect(findImageModel("dall-e-3")?.id).toBe("emu-image");
    expect(findImageModel("constructor")).toBeUndefined();
  });
});

describe("tokenizer", () => {
  it("splits words and punctuation and joins back to the exact text", () => {
    expect(tokenize("Hi, there!")).toEqual(["Hi", ",", " there", "!"]);
    const text = "  Multi-line\ntext, with   spaces and émojis 🙂 and numbers 12.5 ";
    expect(tokenize(text).join("")).toBe(text);
    expect(countTokens(text)).toBe(tokenize(text).length);
    expect(countTokens("")).toBe(0);
    expect(truncateTokens("one two three four", 2)).toBe("one two");
  });

  it("produces filler tokens lazily, one token each", () => {
    const tokens = [...fillerTokens(12)];
    expect(tokens).toHaveLength(12);
    expect(countTokens(tokens.join(""))).toBe(12);
    expect(tokens[0]).toBe("lorem");
  });
});

describe("model feature suffix", () => {
  it("parses key=value pairs, URL-decoded and typed", () => {
    expect(parseModelSuffix("emu-s", names)).toEqual({ id: "emu-s", overrides: {} });
    const parsed = parseModelSuffix("emu-s:enable_web_search=auto&enable_web_citations=true&character_slug=a%20b", names);
    expect(parsed).toEqual({ id: "emu-s", overrides: { enable_web_search: "auto", enable_web_citations: true, character_slug: "a b" } });
  });

  it("rejects enable_e2ee, enable_x_search, unknown keys and wrong values", () => {
    expect(() => parseModelSuffix("emu-s:enable_e2ee=false", names)).toThrow(InvalidRequest);
    expect(() => parseModelSuffix("emu-s:enable_x_search=true", names)).toThrow(InvalidRequest);
    expect(() => parseModelSuffix("emu-s:bogus=1", names)).toThrow(/Unknown model feature suffix parameter: bogus/);
    expect(() => parseModelSuffix("emu-s:enable_web_search=sometimes", names)).toThrow(InvalidRequest);
    expect(() => parseModelSuffix("emu-s:disable_thinking=maybe", names)).toThrow(InvalidRequest);
  });

  it("overrides the body's parameters; the echo has every required member under the brand's names", () => {
    const acme = brandNames("acme");
    const { overrides } = parseModelSuffix("emu-s:enable_web_search=on", acme);
    const p = effectiveParameters({ enable_web_search: "off", include_acme_system_prompt: false }, overrides, acme, false);
    expect(p.enable_web_search).toBe("on");
    expect(p.include_system_prompt).toBe(false);
    const echo = parametersEcho(p, acme);
    for (const key of [
      "enable_e2ee",
      "enable_web_search",
      "enable_web_citations",
      "enable_web_scraping",
      "include_acme_system_prompt",
      "include_search_results_in_stream",
      "return_search_results_as_documents",
      "strip_thinking_response",
      "disable_thinking",
    ]) {
      expect(echo).toHaveProperty(key);
    }
    expect(effectiveParameters({}, {}, acme, true).enable_e2ee).toBe(true);
    expect(effectiveParameters({}, {}, acme, false).enable_e2ee).toBe(false);
  });
});

describe("test directives", () => {
  it("parses tokens, tool and error directives and removes them from the text", () => {
    const d = parseDirectives('Do it [[emu:tokens=42]] [[emu:tool=get_weather {"city":"Paris","nested":{"a":[1]}}]] [[emu:error]] now');
    expect(d.tokens).toBe(42);
    expect(d.error).toBe(true);
    expect(d.tools).toEqual([{ name: "get_weather", arguments: { city: "Paris", nested: { a: [1] } } }]);
    expect(d.text).toBe("Do it now");
    expect(parseDirectives("plain").error).toBe(false);
    expect(d.errorKind).toBe("upstream_error");
    expect(parseDirectives("x [[emu:error=model_overloaded]]")).toMatchObject({ error: true, errorKind: "model_overloaded", text: "x" });
    expect(parseDirectives("[[emu:error=content_filter]] y")).toMatchObject({ errorKind: "content_filter", refuse: false, text: "y" });
    expect(parseDirectives("no [[emu:refuse]] way")).toMatchObject({ error: false, refuse: true, text: "no way" });
    expect(() => parseDirectives("[[emu:tool=x {not json}]]")).toThrow(InvalidRequest);
  });

  it("decodes text files and leaves binary ones as a placeholder", () => {
    const data = `data:text/plain;base64,${Buffer.from("hello from a file").toString("base64")}`;
    expect(decodeFileData(data, "a.txt")).toBe("hello from a file");
    expect(decodeFileData("data:application/pdf;base64,JVBERi0=", "doc.pdf")).toBe("[file doc.pdf (application/pdf)]");
  });
});

describe("web search corpus", () => {
  it("finds documents by word overlap and cites them with ^n^ (live) or [REF]n[/REF] (seed) markers", () => {
    const docs = searchCorpus("What is the latest news about USDC on Base?");
    expect(docs.length).toBeGreaterThan(0);
    expect(docs.map((d) => d.url)).toContain("https://example.org/usdc");
    for (const d of docs) expect(d.url).toMatch(/^https:\/\/example\.org\//);
    const seed = answerFromDocuments("q", docs, "ref");
    expect(seed).toContain("[REF]1[/REF]");
    expect(seed).toContain(`[REF]${docs.length}[/REF]`);
    const live = answerFromDocuments("q", docs, "caret");
    expect(live).toContain("^1^");
    expect(live).toContain(`^${docs.length}^`);
    expect(live).not.toContain("[REF]");
    expect(answerFromDocuments("q", docs)).not.toMatch(/\[REF\]|\^\d/);
    expect(searchCorpus("zzzz qqqq")).toEqual([]);
  });

  it("auto mode searches only for fact-looking questions", () => {
    expect(looksLikeItNeedsSearch("latest Solana news")).toBe(true);
    expect(looksLikeItNeedsSearch("Who won?")).toBe(true);
    expect(looksLikeItNeedsSearch("Write a poem")).toBe(false);
  });
});

describe("reasoning signatures", () => {
  const secret = new Uint8Array(32).fill(7);
  const calls = [{ id: "call_1", name: "crypto_rpc", arguments: '{"network":"base-mainnet","method":"eth_blockNumber"}' }];

  it("verifies details sent back unchanged (argument key order does not matter)", () => {
    const details = buildReasoningDetails(secret, "Thinking about: blocks", calls);
    expect(details[0]).toMatchObject({ type: "reasoning.text", text: "Thinking about: blocks", index: 0 });
    expect(details[1]).toMatchObject({ type: "reasoning.encrypted", index: 1, format: "emu-v1" });
    expect(details[1]?.id).toMatch(/^rs_/);
    expect(verifyReasoningDetails(secret, details, calls)).toEqual({ ok: true });
    const reordered = [{ ...calls[0]!, arguments: '{"method":"eth_blockNumber","network":"base-mainnet"}' }];
    expect(verifyReasoningDetails(secret, details, reordered).ok).toBe(true);
  });

  it("rejects missing, altered text, altered calls, or a different secret", () => {
    const details = buildReasoningDetails(secret, "Thinking about: blocks", calls);
    expect(verifyReasoningDetails(secret, undefined, calls).ok).toBe(false);
    expect(verifyReasoningDetails(secret, [details[0]!], calls).ok).toBe(false);
    const altered = [{ ...details[0]!, text: "Thinking about: something else" }, details[1]!];
    expect(verifyReasoningDetails(secret, altered, calls).ok).toBe(false);
    expect(verifyReasoningDetails(secret, details, [{ ...calls[0]!, arguments: '{"network":"ethereum-mainnet"}' }]).ok).toBe(false);
    expect(verifyReasoningDetails(new Uint8Array(32).fill(8), details, calls).ok).toBe(false);
  });
});

describe("prompt cache", () => {
  const block = (key: string, tokens: number, breakpoint = false) => ({ key, tokens, breakpoint });

  it("with a key: creation on first sight, then the longest seen prefix is cached", () => {
    const cache = new PromptCache();
    const turn1 = [block("sys", 10), block("u1", 5)];
    expect(cache.lookupAndStore("k", "conv", turn1)).toEqual({ cachedTokens: 0, cacheCreationTokens: 15 });
    const turn2 = [...turn1, block("a1", 7), block("u2", 3)];
    expect(cache.lookupAndStore("k", "conv", turn2)).toEqual({ cachedTokens: 15, cacheCreationTokens: 10 });
    // other caller, same key: nothing cached
    expect(cache.lookupAndStore("other", "conv", turn2).cachedTokens).toBe(0);
  });

  it("without a key: only breakpoints (system prompts, cache_control) are cached", () => {
    const cache = new PromptCache();
    const req = [block("sys", 10, true), block("u1", 5)];
    expect(cache.lookupAndStore("k", undefined, req)).toEqual({ cachedTokens: 0, cacheCreationTokens: 10 });
    expect(cache.lookupAndStore("k", undefined, [block("sys", 10, true), block("u2", 8)])).toEqual({
      cachedTokens: 10,
      cacheCreationTokens: 0,
    });
    expect(cache.lookupAndStore("k", undefined, [block("u3", 4)])).toEqual({ cachedTokens: 0, cacheCreationTokens: 0 });
  });
});
