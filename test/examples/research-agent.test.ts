/**
 * examples/research-agent.ts run in-process as a user would (embedded emulator, API key): the agent searches
 * with web_search, reads the top result with web_scrape, and answers from the page it read.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolMessage } from "@langchain/core/messages";
import { main } from "../../examples/research-agent.js";

const ENV = ["SERVICE_BASE_URL", "SERVICE_API_KEY", "SERVICE_MODEL", "TOPIC"];
const saved: Record<string, string | undefined> = {};
beforeAll(() => {
  for (const name of ENV) (saved[name] = process.env[name]), delete process.env[name];
});
afterAll(() => {
  for (const name of ENV) if (saved[name] !== undefined) process.env[name] = saved[name];
});

describe("example: research-agent", () => {
  it("searches, reads the top page, and answers from it", async () => {
    const lines: string[] = [];
    const r = await main({ log: (l) => lines.push(...l.split("\n")) });
    expect(r.results[0]).toEqual({ title: "The x402 payment protocol", url: "https://example.org/x402" });
    expect(r.page?.url).toBe("https://example.org/x402");
    expect(r.page?.content).toContain("402 Payment Required");
    // the tools really ran, each once, through the agent loop
    const tools = r.messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m)).map((m) => m.name);
    expect(tools).toEqual(["web_search", "web_scrape"]);
    // the answer is built from what the page said
    expect(r.answer).toContain("web_scrape");
    expect(r.answer).toContain("402");
    expect(lines.some((l) => l.startsWith("  web_search -> The x402 payment protocol <https://example.org/x402>"))).toBe(true);
    expect(lines.at(-1)).toMatch(/^< /);
  });
});
