/**
 * The SSE parser's limits, over real loopback HTTP: one big event parses (the parser scans each byte once),
 * an event past `maxEventBytes` is refused with a typed error instead of being buffered without end, and
 * lone-CR line endings (legal SSE) are read like LF and CRLF, also when a CRLF is split between two reads.
 * Speed is measured in bench/sse.ts, not here.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerResponse } from "node:http";
import { ChatService } from "../../src/chat/index.js";
import { parseSseJson } from "../../src/chat/sse.js";
import { ResponseTooLargeError, StreamError } from "../../src/http/errors.js";
import { chunk, startFixtureServer, type FixtureServer } from "../chat/fixture-server.js";

let fx: FixtureServer;
beforeAll(async () => {
  fx = await startFixtureServer();
});
afterAll(() => fx.close());

const BOUND = 20_000;
const MB = 1024 * 1024;

/** writes `parts` one by one, each after the previous was flushed and a short pause (separate reads) */
async function writeParts(res: ServerResponse, parts: (string | Buffer)[], pauseMs = 5): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream" });
  for (const p of parts) {
    if (!res.write(p)) await new Promise((r) => res.once("drain", r));
    if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
  }
  res.end();
}

/** one event whose JSON holds a string of `size` bytes, sent in 64 KiB writes */
function bigEventParts(size: number): Buffer[] {
  const body = Buffer.from(`data: {"v": "${"x".repeat(size)}"}\n\ndata: [DONE]\n\n`);
  const parts: Buffer[] = [];
  for (let i = 0; i < body.length; i += 64 * 1024) parts.push(body.subarray(i, i + 64 * 1024));
  return parts;
}

async function events(options: { maxEventBytes?: number } = {}): Promise<any[]> {
  const response = await fetch(`${fx.url}/sse`);
  const out: any[] = [];
  for await (const e of parseSseJson(response.body, options)) out.push(e);
  return out;
}

async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("resolved, expected a rejection");
}

describe("event size", () => {
  it("a 16 MB event parses (default cap)", { timeout: BOUND }, async () => {
    fx.script = (_req, res) => writeParts(res, bigEventParts(16 * MB), 0);
    const got = await events();
    expect(got).toHaveLength(1);
    expect(got[0].v.length).toBe(16 * MB);
  });

  it("an event past maxEventBytes is refused with ResponseTooLargeError naming the option", { timeout: BOUND }, async () => {
    fx.script = (_req, res) => writeParts(res, bigEventParts(2 * MB), 0);
    const err = await rejection(events({ maxEventBytes: MB }));
    expect(err).toBeInstanceOf(ResponseTooLargeError);
    expect(err.message).toContain("maxEventBytes");
    expect(err.limit).toBe(MB);
  });

  it("a line that never ends is refused at the cap, not buffered forever", { timeout: BOUND }, async () => {
    let stop = false;
    fx.script = async (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.on("close", () => (stop = true));
      const piece = "z".repeat(64 * 1024);
      // at most 64 MB, so a test that fails still ends
      for (let i = 0; i < 1024 && !stop; i++) {
        if (!res.write(piece)) await new Promise((r) => res.once("drain", r));
      }
      res.end();
    };
    const err = await rejection(events({ maxEventBytes: MB }));
    expect(err).toBeInstanceOf(ResponseTooLargeError);
  });

  it("many data lines of one event count together", { timeout: BOUND }, async () => {
    const line = `data: ${"q".repeat(1000)}\n`;
    fx.script = (_req, res) => writeParts(res, [`${line.repeat(2000)}\n`, "data: [DONE]\n\n"]);
    expect(await rejection(events({ maxEventBytes: MB }))).toBeInstanceOf(ResponseTooLargeError);
  });

  it("small events under a small cap pass", { timeout: BOUND }, async () => {
    fx.script = (_req, res) => writeParts(res, [`data: {"a": 1}\n\n`.repeat(1000), "data: [DONE]\n\n"]);
    expect(await events({ maxEventBytes: 64 })).toHaveLength(1000);
  });

  it("ChatService passes its maxEventBytes to the parser", { timeout: BOUND }, async () => {
    fx.script = (_req, res) => writeParts(res, [`data: ${JSON.stringify(chunk({ content: "x".repeat(50_000) }))}\n\n`, "data: [DONE]\n\n"]);
    const m = new ChatService({ model: "fx-model", apiKey: "k", baseUrl: fx.url, retry: false, abuseGuard: false, maxEventBytes: 10_000 });
    const err = await rejection(
      (async () => {
        for await (const _ of await m.stream("hi"));
      })(),
    );
    expect(err).toBeInstanceOf(ResponseTooLargeError);
  });
});

describe("line endings", () => {
  it("lone CR ends lines", { timeout: BOUND }, async () => {
    fx.script = (_req, res) => writeParts(res, ['data: {"a": 1}\r\rdata: {"a":\rdata: 2}\r\r: comment\rdata: [DONE]\r\r']);
    expect(await events()).toEqual([{ a: 1 }, { a: 2 }]);
  });

  it("CRLF split between two reads is one line ending, not two", { timeout: BOUND }, async () => {
    fx.script = (_req, res) => writeParts(res, ['data: {"a":\r', "\ndata: 1}\r", "\n\r", "\ndata: [DONE]\r\n\r\n"]);
    expect(await events()).toEqual([{ a: 1 }]);
  });

  it("mixed LF, CRLF and CR in one stream", { timeout: BOUND }, async () => {
    fx.script = (_req, res) => writeParts(res, ['data: {"n": 1}\n\ndata: {"n": 2}\r\n\r\ndata: {"n": 3}\r\rdata: [DONE]\n\n']);
    expect(await events()).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  });

  it("a multi-byte character split between reads survives", { timeout: BOUND }, async () => {
    const bytes = Buffer.from('data: {"s": "héllo €"}\n\ndata: [DONE]\n\n');
    const cut = bytes.indexOf(0xe2) + 1; // inside the 3-byte euro sign
    fx.script = (_req, res) => writeParts(res, [bytes.subarray(0, cut), bytes.subarray(cut)]);
    expect(await events()).toEqual([{ s: "héllo €" }]);
  });

  it("a stream cut mid-event is still a StreamError", { timeout: BOUND }, async () => {
    fx.script = (_req, res) => writeParts(res, ['data: {"a": 1}\n\ndata: {"a"']);
    expect(await rejection(events())).toBeInstanceOf(StreamError);
  });
});
