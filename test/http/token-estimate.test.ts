/**
 * The token estimate a face hands the pacing layer: input (a quarter of ASCII characters, one per other character,
 * 4 a message, tool calls and definitions), plus the completion cap per choice when set; media parts a flat guess.
 */
import { describe, expect, it } from "vitest";
import { estimateChatTokens, estimateEmbeddingTokens, estimateTextTokens } from "../../src/http/token-estimate.js";

describe("token estimate", () => {
  it("text: a quarter of its ASCII characters, one token per other character (a surrogate pair is one)", () => {
    expect(estimateTextTokens("")).toBe(0);
    expect(estimateTextTokens("abcdefgh")).toBe(2);
    expect(estimateTextTokens("abcdefghi")).toBe(3);
    expect(estimateTextTokens("東京は晴れ")).toBe(5);
    expect(estimateTextTokens("ok 👍")).toBe(2);
  });

  it("chat: messages, tool calls and tools, plus max_completion_tokens (else max_tokens) per choice", () => {
    const messages = [
      { role: "system", content: "be brief" },
      {
        role: "user",
        content: [
          { type: "text", text: "describe this" },
          { type: "image_url", image_url: { url: `data:image/png;base64,${"A".repeat(100_000)}` } },
        ],
      },
    ];
    const input = 4 + 2 + 4 + 4 + 100;
    expect(estimateChatTokens({ model: "m", messages })).toBe(input);
    expect(estimateChatTokens({ model: "m", messages, max_tokens: 50 })).toBe(input + 50);
    expect(estimateChatTokens({ model: "m", messages, max_tokens: 50, max_completion_tokens: 20, n: 3 })).toBe(input + 60);
    const tools = [{ type: "function", function: { name: "f", parameters: {} } }];
    expect(estimateChatTokens({ messages: [], tools })).toBe(estimateTextTokens(JSON.stringify(tools)));
    const call = [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }];
    expect(estimateChatTokens({ messages: [{ role: "assistant", content: null, tool_calls: call }] })).toBe(
      4 + estimateTextTokens(JSON.stringify(call)),
    );
  });

  it("embeddings: the input texts", () => {
    expect(estimateEmbeddingTokens(["abcd", "efgh", "東"])).toBe(3);
  });
});
