/**
 * The SSE parser (src/chat/sse.ts over eventsource-parser) and the chat stream read over it (src/chat/stream.ts,
 * stream-errors.ts, wire-check.ts): arbitrary bytes and near-valid streams, cut at random byte boundaries, end in
 * events or a typed error; a valid stream reads the same however it is cut (CRLF, CR, BOM, multi-byte UTF-8 split
 * across reads); an event past `maxEventBytes` ends in ResponseTooLargeError after a bounded read.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AIMessageChunk } from "@langchain/core/messages";
import { ChatService } from "../../src/chat/index.js";
import { parseSseJson } from "../../src/chat/sse.js";
import { mergeReasoningDetails } from "../../src/chat/convert.js";
import { ModelOverloadedError, ResponseFormatError, ResponseTooLargeError, StreamError } from "../../src/http/errors.js";
import { jsonValue, nearValid, startLoopback, streamOf, textMutation, typedOutcome, writeInPieces, type Loopback } from "./bounds.js";

const enc = new TextEncoder();

async function collect(body: ReadableStream<Uint8Array>, maxEventBytes?: number): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const e of parseSseJson(body, { maxEventBytes })) out.push(e);
  return out;
}

/** Event payloads a stream may carry (objects without a truthy `error`, which would be an in-band error). */
const payload = fc
  .dictionary(
    fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom("content", "é✓", "😀")),
    fc.oneof(jsonValue, fc.string({ unit: "binary", maxLength: 8 })),
    { maxKeys: 4 },
  )
  .filter((o) => !("error" in o));

const lineEnd = fc.constantFrom("\n", "\r\n", "\r");

/** One SSE text of the events, in the line endings, spacing, comments and BOM the format allows. */
const wellFormed = fc
  .record({
    events: fc.array(payload, { maxLength: 6 }),
    eol: lineEnd,
    space: fc.boolean(),
    bom: fc.boolean(),
    comments: fc.boolean(),
    multiline: fc.boolean(),
  })
  .map(({ events, eol, space, bom, comments, multiline }) => {
    const field = space ? "data: " : "data:";
    let text = bom ? "\uFEFF" : "";
    for (const e of events) {
      if (comments) text += `: keep-alive${eol}event: chunk${eol}id: 7${eol}`;
      // a multi-line data field is joined with "\n", which JSON reads as whitespace
      const json = multiline ? JSON.stringify(e, null, 1) : JSON.stringify(e);
      text += `${json
        .split("\n")
        .map((l) => field + l)
        .join(eol)}${eol}${eol}`;
    }
    text += `${field}[DONE]${eol}${eol}`;
    return { events, text };
  });

const cuts = fc.array(fc.nat(), { maxLength: 12 });

describe("parseSseJson", () => {
  it("reads a valid stream the same however its bytes are cut (CRLF, CR, BOM, split UTF-8)", async () => {
    await fc.assert(
      fc.asyncProperty(wellFormed, cuts, async ({ events, text }, at) => {
        const out = await typedOutcome(() => collect(streamOf(enc.encode(text), at)), 1_000);
        // as JSON carries them (-0 is sent as 0)
        expect(out).toEqual({ ok: true, value: JSON.parse(JSON.stringify(events)) });
      }),
      { numRuns: 150 },
    );
  });

  it("arbitrary bytes end in events or a StreamError / ResponseTooLargeError", async () => {
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 300 }),
      fc.string({ unit: "binary", maxLength: 200 }).map((s) => enc.encode(s)),
      fc
        .array(fc.constantFrom("data: ", "data:", "{", "}", "[DONE]", "\n", "\r", "\r\n", '"error"', ":", "1", "\uFEFF"), {
          maxLength: 40,
        })
        .map((parts) => enc.encode(parts.join(""))),
    );
    await fc.assert(
      fc.asyncProperty(bytes, cuts, fc.option(fc.integer({ min: 1, max: 64 })), async (body, at, max) => {
        const out = await typedOutcome(() => collect(streamOf(body, at), max ?? undefined), 1_000);
        if (!out.ok) expect([StreamError, ResponseTooLargeError].some((c) => out.error instanceof c)).toBe(true);
      }),
      { numRuns: 250 },
    );
  });

  it("near-valid streams (cut, spliced, events altered) end in events or a StreamError", async () => {
    const mutated = wellFormed.chain(({ text }) => textMutation(text));
    await fc.assert(
      fc.asyncProperty(mutated, cuts, async (text, at) => {
        const out = await typedOutcome(() => collect(streamOf(enc.encode(text), at)), 1_000);
        if (!out.ok) expect(out.error).toBeInstanceOf(StreamError);
      }),
      { numRuns: 150 },
    );
  });

  it("an event past maxEventBytes ends in ResponseTooLargeError; smaller ones parse", async () => {
    const sizes = fc.array(fc.integer({ min: 0, max: 600 }), { minLength: 1, maxLength: 5 });
    await fc.assert(
      fc.asyncProperty(sizes, fc.integer({ min: 16, max: 400 }), cuts, async (lengths, max, at) => {
        const events = lengths.map((n) => ({ v: "é".repeat(n) }));
        const text = `${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("")}data: [DONE]\n\n`;
        const out = await typedOutcome(() => collect(streamOf(enc.encode(text), at), max), 1_000);
        // an event's data is `{"v":"…"}` (8 characters around the string); the cap also holds a line still being
        // read, which adds `data: ` and its line end
        if (lengths.every((n) => n + 8 + 8 <= max)) expect(out).toEqual({ ok: true, value: events });
        if (lengths.some((n) => n + 8 > max)) {
          expect(out.ok).toBe(false);
          if (!out.ok) expect(out.error).toBeInstanceOf(ResponseTooLargeError);
        }
        if (!out.ok) expect(out.error).toBeInstanceOf(ResponseTooLargeError);
      }),
      { numRuns: 100 },
    );
  });

  it("an event whose data lines never end (no blank line) is refused after a bounded read", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4096 }), fc.integer({ min: 1, max: 200 }), lineEnd, async (max, line, eol) => {
        let pulled = 0;
        const piece = enc.encode(`data: ${"y".repeat(line)}${eol}`);
        const body = new ReadableStream<Uint8Array>({
          pull(c) {
            pulled += piece.length;
            c.enqueue(piece);
          },
        });
        const out = await typedOutcome(() => collect(body, max), 1_000);
        expect(!out.ok && out.error).toBeInstanceOf(ResponseTooLargeError);
        // the data held grows by the line and a "\n" per read: refused once past the cap, a read or two later
        expect(pulled / piece.length).toBeLessThanOrEqual(Math.ceil((max + 1) / (line + 1)) + 2);
      }),
      { numRuns: 50 },
    );
  });

  it("keep-alive comments between events never count toward maxEventBytes", async () => {
    const stream = fc.array(
      fc.record({ comments: fc.array(fc.string({ unit: "grapheme-ascii", maxLength: 40 }), { maxLength: 8 }), n: fc.nat(20) }),
      { maxLength: 6 },
    );
    await fc.assert(
      fc.asyncProperty(stream, cuts, async (parts, at) => {
        // every line (comment or event) within the cap of 64; the comments together far past it
        const events = parts.map(({ n }) => ({ v: "x".repeat(n) }));
        const text = `${parts
          .map(
            ({ comments, n }) =>
              `${comments.map((c) => `: ${c.replace(/[\r\n]/g, "")}\n`).join("")}data: ${JSON.stringify({ v: "x".repeat(n) })}\n\n`,
          )
          .join("")}: bye\n\ndata: [DONE]\n\n`;
        const out = await typedOutcome(() => collect(streamOf(enc.encode(text), at), 64), 1_000);
        expect(out).toEqual({ ok: true, value: events });
      }),
      { numRuns: 100 },
    );
  });

  // before: every character fed since the last event counted, comments too: 20 keep-alives of 14 characters, each
  // in its own read, ended a stream with maxEventBytes 100 in ResponseTooLargeError
  it("20 keep-alive comments before a small event pass maxEventBytes 100", async () => {
    const text = `${": keep-alive\n\n".repeat(20)}data: {"a":1}\n\ndata: [DONE]\n\n`;
    const reads = Array.from({ length: 20 }, (_, i) => (i + 1) * 14);
    const out = await typedOutcome(() => collect(streamOf(enc.encode(text), reads), 100), 1_000);
    expect(out).toEqual({ ok: true, value: [{ a: 1 }] });
  });

  it("a stream that never ends a line is refused after a bounded read, not buffered", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4096 }),
        fc.constantFrom("data: ", "id: ", ": ", "event: ", ""),
        fc.integer({ min: 1, max: 2048 }),
        async (max, prefix, piece) => {
          let pulled = 0;
          // endless: one line that never ends, in `piece`-sized reads
          const body = new ReadableStream<Uint8Array>({
            start(c) {
              c.enqueue(enc.encode(prefix));
            },
            pull(c) {
              pulled += piece;
              c.enqueue(enc.encode("x".repeat(piece)));
            },
          });
          const out = await typedOutcome(() => collect(body, max), 1_000);
          expect(out.ok).toBe(false);
          if (!out.ok) expect(out.error).toBeInstanceOf(ResponseTooLargeError);
          // at most the cap and a read (plus the stream's own read-ahead) before it stops
          expect(pulled).toBeLessThanOrEqual(max + 3 * piece + prefix.length);
        },
      ),
      { numRuns: 50 },
    );
  });
});

describe("ChatService.stream() over loopback", () => {
  let lb: Loopback;
  beforeAll(async () => {
    lb = await startLoopback();
  });
  afterAll(() => lb.close());

  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  });
  // a live-like stream: reasoning, text, a tool call, usage and cost on a `choices: []` chunk, citations
  const valid: unknown[] = [
    chunk({ role: "assistant", content: "", reasoning_content: "hm" }),
    {
      ...chunk({}),
      choices: [
        {
          index: 0,
          delta: { content: "Hé😀llo", reasoning_details: [{ type: "reasoning.text", index: 0, text: "a" }] },
          finish_reason: null,
          logprobs: { content: [{ token: "Hé", logprob: -0.5, bytes: [72], top_logprobs: [] }], refusal: null },
        },
      ],
    },
    chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "f", arguments: '{"a":' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: "1}" } }], thought_signature: "sig" }, "tool_calls"),
    {
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      choices: [],
      usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8, prompt_tokens_details: { cached_tokens: 1 } },
      cost: { usd: 0.001, diem: 0 },
      service_parameters: { web_search_citations: [{ title: "t", url: "https://a.example" }] },
    },
  ];

  const model = () =>
    new ChatService({ model: "m", apiKey: "k", baseUrl: lb.url, retry: false, abuseGuard: false, pacing: false, maxEventBytes: 4096 });

  async function drain(m: ChatService): Promise<AIMessageChunk | undefined> {
    let merged: AIMessageChunk | undefined;
    for await (const c of await m.stream("hi")) merged = merged ? merged.concat(c) : c;
    return merged;
  }

  it("near-valid chunks, cut anywhere, give message chunks or a typed error", async () => {
    const m = model();
    const streams = fc.record({
      events: nearValid(valid),
      tail: fc.constantFrom(
        "data: [DONE]\n\n",
        "",
        "data: [DONE]",
        'data: {"error":{"code":"model_overloaded","retry_after":1e400}}\n\n',
        'data: {"error":{"code":"model_overloaded","retry_after":1e306}}\n\n',
        'data: {"error":{"code":"model_overloaded","retry_after":-5}}\n\n',
      ),
      eol: lineEnd,
    });
    await fc.assert(
      fc.asyncProperty(streams, cuts, async ({ events, tail, eol }, at) => {
        const list = Array.isArray(events) ? events : [events];
        const text = list.map((e) => `data: ${JSON.stringify(e) ?? "null"}${eol}${eol}`).join("") + tail;
        lb.handler = (_req, res) => {
          res.writeHead(200, { "content-type": "text/event-stream" });
          return writeInPieces(res, enc.encode(text), at);
        };
        const out = await typedOutcome(() => drain(m), 3_000);
        // a value is one merged message; an in-band overload keeps a usable wait (a finite one, or none)
        if (out.ok) expect(typeof out.value?.content).toBe("string");
        else if (out.error instanceof ModelOverloadedError) {
          expect(out.error.retryAfterMs === undefined || Number.isFinite(out.error.retryAfterMs)).toBe(true);
          expect(out.error.resetAt === undefined || Number.isFinite(out.error.resetAt.getTime())).toBe(true);
        }
      }),
      { numRuns: 30 },
    );
  });

  it("near-valid chunks through the content-block event stream and outputVersion v1: events or a typed error", async () => {
    const m = model();
    await fc.assert(
      fc.asyncProperty(nearValid(valid), fc.boolean(), async (events, v1) => {
        const list = Array.isArray(events) ? events : [events];
        const text = `${list.map((e) => `data: ${JSON.stringify(e) ?? "null"}\n\n`).join("")}data: [DONE]\n\n`;
        lb.handler = (_req, res) => {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.end(text);
        };
        const out = await typedOutcome(async () => {
          if (v1) {
            let merged: AIMessageChunk | undefined;
            for await (const c of await m.stream("hi", { outputVersion: "v1" } as never)) merged = merged ? merged.concat(c) : c;
            return merged?.contentBlocks.length ?? 0;
          }
          let n = 0;
          for await (const event of (m as any).streamEvents("hi")) if (event.event) n++;
          return n;
        }, 3_000);
        if (out.ok) expect(out.value).toBeGreaterThanOrEqual(0);
      }),
      { numRuns: 30 },
    );
  });

  it("the valid stream itself reads whole however it is cut", async () => {
    const m = model();
    const text = `${valid.map((e) => `data: ${JSON.stringify(e)}\r\n\r\n`).join("")}data: [DONE]\r\n\r\n`;
    await fc.assert(
      fc.asyncProperty(cuts, async (at) => {
        lb.handler = (_req, res) => {
          res.writeHead(200, { "content-type": "text/event-stream" });
          return writeInPieces(res, enc.encode(text), at);
        };
        const out = await typedOutcome(() => drain(m), 3_000);
        expect(out.ok).toBe(true);
        if (out.ok) {
          expect(out.value?.content).toBe("Hé😀llo");
          expect(out.value?.tool_calls?.[0]).toMatchObject({ name: "f", args: { a: 1 } });
        }
      }),
      { numRuns: 10 },
    );
  });

  describe("found by the properties above", () => {
    // before: `logprobs: []` on one chunk and `0` on the next passed the shape check, and LangChain's merge of the
    // chunks' metadata inside .stream() threw a plain Error ("field[logprobs] already exists ... different type")
    it("logprobs of another shape on a chunk is a ResponseFormatError, not a merge Error", async () => {
      const m = model();
      const ch = (logprobs: unknown, content: string) => ({ id: "c", choices: [{ index: 0, delta: { content }, logprobs }] });
      lb.handler = (_req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(`data: ${JSON.stringify(ch([], "a"))}\n\ndata: ${JSON.stringify(ch(0, "b"))}\n\ndata: [DONE]\n\n`);
      };
      const out = await typedOutcome(() => drain(m), 3_000);
      expect(out.ok).toBe(false);
      if (!out.ok) expect(out.error).toBeInstanceOf(ResponseFormatError);
    });

    it("well-formed logprobs on every chunk merge", async () => {
      const m = model();
      const lp = (token: string) => ({ content: [{ token, logprob: -0.1, bytes: [1], top_logprobs: [] }], refusal: null });
      const ch = (content: string) => ({ id: "c", choices: [{ index: 0, delta: { content }, logprobs: lp(content) }] });
      lb.handler = (_req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(`data: ${JSON.stringify(ch("a"))}\n\ndata: ${JSON.stringify(ch("b"))}\n\ndata: [DONE]\n\n`);
      };
      const out = await typedOutcome(() => drain(m), 3_000);
      expect(out.ok && out.value?.content).toBe("ab");
    });

    // before: each delta of an undecided `web_search` call re-parsed all its arguments so far (quadratic): 16000
    // deltas of 25 characters took over 10 s
    it("a web_search call cut into 16000 deltas reads in linear time", { timeout: 60_000 }, async () => {
      const m = model();
      const args = JSON.stringify({ documents: [{ title: "t", url: "https://a.example", snippet: "y".repeat(400_000) }] });
      lb.handler = (_req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(searchCallStream(args, 16_000, "call_1"));
      };
      const start = performance.now();
      const out = await typedOutcome(() => drain(m), 10_000);
      expect(performance.now() - start).toBeLessThan(5_000);
      expect(out.ok && out.value?.response_metadata.web_search_documents).toHaveLength(1);
    });
  });

  /** A stream whose only tool call, named `web_search`, has its arguments cut into `pieces` deltas. */
  function searchCallStream(args: string, pieces: number, id: string): string {
    const size = Math.max(1, Math.ceil(args.length / pieces));
    const ev = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: "c", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    let text = ev({ tool_calls: [{ index: 0, id, type: "function", function: { name: "web_search", arguments: "" } }] });
    for (let i = 0; i < args.length; i += size)
      text += ev({ tool_calls: [{ index: 0, function: { arguments: args.slice(i, i + size) } }] });
    return `${text + ev({ content: "ok" }, "tool_calls")}data: [DONE]\n\n`;
  }

  it("a web_search call cut anywhere is the search documents when its arguments carry them, else a tool call", async () => {
    const m = model();
    const argsOf = fc.oneof(
      fc.array(fc.record({ title: fc.string({ maxLength: 8 }), url: fc.webUrl() }), { maxLength: 3 }).map((documents) => ({ documents })),
      fc.record({ query: fc.string({ maxLength: 20 }) }),
    );
    await fc.assert(
      fc.asyncProperty(argsOf, fc.integer({ min: 1, max: 60 }), async (args, pieces) => {
        const text = JSON.stringify(args);
        lb.handler = (_req, res) => {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.end(searchCallStream(text, pieces, "call_9"));
        };
        const out = await typedOutcome(() => drain(m), 3_000);
        expect(out.ok).toBe(true);
        if (!out.ok) return;
        if ("documents" in args) {
          expect(out.value?.response_metadata.web_search_documents).toHaveLength(args.documents.length);
          expect(out.value?.tool_calls ?? []).toHaveLength(0);
        } else expect(out.value?.tool_calls).toEqual([expect.objectContaining({ name: "web_search", args })]);
      }),
      { numRuns: 30 },
    );
  });
});

describe("reasoning_details merged across deltas", () => {
  /** the merge as specified: items with the same numeric index are one item, text pieces joined (the oracle) */
  function reference(acc: Record<string, unknown>[], delta: unknown[]): Record<string, unknown>[] {
    for (const item of delta as Record<string, unknown>[]) {
      if (!item || typeof item !== "object") continue;
      const at = typeof item.index === "number" ? acc.findIndex((x) => x.index === item.index) : -1;
      if (at === -1) {
        acc.push({ ...item });
        continue;
      }
      const target = acc[at]!;
      for (const [key, value] of Object.entries(item)) {
        if (value === undefined || value === null) continue;
        const prev = target[key];
        if (prev === undefined || prev === null) target[key] = value;
        else if (["text", "summary", "data"].includes(key) && typeof prev === "string" && typeof value === "string")
          target[key] = prev + value;
      }
    }
    return acc;
  }

  const detail = fc.oneof(
    fc.record(
      {
        type: fc.constantFrom("reasoning.text", "reasoning.encrypted"),
        index: fc.oneof(fc.nat(5), fc.constant("0")),
        text: fc.string({ maxLength: 3 }),
        data: jsonValue,
      },
      { requiredKeys: ["type"] },
    ),
    jsonValue,
  );

  it("merges as the reference does, delta after delta", () => {
    fc.assert(
      fc.property(fc.array(fc.array(detail, { maxLength: 3 }), { maxLength: 12 }), (deltas) => {
        let got: ReturnType<typeof mergeReasoningDetails> = [];
        let want: Record<string, unknown>[] = [];
        for (const d of deltas) {
          got = mergeReasoningDetails(got, structuredClone(d) as never);
          want = reference(want, structuredClone(d));
        }
        expect(got).toEqual(want);
      }),
      { numRuns: 300 },
    );
  });

  // before: each item searched the whole list for its index (quadratic): 40000 deltas with new indices took 3.5 s
  it("40000 deltas, each with a new index, merge in linear time", () => {
    const start = performance.now();
    let acc: ReturnType<typeof mergeReasoningDetails> = [];
    for (let i = 0; i < 40_000; i++) acc = mergeReasoningDetails(acc, [{ type: "reasoning.text", index: i, text: "a" }]);
    expect(acc).toHaveLength(40_000);
    expect(performance.now() - start).toBeLessThan(1_500);
  });
});
