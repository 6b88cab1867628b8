/**
 * The chat route as the live service behaves (the default `mode: "live"`), each difference with its own option
 * winning over the mode: the synthetic search-documents call, `^n^` citations, search results at the end of a
 * stream, in-band stream errors and refusals, and the ledger's rows per request (add-on charges, refunds).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ConfigurationError } from "../../src/http/errors.js";
import { REFUSAL_CUT_TOKENS } from "../../packages/langchain-service-emulator/src/models/choice.js";
import { WEB_SEARCH_ADD_ON_ID } from "../../packages/langchain-service-emulator/src/routes/chat.js";
import { chat, chatStream, KEY, startModelsEmulator, streamedContent, user } from "./helpers.js";

let live: Emulator;
beforeAll(async () => {
  live = await startModelsEmulator();
});
afterAll(async () => {
  await live?.close();
});

const search = (extra: Record<string, unknown> = {}) => ({ enable_web_search: "on", ...extra });
const docsBody = {
  model: "emu-s",
  messages: [user("x402 payment protocol")],
  service_parameters: search({ return_search_results_as_documents: true }),
};
const dataEvents = (events: any[]) => events.filter((e) => e !== "[DONE]");

describe("return_search_results_as_documents", () => {
  it("live: a web_search_call tool call with {documents: [{id, title, url, snippet, published_at}]} and finish_reason tool_calls", async () => {
    const r = await chat(live, docsBody);
    const choice = r.json.choices[0];
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.content).toContain("x402");
    expect(choice.message.tool_calls).toHaveLength(1);
    const call = choice.message.tool_calls[0];
    expect(call).toMatchObject({ id: "web_search_call", type: "function", function: { name: "web_search" } });
    const { documents } = JSON.parse(call.function.arguments);
    expect(Object.keys(documents[0]).sort()).toEqual(["id", "published_at", "snippet", "title", "url"]);
    expect(documents[0].url).toBe("https://example.org/x402");
  });

  it("live stream: the call is one delta.tool_calls chunk before the content; the finish chunk says tool_calls", async () => {
    const { events } = await chatStream(live, docsBody);
    const chunks = dataEvents(events).filter((e) => e.choices?.length);
    const callAt = chunks.findIndex((e) => e.choices[0].delta?.tool_calls);
    const contentAt = chunks.findIndex((e) => e.choices[0].delta?.content);
    expect(callAt).toBeGreaterThan(-1);
    expect(callAt).toBeLessThan(contentAt);
    expect(chunks.filter((e) => e.choices[0].delta?.tool_calls)).toHaveLength(1);
    const call = chunks[callAt].choices[0].delta.tool_calls[0];
    expect(call).toMatchObject({ index: 0, id: "web_search_call", function: { name: "web_search" } });
    expect(JSON.parse(call.function.arguments).documents.length).toBeGreaterThan(0);
    expect(chunks.at(-1).choices[0].finish_reason).toBe("tool_calls");
  });

  it("the searchDocuments option wins over the mode, both ways", async () => {
    const seedShaped = await startModelsEmulator({ chat: { searchDocuments: "seed" } });
    const liveShaped = await startModelsEmulator({ mode: "seed", chat: { searchDocuments: "live" } });
    try {
      const a = (await chat(seedShaped, docsBody)).json.choices[0];
      expect(a.message.tool_calls[0].function.name).toBe("service_web_search_documents");
      expect(a.finish_reason).toBe("stop");
      const b = (await chat(liveShaped, docsBody)).json.choices[0];
      expect(b.message.tool_calls[0].id).toBe("web_search_call");
      expect(b.finish_reason).toBe("tool_calls");
    } finally {
      await Promise.all([seedShaped.close(), liveShaped.close()]);
    }
  });
});

describe("citations", () => {
  const body = {
    model: "emu-s",
    messages: [user("Tell me about USDC on Base")],
    service_parameters: search({ enable_web_citations: true }),
  };

  it("live marks citations ^n^; citationMarkers wins over the mode", async () => {
    const text = (await chat(live, body)).json.choices[0].message.content;
    expect(text).toMatch(/\^1\^/);
    expect(text).not.toContain("[REF]");
    const ref = await startModelsEmulator({ chat: { citationMarkers: "ref" } });
    const caret = await startModelsEmulator({ mode: "seed", chat: { citationMarkers: "caret" } });
    try {
      expect((await chat(ref, body)).json.choices[0].message.content).toContain("[REF]1[/REF]");
      expect((await chat(caret, body)).json.choices[0].message.content).toMatch(/\^1\^/);
    } finally {
      await Promise.all([ref.close(), caret.close()]);
    }
  });

  it("live stream: citations only with include_search_results_in_stream, in a choices: [] chunk just before [DONE]", async () => {
    const stream = { model: "emu-s", messages: [user("news about Ethereum")], service_parameters: search() };
    const plain = await chatStream(live, stream);
    expect(dataEvents(plain.events).filter((e) => e.service_parameters?.web_search_citations)).toEqual([]);

    const asked = await chatStream(live, { ...stream, service_parameters: search({ include_search_results_in_stream: true }) });
    const withCitations = dataEvents(asked.events).filter((e) => e.service_parameters?.web_search_citations);
    expect(withCitations).toHaveLength(1);
    expect(asked.events.at(-2)).toBe(withCitations[0]);
    expect(withCitations[0].choices).toEqual([]);
    expect(withCitations[0].service_parameters.web_search_citations[0].url).toBe("https://example.org/ethereum");
    expect(asked.events.at(-1)).toBe("[DONE]");
    // the usage chunk comes before it
    expect(asked.events.at(-3).usage).toBeDefined();
  });

  it("streamSearchResults: 'seed' in live mode puts them first again", async () => {
    const emu = await startModelsEmulator({ chat: { streamSearchResults: "seed" } });
    try {
      const { events } = await chatStream(emu, {
        model: "emu-s",
        messages: [user("news about Ethereum")],
        service_parameters: search({ include_search_results_in_stream: true }),
      });
      expect(events[0].service_parameters.web_search_citations.length).toBeGreaterThan(0);
    } finally {
      await emu.close();
    }
  });
});

describe("in-band stream errors and refusals", () => {
  const long = "a long enough answer to need several chunks";

  it("[[emu:error=model_overloaded]]: after the first content chunk, {code, retry_after}, then [DONE]; JSON: 429 with Retry-After", async () => {
    const { events } = await chatStream(live, { model: "emu-s", messages: [user(`${long} [[emu:error=model_overloaded]]`)] });
    const at = events.findIndex((e) => e !== "[DONE]" && e.error);
    expect(events.slice(0, at).filter((e) => e.choices?.[0]?.delta?.content)).toHaveLength(1);
    expect(events[at].error).toMatchObject({ code: "model_overloaded", retry_after: 1 });
    expect(events.slice(at + 1)).toEqual(["[DONE]"]);
    const json = await chat(live, { model: "emu-s", messages: [user("hi [[emu:error=model_overloaded]]")] });
    expect(json.status).toBe(429);
    expect(json.headers.get("retry-after")).toBe("1");
    expect(json.json.error).toMatch(/overloaded/);
  });

  it("[[emu:error=content_filter]]: type content_filter_error, code content_blocked_by_provider, after content", async () => {
    const { events } = await chatStream(live, { model: "emu-s", messages: [user(`${long} [[emu:error=content_filter]]`)] });
    const at = events.findIndex((e) => e !== "[DONE]" && e.error);
    expect(at).toBeGreaterThan(0);
    expect(events[at].error).toMatchObject({ type: "content_filter_error", code: "content_blocked_by_provider" });
    expect(events.slice(at + 1)).toEqual(["[DONE]"]);
  });

  it("[[emu:refuse]]: a 200 cut after a few tokens with finish_reason content_filter, JSON and stream", async () => {
    const r = await chat(live, { model: "emu-s", messages: [user(`${long} [[emu:refuse]]`)] });
    expect(r.status).toBe(200);
    expect(r.json.choices[0].finish_reason).toBe("content_filter");
    expect(r.json.choices[0].message.content).toBe("Echo: a long");
    expect(r.json.usage.completion_tokens).toBe(REFUSAL_CUT_TOKENS);
    const { events } = await chatStream(live, { model: "emu-s", messages: [user(`${long} [[emu:refuse]]`)] });
    expect(streamedContent(events)).toBe("Echo: a long");
    const finish = dataEvents(events).filter((e) => e.choices?.[0]?.finish_reason);
    expect(finish.map((e) => e.choices[0].finish_reason)).toEqual(["content_filter"]);
    expect(events.at(-1)).toBe("[DONE]");
  });

  it("chat.overloadedStreams: the first N streams get model_overloaded before any content, uncharged; then served", async () => {
    const emu = await startModelsEmulator({ chat: { overloadedStreams: 2, overloadedRetryAfterSeconds: 0.5 } });
    try {
      const before = emu.ledger.apiKey(KEY)!.entries.length;
      // a JSON request is neither refused nor counted
      expect((await chat(emu, { model: "emu-s", messages: [user("hi")] })).status).toBe(200);
      for (let i = 0; i < 2; i++) {
        const { status, events } = await chatStream(emu, { model: "emu-s", messages: [user("hi")] });
        expect(status).toBe(200);
        expect(events).toHaveLength(3);
        expect(events[0].choices[0].delta).toEqual({ role: "assistant", content: "" });
        expect(events[1].error).toMatchObject({ code: "model_overloaded", retry_after: 0.5 });
        expect(events[2]).toBe("[DONE]");
      }
      expect(emu.ledger.apiKey(KEY)!.entries.length).toBe(before + 1);
      const served = await chatStream(emu, { model: "emu-s", messages: [user("hi")] });
      expect(streamedContent(served.events)).toBe("Echo: hi");
    } finally {
      await emu.close();
    }
  });

  it("rejects bad chat options at start", async () => {
    await expect(startEmulator({ chat: { citationMarkers: "x" as never } })).rejects.toBeInstanceOf(ConfigurationError);
    await expect(startEmulator({ chat: { overloadedStreams: -1 } })).rejects.toBeInstanceOf(ConfigurationError);
  });
});

describe("ledger rows per request", () => {
  it("web search writes two CHARGE rows under the response id: the model's and the add-on's, summing to the cost", async () => {
    const r = await chat(live, { model: "emu-s", messages: [user("Tell me about USDC on Base")], service_parameters: search() });
    const rows = live.ledger.apiKey(KEY)!.entries.filter((e) => e.requestId === r.json.id);
    expect(rows.map((e) => [e.type, e.modelId])).toEqual([
      ["CHARGE", "emu-s"],
      ["CHARGE", WEB_SEARCH_ADD_ON_ID],
    ]);
    expect(rows[1]!.amount).toBe(-0.01);
    const total = -rows.reduce((sum, e) => sum + e.amount, 0);
    expect(total).toBeCloseTo(r.json.cost.usd + r.json.cost.diem, 9);
  });

  it("live: a stream failing in-band is charged, then refunded in one REFUND row; balances (USD and DIEM) come back", async () => {
    const emu = await startModelsEmulator({ apiKeys: [{ key: KEY, usd: 5, diem: 0.005 }] });
    try {
      const account = emu.ledger.apiKey(KEY)!;
      const { events } = await chatStream(emu, {
        model: "emu-s",
        messages: [user("news about Ethereum [[emu:error]]")],
        service_parameters: search(),
      });
      expect(events.some((e) => e !== "[DONE]" && e.error)).toBe(true);
      const charges = account.entries.filter((e) => e.type === "CHARGE");
      expect(charges).toHaveLength(2);
      const refund = account.entries.at(-1)!;
      expect(refund).toMatchObject({ type: "REFUND", requestId: charges[0]!.requestId });
      expect(refund.modelId).toBeUndefined(); // several charges: no one model (null in /x402/transactions)
      expect(refund.amount).toBeCloseTo(-(charges[0]!.amount + charges[1]!.amount), 9);
      expect(refund.diem).toBe(0.005);
      expect(account.usd).toBe(5);
      expect(account.diem).toBe(0.005);
      const totals = emu.ledger.totals(account);
      expect(totals).toMatchObject({ charges: 2, refunds: 1 });
      expect(totals.refunded).toBe(totals.charged);

      // one charge: the REFUND row names the model; refunding twice gives nothing more
      await chatStream(emu, { model: "emu-s", messages: [user("plain [[emu:error=content_filter]]")] });
      const last = account.entries.at(-1)!;
      expect(last).toMatchObject({ type: "REFUND", modelId: "emu-s" });
      expect(emu.ledger.refund(account, last.requestId!)).toBeUndefined();
      expect(emu.ledger.totals(account).refunds).toBe(2);
    } finally {
      await emu.close();
    }
  });

  it("refundFailedStreams: false (the seed's way) never charges a failing stream", async () => {
    const emu = await startModelsEmulator({ chat: { refundFailedStreams: false } });
    try {
      await chatStream(emu, { model: "emu-s", messages: [user("hi there [[emu:error]]")] });
      expect(emu.ledger.apiKey(KEY)!.entries).toEqual([]);
    } finally {
      await emu.close();
    }
  });
});
