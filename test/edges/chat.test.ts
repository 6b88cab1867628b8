/**
 * Hard edges of the chat face over real loopback HTTP (a scripted server): every malformed answer is a typed
 * error (never a bare TypeError or URIError), and `maxRetries` means what it means in LangChain.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerResponse } from "node:http";
import { ChatService } from "../../src/chat/index.js";
import { createServiceFetch, ServiceClient } from "../../src/index.js";
import { ConfigurationError, ResponseFormatError, ServerError, ServiceError, StreamError, ValidationError } from "../../src/http/errors.js";
import { chunk, completion, json, sse, startFixtureServer, type FixtureServer } from "../chat/fixture-server.js";

let fx: FixtureServer;
beforeAll(async () => {
  fx = await startFixtureServer();
});
afterAll(() => fx.close());

const quiet = { apiKey: "k", retry: false, abuseGuard: false, pacing: false } as const;
function model(fields: Record<string, unknown> = {}) {
  return new ChatService({ model: "fx-model", baseUrl: fx.url, ...quiet, ...fields });
}

/** The settled error of `p` (fails the test when `p` resolves). */
async function errorOf(p: Promise<unknown> | (() => unknown)): Promise<any> {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

/** Reads a whole `.stream()`. */
async function drain(m: ChatService): Promise<void> {
  for await (const _ of await m.stream("hi")) {
    // nothing: only the outcome matters
  }
}

/** A typed error of the package, and of the expected class (a bare TypeError fails here). */
function expectTyped(err: unknown, cls: abstract new (...args: any[]) => ServiceError) {
  expect(err).toBeInstanceOf(ServiceError);
  expect(err).toBeInstanceOf(cls);
}

/** Headers promising 500 bytes, 20 sent, then the socket is cut. */
function truncated(res: ServerResponse) {
  res.writeHead(200, { "content-type": "application/json", "content-length": "500" });
  res.write('{"id":"x","choices":[');
  setTimeout(() => res.destroy(), 20);
}

describe("malformed JSON answers are ResponseFormatError", () => {
  it("a body cut mid-way (content-length not met)", async () => {
    fx.script = (_req, res) => truncated(res);
    const err = await errorOf(model().invoke("hi"));
    expectTyped(err, ResponseFormatError);
    expect(err.message).toMatch(/body/);
  });

  it("a complete body that is truncated JSON", async () => {
    fx.script = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"id":"x","choices":[{"message":{"content":"hal');
    };
    expectTyped(await errorOf(model().invoke("hi")), ResponseFormatError);
  });

  it("a false content-encoding: gzip (plain bytes)", async () => {
    fx.script = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
      res.end(JSON.stringify(completion({ content: "x" })));
    };
    expectTyped(await errorOf(model().invoke("hi")), ResponseFormatError);
    // the stream path already raised a StreamError; it stays typed
    expectTyped(await errorOf(drain(model())), StreamError);
  });

  it("choices: [null]", async () => {
    fx.script = (_req, res) => json(res, { ...completion({}), choices: [null] });
    const err = await errorOf(model().invoke("hi"));
    expectTyped(err, ResponseFormatError);
    expect(err.message).toContain("choices[0]");
  });

  it.each([42, { text: "x" }, true, [{ type: "text", text: 5 }], ["x"]])("message.content %j", async (content) => {
    fx.script = (_req, res) => json(res, completion({ content }));
    const err = await errorOf(model().invoke("hi"));
    expectTyped(err, ResponseFormatError);
    expect(err.message).toContain("content");
  });

  it("content as an array of text parts (the spec allows it) is still an answer", async () => {
    fx.script = (_req, res) =>
      json(
        res,
        completion({
          content: [
            { type: "text", text: "Hel" },
            { type: "text", text: "lo" },
          ],
        }),
      );
    const answer = await model().invoke("hi");
    expect(answer.text).toBe("Hello");
  });

  it("usage with non-numeric counts names the field, never a string total", async () => {
    fx.script = (_req, res) =>
      json(res, completion({ content: "x" }, { usage: { prompt_tokens: 1, completion_tokens: "many", total_tokens: "many" } }));
    const err = await errorOf(model().invoke("hi"));
    expectTyped(err, ResponseFormatError);
    expect(err.message).toContain("usage.completion_tokens");
    fx.script = (_req, res) =>
      json(
        res,
        completion(
          { content: "x" },
          { usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, prompt_tokens_details: { cached_tokens: "1" } } },
        ),
      );
    expect((await errorOf(model().invoke("hi"))).message).toContain("usage.prompt_tokens_details.cached_tokens");
  });

  it("tool_calls that are not objects, a non-string finish_reason, a non-object cost", async () => {
    for (const bad of [
      { ...completion({}), choices: [{ index: 0, finish_reason: "tool_calls", message: { role: "assistant", tool_calls: [null] } }] },
      { ...completion({}), choices: [{ index: 0, finish_reason: 7, message: { role: "assistant", content: "x" } }] },
      { ...completion({ content: "x" }), cost: "cheap" },
      [1, 2],
    ]) {
      fx.script = (_req, res) => json(res, bad);
      expectTyped(await errorOf(model().invoke("hi")), ResponseFormatError);
    }
  });

  it("ServiceClient.request: a cut body and a false gzip are ResponseFormatError", async () => {
    const client = new ServiceClient({ baseUrl: fx.url, ...quiet });
    fx.script = (_req, res) => truncated(res);
    expectTyped(await errorOf(client.request("/models")), ResponseFormatError);
    fx.script = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
      res.end('{"data":[]}');
    };
    expectTyped(await errorOf(client.listModels()), ResponseFormatError);
  });
});

describe("malformed stream events are ResponseFormatError", () => {
  it.each([
    ["a null event", [null]],
    ["a number event", [42]],
    ["choices: [null]", [{ ...chunk({}), choices: [null] }]],
    ["a null tool call", [chunk({ tool_calls: [null] })]],
    ["content: 42", [chunk({ content: 42 })]],
    [
      "usage with a string count",
      [chunk({ content: "x" }), { ...chunk({}), choices: [], usage: { prompt_tokens: "many", completion_tokens: 1, total_tokens: 1 } }],
    ],
  ])("%s", async (_name, events) => {
    fx.script = (_req, res) => sse(res, events as unknown[]);
    expectTyped(await errorOf(drain(model())), ResponseFormatError);
    expectTyped(await errorOf(model({ streaming: true }).invoke("hi")), ResponseFormatError);
  });
});

describe("model id suffixes", () => {
  it("a malformed %-escape is a ValidationError naming the member, not a URIError", () => {
    for (const id of ["fx:enable_web_search=%E0%A4%A", "fx:%zz=on"]) {
      const err = (() => {
        try {
          model({ model: id });
        } catch (e) {
          return e as Error;
        }
      })();
      expectTyped(err, ValidationError);
      expect(err!.message).toMatch(/percent|%/);
    }
  });
});

describe("maxRetries means what it means in LangChain", () => {
  const always503 = (_req: unknown, res: ServerResponse) => json(res, { error: "down" }, {}, 503);
  const fast = { baseDelayMs: 1, maxDelayMs: 2 };
  const base = { apiKey: "k", abuseGuard: false, pacing: false } as const;

  it("maxRetries: 0 is exactly one attempt", async () => {
    fx.script = always503;
    const before = fx.requests.length;
    const m = new ChatService({ model: "fx-model", baseUrl: fx.url, ...base, maxRetries: 0 });
    expectTyped(await errorOf(m.invoke("hi")), ServerError);
    expect(fx.requests.length - before).toBe(1);
  });

  it("maxRetries: 2 is at most three attempts (and .withRetry() multiplies nothing hidden)", async () => {
    fx.script = always503;
    let before = fx.requests.length;
    const m = new ChatService({ model: "fx-model", baseUrl: fx.url, ...base, maxRetries: 2, retry: fast });
    expectTyped(await errorOf(m.invoke("hi")), ServerError);
    expect(fx.requests.length - before).toBe(3);
    before = fx.requests.length;
    const off = new ChatService({ model: "fx-model", baseUrl: fx.url, ...base, maxRetries: 0 });
    await errorOf(off.withRetry({ stopAfterAttempt: 2 }).invoke("hi"));
    expect(fx.requests.length - before).toBe(2);
  });

  it("on a shared stack, maxRetries: 0 turns its retries off for this model", async () => {
    fx.script = always503;
    const shared = createServiceFetch({ baseUrl: fx.url, ...base, retry: { maxRetries: 3, ...fast } });
    const before = fx.requests.length;
    const m = new ChatService({ model: "fx-model", serviceFetch: shared, maxRetries: 0 });
    expectTyped(await errorOf(m.invoke("hi")), ServerError);
    expect(fx.requests.length - before).toBe(1);
  });

  it("contradicting or invalid retry counts are a ConfigurationError naming maxRetries, before any request", () => {
    const before = fx.requests.length;
    const shared = createServiceFetch({ baseUrl: fx.url, ...base });
    for (const fields of [
      { maxRetries: 1, retry: { maxRetries: 3 } },
      { maxRetries: 2, retry: false },
      { maxRetries: -1 },
      { maxRetries: 1.5 },
      { maxRetries: Infinity },
      { maxRetries: 2, serviceFetch: shared },
    ]) {
      const err = (() => {
        try {
          new ChatService({ model: "fx-model", baseUrl: fx.url, ...base, ...fields } as never);
        } catch (e) {
          return e as Error;
        }
      })();
      expectTyped(err, ConfigurationError);
      expect(err!.message).toContain("maxRetries");
    }
    // agreeing values are fine
    expect(() => new ChatService({ model: "fx-model", baseUrl: fx.url, ...base, maxRetries: 0, retry: false })).not.toThrow();
    expect(() => new ChatService({ model: "fx-model", baseUrl: fx.url, ...base, maxRetries: 3, retry: { maxRetries: 3 } })).not.toThrow();
    expect(fx.requests.length).toBe(before);
  });
});
