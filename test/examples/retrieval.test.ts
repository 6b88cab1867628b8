/**
 * examples/retrieval.ts run in-process as a user would run it (embedded emulator): the retriever picks the
 * document that answers each question, the chat model answers from that context, and the embeddings' usage and
 * cost are reported.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main as retrieval } from "../../examples/retrieval.js";

// the example reads these to target a real deployment; the test always uses the embedded emulator
const ENV = ["SERVICE_BASE_URL", "SERVICE_API_KEY", "SERVICE_MODEL", "SERVICE_EMBEDDING_MODEL"];
const savedEnv: Record<string, string | undefined> = {};
beforeAll(() => {
  for (const name of ENV) {
    savedEnv[name] = process.env[name];
    delete process.env[name];
  }
});
afterAll(() => {
  for (const name of ENV) if (savedEnv[name] !== undefined) process.env[name] = savedEnv[name];
});

describe("examples/retrieval", () => {
  it("answers from the retrieved document and prints usage and cost", async () => {
    const lines: string[] = [];
    const r = await retrieval({ log: (line) => lines.push(...line.split("\n")) });
    expect(r.sources).toEqual(["embeddings.md"]);
    expect(r.answer).toContain("up to 2048 inputs per request");
    expect(r.indexUsage).toMatchObject({ requests: 1 }); // four documents, one batch
    expect(r.queryUsage).toMatchObject({ requests: 1 });
    expect(r.queryUsage!.promptTokens).toBeGreaterThan(0);
    expect(r.embeddingCostUsd).toBeGreaterThan(0);
    expect(lines[0]).toMatch(/^Q: /);
    expect(lines).toContain("retrieved: embeddings.md");
    expect(lines.at(-1)).toMatch(/^\(embeddings: \d+ tokens in 2 requests, about \$\d/);
  });

  it.each([
    ["What is the minimum USDC top-up for a wallet?", "billing.md"],
    ["How many requests per minute do embedding models allow?", "limits.md"],
    ["What must be sent back unchanged on tool-call turns?", "reasoning.md"],
  ])("retrieves the right document for %j", async (question, source) => {
    const r = await retrieval({ question, log: () => undefined });
    expect(r.sources).toEqual([source]);
  });
});
