/**
 * In-band stream errors and refusals as typed errors, against the emulator's knobs (and a scripted server for a
 * 422): an overloaded model refused before any content is asked again after `retry_after`, within `maxRetries`
 * and the caller's deadline, so the caller sees one clean answer; after content it is a `ModelOverloadedError`.
 * A provider's block mid-stream and `finish_reason: "content_filter"` are a `ContentFilterError` with the
 * partial content (structured output fails with it, not with a parse error); a 422 is a `ContentPolicyError`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { AIMessageChunk } from "@langchain/core/messages";
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { ChatService } from "../../src/chat/index.js";
import { startEmulator, type Emulator, type EmulatorOptions } from "langchain-service-emulator";
import { ContentFilterError, ContentPolicyError, ModelOverloadedError, StreamError, TimeoutError } from "../../src/http/errors.js";
import { json, startFixtureServer, type FixtureServer } from "./fixture-server.js";

const md = (m: { response_metadata: unknown }): any => m.response_metadata;
const LONG = "a long enough answer to need several chunks";

const started: Emulator[] = [];
async function emulator(chat: EmulatorOptions["chat"] = {}): Promise<Emulator> {
  const emu = await startEmulator({ apiKeys: [{ key: "k1", usd: 5, diem: 0 }], rateLimits: { enabled: false }, chat });
  started.push(emu);
  return emu;
}
afterAll(async () => {
  await Promise.all(started.map((e) => e.close()));
});

function model(emu: Emulator, fields: Record<string, unknown> = {}) {
  return new ChatService({ model: "emu-s", apiKey: "k1", baseUrl: emu.url, ...fields });
}

/** chat CHARGE rows written so far (one per served stream) */
const charges = (emu: Emulator) => emu.ledger.apiKey("k1")!.entries.filter((e) => e.type === "CHARGE").length;

async function drain(stream: AsyncIterable<AIMessageChunk>) {
  const chunks: AIMessageChunk[] = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}

/** The whole stream, or what it threw (`.stream()` itself already reads up to the first chunk). */
const streamed = async (m: ChatService, input: string) => drain(await m.stream(input));

/** Records the tokens a run's callbacks see. */
class Tokens extends BaseCallbackHandler {
  name = "tokens";
  seen: string[] = [];
  override handleLLMNewToken(token: string) {
    this.seen.push(token);
  }
}

describe("model_overloaded before any content", () => {
  it("stream: asked again after retry_after; the caller and its callbacks see one clean answer", async () => {
    const emu = await emulator({ overloadedStreams: 2, overloadedRetryAfterSeconds: 0.05 });
    const tokens = new Tokens();
    const chunks = await drain(await model(emu).stream("hi", { callbacks: [tokens] }));
    expect(chunks.map((c) => c.text).join("")).toBe("Echo: hi");
    expect(chunks.filter((c) => md(c).headers)).toHaveLength(1);
    expect(chunks.filter((c) => md(c).finish_reason)).toHaveLength(1);
    expect(tokens.seen.join("")).toBe("Echo: hi");
    expect(charges(emu)).toBe(1);
  });

  it("streaming invoke and content-block events retry the same way", async () => {
    const emu = await emulator({ overloadedStreams: 1, overloadedRetryAfterSeconds: 0.05 });
    expect((await model(emu, { streaming: true }).invoke("hi")).text).toBe("Echo: hi");
    await emu.close();
    const again = await emulator({ overloadedStreams: 1, overloadedRetryAfterSeconds: 0.05 });
    expect(await (model(again) as any).streamEvents("hi").text).toBe("Echo: hi");
  });

  it("retries are spent: ModelOverloadedError with retryAfterMs after 1 + maxRetries requests", async () => {
    const emu = await emulator({ overloadedStreams: 3, overloadedRetryAfterSeconds: 0.05 });
    const err = await streamed(model(emu, { maxRetries: 2 }), "hi").catch((e) => e);
    expect(err).toBeInstanceOf(ModelOverloadedError);
    expect(err.retryAfterMs).toBe(50);
    expect(err.code).toBe("model_overloaded");
    // exactly three streams were refused: the fourth is served
    expect((await model(emu, { maxRetries: 0, streaming: true }).invoke("hi")).text).toBe("Echo: hi");
  });

  it("maxRetries: 0 surfaces the first one", async () => {
    const emu = await emulator({ overloadedStreams: 1, overloadedRetryAfterSeconds: 0.05 });
    await expect(streamed(model(emu, { maxRetries: 0 }), "hi")).rejects.toBeInstanceOf(ModelOverloadedError);
    // the next request is served: no retry was sent behind the caller's back
    expect((await model(emu, { maxRetries: 0, streaming: true }).invoke("hi")).text).toBe("Echo: hi");
  });

  it("the caller's deadline ends the wait as a TimeoutError", async () => {
    const emu = await emulator({ overloadedStreams: 1, overloadedRetryAfterSeconds: 30 });
    const err = await model(emu, { streaming: true })
      .invoke("hi", { timeout: 300 })
      .catch((e) => e);
    expect(err).toBeInstanceOf(TimeoutError);
  });

  it("a retry_after beyond the longest wait is not waited for", async () => {
    const emu = await emulator({ overloadedStreams: 1, overloadedRetryAfterSeconds: 120 });
    const err = await model(emu, { streaming: true })
      .invoke("hi")
      .catch((e) => e);
    expect(err).toBeInstanceOf(ModelOverloadedError);
    expect(err.retryAfterMs).toBe(120_000);
  });
});

describe("in-band errors after content", () => {
  let emu: Emulator;
  beforeAll(async () => {
    emu = await emulator();
  });

  it("model_overloaded: a ModelOverloadedError with retryAfterMs, never re-sent", async () => {
    const before = charges(emu);
    const seen: string[] = [];
    const err = await (async () => {
      for await (const c of await model(emu).stream(`${LONG} [[emu:error=model_overloaded]]`)) seen.push(c.text);
    })().catch((e) => e);
    expect(err).toBeInstanceOf(ModelOverloadedError);
    expect(err.retryAfterMs).toBe(1000);
    expect(seen.join("")).not.toBe("");
    expect(charges(emu)).toBe(before + 1);
  });

  it("content_filter_error: a ContentFilterError carrying the partial content", async () => {
    const seen: string[] = [];
    const err = await (async () => {
      for await (const c of await model(emu).stream(`${LONG} [[emu:error=content_filter]]`)) seen.push(c.text);
    })().catch((e) => e);
    expect(err).toBeInstanceOf(ContentFilterError);
    expect(err.code).toBe("content_blocked_by_provider");
    expect(err.partial).toBe(seen.join(""));
    expect(err.partial).toMatch(/^Echo/);
  });

  it("upstream_error stays a StreamError", async () => {
    await expect(model(emu, { streaming: true }).invoke(`${LONG} [[emu:error]]`)).rejects.toSatisfy(
      (e: unknown) => e instanceof StreamError && !(e instanceof ContentFilterError),
    );
  });
});

describe('finish_reason "content_filter": a typed refusal', () => {
  let emu: Emulator;
  beforeAll(async () => {
    emu = await emulator();
  });
  const refused = `${LONG} [[emu:refuse]]`;

  it("invoke throws a ContentFilterError with the partial content and the body (cost)", async () => {
    const err = await model(emu)
      .invoke(refused)
      .catch((e) => e);
    expect(err).toBeInstanceOf(ContentFilterError);
    expect(err.partial).toBe("Echo: a long");
    expect(err.body.cost.usd + err.body.cost.diem).toBeGreaterThan(0);
  });

  it("a stream hands out the content, then throws the ContentFilterError at its end", async () => {
    const seen: string[] = [];
    const err = await (async () => {
      for await (const c of await model(emu).stream(refused)) seen.push(c.text);
    })().catch((e) => e);
    expect(err).toBeInstanceOf(ContentFilterError);
    expect(seen.join("")).toBe("Echo: a long");
    expect(err.partial).toBe("Echo: a long");
    await expect(model(emu, { streaming: true }).invoke(refused)).rejects.toBeInstanceOf(ContentFilterError);
  });

  it("structured output fails with the ContentFilterError, not a parse error", async () => {
    const schema = z.object({ city: z.string() });
    for (const method of ["jsonSchema", "jsonMode"] as const) {
      const err = await model(emu)
        .withStructuredOutput(schema, { method })
        .invoke(`city: Paris ${refused}`)
        .catch((e) => e);
      expect(err, method).toBeInstanceOf(ContentFilterError);
    }
    const raw = await model(emu)
      .withStructuredOutput(schema, { includeRaw: true })
      .invoke(`city: Paris ${refused}`)
      .catch((e) => e);
    expect(raw).toBeInstanceOf(ContentFilterError);
  });
});

describe("422 content policy", () => {
  let fx: FixtureServer;
  beforeAll(async () => {
    fx = await startFixtureServer((_req, res) =>
      json(res, { error: "Prompt violates the content policy", suggested_prompt: "a calmer prompt" }, {}, 422),
    );
  });
  afterAll(() => fx.close());

  it("reaches invoke, stream and structured output as ContentPolicyError with suggestedPrompt", async () => {
    const m = new ChatService({ model: "fx-model", apiKey: "k", baseUrl: fx.url, abuseGuard: false });
    for (const run of [
      () => m.invoke("x"),
      () => streamed(m, "x"),
      () => m.withStructuredOutput(z.object({ a: z.string() })).invoke("x"),
    ]) {
      const err = await run().catch((e) => e);
      expect(err).toBeInstanceOf(ContentPolicyError);
      expect(err.suggestedPrompt).toBe("a calmer prompt");
      expect(err.status).toBe(422);
    }
  });
});
