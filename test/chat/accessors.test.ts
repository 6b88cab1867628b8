/** Typed accessors for what ChatService puts in `response_metadata` (README: `mapCitations(msg.text, webSearchCitations(msg))`). */
import { AIMessage, AIMessageChunk } from "@langchain/core/messages";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import {
  ChatService,
  costOf,
  mapCitations,
  responseHeadersOf,
  webSearchCitations,
  webSearchDocuments,
  type ServiceCost,
  type WebSearchCitation,
} from "../../src/chat/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";

describe("accessors on hand-made messages", () => {
  it("return the documented shapes and ignore what does not fit", () => {
    const msg = new AIMessage({
      content: "x",
      response_metadata: {
        cost: { usd: 0.01, diem: 0 },
        web_search_citations: [{ title: "A", url: "https://a.example" }, "junk", { title: "no url" }],
        web_search_documents: [{ pageContent: "p", metadata: {} }, 3],
        headers: { requestId: "r1" },
      },
    });
    expectTypeOf(webSearchCitations(msg)).toEqualTypeOf<WebSearchCitation[]>();
    expectTypeOf(costOf(msg)).toEqualTypeOf<ServiceCost | undefined>();
    expect(webSearchCitations(msg)).toEqual([{ title: "A", url: "https://a.example" }]);
    expect(webSearchDocuments(msg)).toHaveLength(1);
    expect(costOf(msg)).toEqual({ usd: 0.01, diem: 0 });
    expect(responseHeadersOf(msg)?.requestId).toBe("r1");
  });

  it("are empty or undefined when the service said nothing", () => {
    const msg = new AIMessageChunk({ content: "x" });
    expect(webSearchCitations(msg)).toEqual([]);
    expect(webSearchDocuments(msg)).toEqual([]);
    expect(costOf(msg)).toBeUndefined();
    expect(costOf(new AIMessage({ content: "", response_metadata: { cost: { usd: "1" } } }))).toBeUndefined();
    expect(responseHeadersOf(undefined)).toBeUndefined();
  });
});

describe("accessors on real responses (emulator)", () => {
  // live marks citations ^n^ and streams them only when asked, at the end; the seed marks [REF]n[/REF]
  const emus: Record<"live" | "seed", Emulator> = {} as never;
  beforeAll(async () => {
    emus.live = await startEmulator({ apiKeys: [{ key: "k1", usd: 5 }] });
    emus.seed = await startEmulator({ apiKeys: [{ key: "k1", usd: 5 }], mode: "seed" });
  });
  afterAll(async () => {
    await Promise.all([emus.live.close(), emus.seed.close()]);
  });

  for (const mode of ["live", "seed"] as const) {
    for (const streaming of [false, true]) {
      it(`read citations, cost and headers (${mode}, ${streaming ? "stream" : "invoke"})`, async () => {
        const model = new ChatService({
          model: "emu-s",
          baseUrl: emus[mode].url,
          apiKey: "k1",
          streaming,
          serviceParameters: { enableWebSearch: "on", enableWebCitations: true, includeSearchResultsInStream: true },
        });
        const msg = await model.invoke("Tell me about USDC on Base");
        expect(msg.text).toContain(mode === "live" ? "^1^" : "[REF]1[/REF]");
        const citations = webSearchCitations(msg);
        expect(citations.length).toBeGreaterThan(0);
        const mapped = mapCitations(msg.text, citations);
        expect(mapped.cited).toEqual(citations);
        expect(mapped.text).not.toMatch(/\^\d|\[REF\]/);
        const cost = costOf(msg);
        expect(cost).toBeDefined();
        expect(cost!.usd + cost!.diem).toBeGreaterThan(0); // the key pays from its DIEM balance first
        expect(responseHeadersOf(msg)).toBeDefined();
      });
    }
  }
});
