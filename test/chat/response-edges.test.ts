/**
 * Response edges of spec 2.3/6 over real loopback HTTP, with a scripted server (shapes the emulator does not
 * produce on purpose): absent choices, in-band errors, cut streams, citations on the first chunk, the
 * search-documents tool call, n > 1, stop_reason/logprobs/prompt_logprobs, headers and deprecation.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { AIMessageChunk } from "@langchain/core/messages";
import { ChatService } from "../../src/chat/index.js";
import { createServiceContext } from "../../src/http/context.js";
import { ResponseFormatError, StreamError } from "../../src/http/errors.js";
import { chunk, completion, json, sse, startFixtureServer, type FixtureServer } from "./fixture-server.js";

/** response_metadata is `Record<string, unknown>`; tests read it freely */
const md = (m: { response_metadata: unknown }): any => m.response_metadata;

let fx: FixtureServer;
beforeAll(async () => {
  fx = await startFixtureServer();
});
afterAll(() => fx.close());

const citations = [{ title: "Doc A", url: "https://a.example", content: "alpha" }];
const headers = {
  "cf-ray": "ray-123",
  "x-service-version": "20250101.120000",
  "x-service-model-id": "fx-model",
  "x-ratelimit-remaining-requests": "49",
  "x-service-balance-usd": "9.5",
};

function model(fields: Record<string, unknown> = {}) {
  return new ChatService({ model: "fx-model", apiKey: "k", baseUrl: fx.url, retry: false, abuseGuard: false, ...fields });
}

async function drain(stream: AsyncIterable<AIMessageChunk>) {
  const chunks: AIMessageChunk[] = [];
  let merged: AIMessageChunk | undefined;
  for await (const c of stream) {
    chunks.push(c);
    merged = merged ? merged.concat(c) : c;
  }
  return { chunks, merged: merged! };
}

describe("absent choices", () => {
  it("JSON without choices is a ResponseFormatError carrying the body", async () => {
    fx.script = (_req, res) => json(res, { id: "x", object: "chat.completion", created: 1, model: "m", usage: {} });
    const err = await model()
      .invoke("hi")
      .catch((e) => e);
    expect(err).toBeInstanceOf(ResponseFormatError);
    expect(err.body).toMatchObject({ id: "x" });
  });
});

describe("stream errors", () => {
  it("an in-band {error} is raised as StreamError, never shown as text", async () => {
    fx.script = (_req, res) =>
      sse(res, [chunk({ role: "assistant", content: "par" }), { error: { message: "upstream died", code: "upstream" } }]);
    const seen: string[] = [];
    const err = await (async () => {
      for await (const c of await model().stream("hi")) seen.push(String(c.content));
    })().catch((e) => e);
    expect(err).toBeInstanceOf(StreamError);
    expect(err.message).toMatch(/upstream died/);
    expect(seen.join("")).not.toContain("upstream died");
    await expect(model({ streaming: true }).invoke("hi")).rejects.toBeInstanceOf(StreamError);
  });
  it("a stream cut before [DONE] is a StreamError", async () => {
    fx.script = (_req, res) => sse(res, [chunk({ role: "assistant", content: "half" })], { done: false });
    await expect(drain(await model().stream("hi"))).rejects.toThrow(/before \[DONE\]/);
  });
});

describe("metadata on JSON and stream", () => {
  const full: any = completion(
    {
      content: "Answer[REF]1[/REF]",
      reasoning_content: "why",
      reasoning_details: [{ type: "reasoning.text", text: "why", index: 0 }],
      tool_calls: [
        {
          id: "d1",
          type: "function",
          function: { name: "service_web_search_documents", arguments: JSON.stringify({ documents: citations }) },
        },
      ],
    },
    {
      cost: { usd: 0.0025, diem: 0.001 },
      prompt_logprobs: [{ token: "hi", logprob: -0.1 }],
      service_parameters: { enable_e2ee: true, enable_web_search: "on", web_search_citations: citations },
      usage: {
        prompt_tokens: 10,
        completion_tokens: 4,
        total_tokens: 14,
        prompt_tokens_details: { cached_tokens: 6, cache_creation_input_tokens: 2 },
        completion_tokens_details: { reasoning_tokens: 1 },
      },
    },
  );
  (full.choices[0] as any).stop_reason = "stop";
  (full.choices[0] as any).logprobs = { content: [{ token: "Answer", logprob: -0.01, top_logprobs: [] }] };

  const streamed = [
    // search results first (include_search_results_in_stream)
    {
      id: "chatcmpl-fixture",
      object: "chat.completion.chunk",
      created: 1,
      model: "fx-model",
      choices: [],
      service_parameters: { web_search_citations: citations },
    },
    chunk({ role: "assistant", reasoning_content: "w", reasoning_details: [{ type: "reasoning.text", text: "w", index: 0 }] }),
    chunk({ reasoning_content: "hy", reasoning_details: [{ type: "reasoning.text", text: "hy", index: 0 }] }),
    chunk({ content: "Answer" }, {}, null),
    chunk({ tool_calls: [{ index: 0, id: "d1", type: "function", function: { name: "service_web_search_documents", arguments: "" } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify({ documents: citations }) } }] }),
    {
      ...chunk({ content: "[REF]1[/REF]" }, {}, "stop"),
      choices: [{ index: 0, delta: { content: "[REF]1[/REF]" }, finish_reason: "stop", stop_reason: "stop", logprobs: null }],
    },
    {
      id: "chatcmpl-fixture",
      object: "chat.completion.chunk",
      created: 1,
      model: "fx-model",
      choices: [],
      usage: full.usage,
      cost: full.cost,
      prompt_logprobs: full.prompt_logprobs,
      service_parameters: { enable_e2ee: true, enable_web_search: "on", web_search_citations: citations },
    },
  ];

  beforeAll(() => {
    fx.script = (req, res) => (req.body.stream ? sse(res, streamed, { headers }) : json(res, full, headers));
  });

  it("JSON: echo, citations, documents, cost, usage details, headers, stop_reason, logprobs", async () => {
    const msg = await model().invoke("hi");
    expect(msg.content).toBe("Answer[REF]1[/REF]");
    expect(msg.tool_calls).toEqual([]); // the documents tool call is not a tool to run
    const meta = md(msg);
    expect(meta.service_parameters).toMatchObject({ enable_e2ee: true, web_search_citations: citations });
    expect(meta.web_search_citations).toEqual(citations);
    expect(meta.web_search_documents[0].pageContent).toBe("alpha");
    expect(meta.web_search_documents[0].metadata.url).toBe("https://a.example");
    expect(meta.cost).toEqual({ usd: 0.0025, diem: 0.001 });
    expect(meta.stop_reason).toBe("stop");
    expect(meta.logprobs.content[0].token).toBe("Answer");
    expect(meta.prompt_logprobs).toEqual(full.prompt_logprobs);
    expect(meta.headers).toMatchObject({ requestId: "ray-123", version: "20250101.120000", model: { id: "fx-model" } });
    expect(meta.headers.rateLimit.remainingRequests).toBe(49);
    expect(meta.headers.balance.usd).toBe(9.5);
    expect(msg.usage_metadata).toEqual({
      input_tokens: 10,
      output_tokens: 4,
      total_tokens: 14,
      input_token_details: { cache_read: 6, cache_creation: 2 },
      output_token_details: { reasoning: 1 },
    });
  });

  it("stream: search results are the first chunk; merged chunks equal the JSON answer, nothing doubled", async () => {
    const m = model();
    const json = await m.invoke("hi");
    const { chunks, merged } = await drain(await m.stream("hi"));
    expect(chunks[0]!.content).toBe("");
    expect(md(chunks[0]!).web_search_citations).toEqual(citations);
    expect(chunks.filter((c) => md(c).cost).length).toBe(1);
    expect(chunks.filter((c) => md(c).web_search_citations).length).toBe(1);
    expect(chunks.filter((c) => md(c).headers).length).toBe(1);

    expect(merged.content).toBe(json.content);
    expect(merged.additional_kwargs.reasoning_content).toBe(json.additional_kwargs.reasoning_content);
    expect(merged.additional_kwargs.reasoning_details).toEqual(json.additional_kwargs.reasoning_details);
    expect(merged.tool_calls).toEqual([]);
    for (const key of [
      "cost",
      "web_search_citations",
      "service_parameters",
      "finish_reason",
      "stop_reason",
      "model_name",
      "prompt_logprobs",
      "usage",
    ]) {
      expect(md(merged)[key], key).toEqual(md(json)[key]);
    }
    // the two answers may fall in different seconds: Date is the one header that may differ
    const { contentType: _a, date: _da, ...streamHeaders } = md(merged).headers;
    const { contentType: _b, date: _db, ...jsonHeaders } = md(json).headers;
    expect(streamHeaders).toEqual(jsonHeaders);
    expect(md(merged).web_search_documents.map((d: any) => d.pageContent)).toEqual(["alpha"]);
    expect(merged.usage_metadata).toMatchObject(json.usage_metadata!);
  });

  it("streaming invoke and streamEvents give the same final message", async () => {
    const json = await model().invoke("hi");
    const viaStream = await model({ streaming: true }).invoke("hi");
    expect(viaStream.content).toBe(json.content);
    expect(md(viaStream).cost).toEqual(md(json).cost);
    expect(viaStream.usage_metadata).toMatchObject(json.usage_metadata!);
    expect(viaStream.additional_kwargs.reasoning_details).toEqual(json.additional_kwargs.reasoning_details);

    const events = model().streamEvents("hi");
    const kinds: string[] = [];
    for await (const e of events) kinds.push(e.event);
    const msg = await events;
    expect(kinds[0]).toBe("message-start");
    expect(kinds.at(-1)).toBe("message-finish");
    expect(msg.text).toBe(json.content);
    expect(md(msg).cost).toEqual(md(json).cost);
    expect(md(msg).web_search_citations).toEqual(citations);
    expect(msg.usage_metadata).toMatchObject({ input_tokens: 10, output_tokens: 4, total_tokens: 14 });
    const reasoning = (msg.content as any[]).find((b) => b.type === "reasoning");
    expect(reasoning.reasoning).toBe("why");
    expect(reasoning.reasoning_details).toEqual(json.additional_kwargs.reasoning_details);
  });
});

describe("n > 1", () => {
  it("generate exposes every choice (JSON and stream)", async () => {
    fx.script = (req, res) => {
      if (req.body.stream) {
        return sse(res, [
          {
            ...chunk({}),
            choices: [
              { index: 0, delta: { role: "assistant", content: "A" }, finish_reason: null },
              { index: 1, delta: { role: "assistant", content: "B" }, finish_reason: null },
            ],
          },
          {
            ...chunk({}),
            choices: [
              { index: 1, delta: { content: "2" }, finish_reason: "stop" },
              { index: 0, delta: { content: "1" }, finish_reason: "stop" },
            ],
          },
          { id: "x", choices: [], usage: { prompt_tokens: 1, completion_tokens: 4, total_tokens: 5 }, cost: { usd: 1, diem: 0 } },
        ]);
      }
      const body: any = completion({ content: "A1" });
      body.choices.push({ index: 1, finish_reason: "stop", logprobs: null, message: { role: "assistant", content: "B2" } });
      return json(res, body);
    };
    for (const streaming of [false, true]) {
      const result = await model({ n: 2, streaming }).generate([["hi"]]);
      expect(result.generations[0]!.map((g) => g.text)).toEqual(["A1", "B2"]);
      expect((result.generations[0]![0] as any).message.response_metadata.cost).toEqual(streaming ? { usd: 1, diem: 0 } : undefined);
    }
    expect(fx.requests.at(-1)!.body.n).toBe(2);
  });
});

describe("headers", () => {
  it("prints a deprecation warning once per model per context", async () => {
    const context = createServiceContext(); // its own: no warning of another test's counts
    fx.script = (_req, res) =>
      json(res, completion({ content: "old" }), {
        "x-service-model-id": "fx-old",
        "x-service-model-deprecation-warning": "fx-old retires soon",
        "x-service-model-deprecation-date": "2030-01-01",
      });
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const m = model({ context });
      const msg = await m.invoke("hi");
      await m.invoke("hi");
      await model({ context }).invoke("again");
      expect(md(msg).headers.deprecation).toEqual({ warning: "fx-old retires soon", date: "2030-01-01" });
      const ours = warn.mock.calls.filter((c) => String(c[0]).includes("fx-old"));
      expect(ours).toHaveLength(1);
      expect(String(ours[0]![0])).toContain("2030-01-01");
    } finally {
      warn.mockRestore();
    }
  });
});

describe("legacy think tags", () => {
  it("are split into reasoning on both paths unless turned off", async () => {
    fx.script = (req, res) =>
      req.body.stream
        ? sse(res, [
            chunk({ role: "assistant", content: "<thi" }),
            chunk({ content: "nk>plan</th" }),
            chunk({ content: "ink>\nDone" }, {}, "stop"),
          ])
        : json(res, completion({ content: "<think>plan</think>\nDone" }));
    const a = await model().invoke("hi");
    const b = (await drain(await model().stream("hi"))).merged;
    expect([a.content, a.additional_kwargs.reasoning_content]).toEqual(["Done", "plan"]);
    expect([b.content, b.additional_kwargs.reasoning_content]).toEqual(["Done", "plan"]);
    const raw = await model({ splitThinkTags: false }).invoke("hi");
    expect(raw.content).toBe("<think>plan</think>\nDone");
  });
});

describe("what reaches the wire", () => {
  const all = {
    characterSlug: "alan-watts",
    stripThinkingResponse: true,
    disableThinking: false,
    enableWebSearch: "auto",
    enableWebScraping: true,
    enableXSearch: false,
    enableWebCitations: true,
    includeSearchResultsInStream: true,
    returnSearchResultsAsDocuments: true,
    includeServiceSystemPrompt: false,
    enableE2ee: false,
  } as const;

  it("every serviceParameters member under the brand's name; call options override; pass-through fields", async () => {
    fx.script = (_req, res) => json(res, completion({ content: "ok" }));
    for (const brand of ["service", "acme"]) {
      const m = model({ brand, serviceParameters: all, promptCacheKey: "ctor", modelKwargs: { max_temp: 1.2 } });
      await m.invoke("hi", { serviceParameters: { enableWebSearch: "off" }, promptCacheKey: "call", extraBody: { custom: [1, 2] } });
      const body = fx.requests.at(-1)!.body;
      expect(body[`${brand}_parameters`]).toEqual({
        character_slug: "alan-watts",
        strip_thinking_response: true,
        disable_thinking: false,
        enable_web_search: "off",
        enable_web_scraping: true,
        enable_x_search: false,
        enable_web_citations: true,
        include_search_results_in_stream: true,
        return_search_results_as_documents: true,
        [`include_${brand}_system_prompt`]: false,
        enable_e2ee: false,
      });
      expect(body.prompt_cache_key).toBe("call");
      expect(body.max_temp).toBe(1.2);
      expect(body.custom).toEqual([1, 2]);
      expect(body.stream).toBe(false);
      expect(fx.requests.at(-1)!.headers.authorization).toBe("Bearer k");
    }
  });

  it("streams ask for usage; invalid values never reach the network", async () => {
    fx.script = (_req, res) => sse(res, [chunk({ role: "assistant", content: "x" }, {}, "stop")]);
    await drain(await model().stream("hi"));
    expect(fx.requests.at(-1)!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const before = fx.requests.length;
    await expect(model().invoke("hi", { serviceParameters: { enableWebSearch: true as never } })).rejects.toThrow(/enableWebSearch/);
    await expect(model().invoke("hi", { serviceParameters: { nope: 1 } as never })).rejects.toThrow(/nope/);
    expect(() => model({ model: "fx-model:enable_x_search=true" })).toThrow(/not accepted/);
    expect(fx.requests.length).toBe(before);
  });
});
