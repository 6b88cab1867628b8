/**
 * The live service's in-band stream errors, `{"error": {type: "server_error" | "api_error", code, param, message}}`
 * then `[DONE]`, against the live emulator's `faults.streamErrors`: each is a typed error carrying type, code and
 * param; an outage (`upstream_error`, any `server_error`) before any content is requested again, so the caller sees
 * one clean answer; nothing is re-sent after content was delivered, nor for `e2ee_attestation_stale` or an
 * `api_error`, which the same request would meet again.
 */
import { afterAll, describe, expect, it } from "vitest";
import type { AIMessageChunk } from "@langchain/core/messages";
import { ChatService, inBandErrorOf } from "../../src/chat/index.js";
import { startEmulator, type Emulator, type FaultOptions } from "langchain-service-emulator";
import { InBandStreamError, ModelOverloadedError, StreamError } from "../../src/http/errors.js";

const LONG = "a long enough answer to need several chunks";
const started: Emulator[] = [];
afterAll(async () => {
  await Promise.all(started.map((e) => e.close()));
});

async function emulator(streamErrors: FaultOptions["streamErrors"]): Promise<Emulator> {
  const emu = await startEmulator({
    apiKeys: [{ key: "k1", usd: 5, diem: 0 }],
    rateLimits: { enabled: false },
    chat: { overloadedRetryAfterSeconds: 0.05 },
    faults: { streamErrors },
  });
  started.push(emu);
  return emu;
}

/** A model whose requests to the emulator are counted. */
function model(emu: Emulator, fields: Record<string, unknown> = {}) {
  const sent = { chat: 0 };
  const fetch = (input: string | URL | Request, init?: RequestInit) => {
    if (String(input).endsWith("/chat/completions")) sent.chat++;
    return globalThis.fetch(input, init);
  };
  return { m: new ChatService({ model: "emu-s", apiKey: "k1", baseUrl: emu.url, fetch, ...fields }), sent };
}

/** What a stream handed out, and what it threw. */
async function run(m: ChatService, input: string): Promise<{ text: string; err: any }> {
  let text = "";
  try {
    for await (const c of (await m.stream(input)) as AsyncIterable<AIMessageChunk>) text += c.text;
    return { text, err: undefined };
  } catch (err) {
    return { text, err };
  }
}

describe("before any content: outages are asked again", () => {
  it.each([
    ["upstream_error", { code: "upstream_error" }],
    ["upstream_error as api_error", { code: "upstream_error", type: "api_error" as const }],
    ["any server_error", { code: "internal_error", type: "server_error" as const }],
  ])("%s: one clean answer after the failed streams", async (_name, spec) => {
    const emu = await emulator({ first: 2, ...spec });
    const { m, sent } = model(emu);
    const { text, err } = await run(m, "hi");
    expect(err).toBeUndefined();
    expect(text).toBe("Echo: hi");
    expect(sent.chat).toBe(3);
  });

  it("streaming invoke too; maxRetries bounds it and the last one surfaces typed", async () => {
    const emu = await emulator({ first: 2, code: "upstream_error", param: "model" });
    expect((await model(emu, { streaming: true }).m.invoke("hi")).text).toBe("Echo: hi");
    const again = await emulator({ first: 2, code: "upstream_error", param: "model" });
    const { m, sent } = model(again, { maxRetries: 1 });
    const { err } = await run(m, "hi");
    expect(err).toBeInstanceOf(InBandStreamError);
    expect([err.type, err.code, err.param, err.transient]).toEqual(["server_error", "upstream_error", "model", true]);
    expect(sent.chat).toBe(2);
  });

  it.each([
    ["e2ee_attestation_stale", { code: "e2ee_attestation_stale" }, "api_error"],
    ["e2ee_attestation_stale as server_error", { code: "e2ee_attestation_stale", type: "server_error" as const }, "server_error"],
    ["an api_error", { code: "invalid_provider_response", type: "api_error" as const }, "api_error"],
  ])("%s: typed, never re-sent", async (_name, spec, type) => {
    const emu = await emulator({ first: 1, param: "messages", ...spec });
    const { m, sent } = model(emu);
    const { err } = await run(m, "hi");
    expect(err).toBeInstanceOf(InBandStreamError);
    expect(err).toBeInstanceOf(StreamError);
    expect(err.transient).toBe(false);
    expect([err.type, err.code, err.param]).toEqual([type, spec.code, "messages"]);
    expect(err.message).toContain(spec.code);
    expect(inBandErrorOf(err)).toMatchObject({ type, code: spec.code, param: "messages" });
    expect(sent.chat).toBe(1);
  });
});

describe("after content: never re-sent", () => {
  it.each([
    ["upstream_error", { code: "upstream_error" }],
    ["server_error", { code: "internal_error", type: "server_error" as const }],
  ])("%s: an InBandStreamError with the partial content, one request", async (_name, spec) => {
    const emu = await emulator({ first: 1, afterContent: true, ...spec });
    const { m, sent } = model(emu);
    const { text, err } = await run(m, LONG);
    expect(err).toBeInstanceOf(InBandStreamError);
    expect(err.transient).toBe(true);
    expect(err.code).toBe(spec.code);
    expect(text).not.toBe("");
    expect(err.partial).toBe(text);
    expect(sent.chat).toBe(1);
  });

  it("model_overloaded: a ModelOverloadedError carrying its type and code", async () => {
    const emu = await emulator({ first: 1, afterContent: true, code: "model_overloaded" });
    const { m, sent } = model(emu);
    const { err } = await run(m, LONG);
    expect(err).toBeInstanceOf(ModelOverloadedError);
    expect(err.retryAfterMs).toBe(50);
    expect(inBandErrorOf(err)).toMatchObject({ type: "server_error", code: "model_overloaded" });
    expect(sent.chat).toBe(1);
  });
});
