/**
 * Messages the live service drops or refuses: an assistant message with neither content nor tool calls (dropped
 * silently), media parts outside user messages, more than 10 images, 5 audio, 3 video or 5 file parts in a message
 * (3 videos in a request), audio that is not base64. The client refuses each before sending (a
 * `MessageRefusedError` naming the message and the rule; the emulator sees no request, nothing is charged); the
 * live emulator answers the caps and the audio rule with a 400 and drops the empty assistant message, as the
 * service does; the seed emulator does neither.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AIMessage, HumanMessage, SystemMessage, type BaseMessage } from "@langchain/core/messages";
import { ChatService, MessageRefusedError } from "../../src/chat/index.js";
import { ValidationError } from "../../src/http/errors.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";

const PNG = "data:image/png;base64,iVBORw0KGgo=";
const WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";
const image = { type: "image_url", image_url: { url: PNG } };
const audio = { type: "input_audio", input_audio: { data: WAV, format: "wav" } };
const video = { type: "video_url", video_url: { url: "https://www.youtube.com/watch?v=abc" } };
const file = { type: "file", file: { file_data: "data:text/plain;base64,aGk=", filename: "a.txt" } };
const times = (n: number, part: object) => Array.from({ length: n }, () => part);
const user = (...parts: object[]) => new HumanMessage({ content: [{ type: "text", text: "look" }, ...parts] as never });

let live: Emulator;
let seed: Emulator;
beforeAll(async () => {
  [live, seed] = await Promise.all([
    startEmulator({ apiKeys: ["k1"], rateLimits: { enabled: false } }),
    startEmulator({ apiKeys: ["k1"], rateLimits: { enabled: false }, mode: "seed" }),
  ]);
});
afterAll(async () => {
  await Promise.all([live?.close(), seed?.close()]);
});

/** A model whose chat requests are counted on their way to the live emulator. */
function counted(model = "emu-m") {
  const sent = { chat: 0 };
  const fetch = (input: string | URL | Request, init?: RequestInit) => {
    if (String(input).endsWith("/chat/completions")) sent.chat++;
    return globalThis.fetch(input, init);
  };
  return { m: new ChatService({ model, apiKey: "k1", baseUrl: live.url, fetch }), sent };
}

const charges = () => live.ledger.apiKey("k1")!.entries.filter((e) => e.type === "CHARGE").length;

/** Refused unsent by invoke and stream: the error, and proof nothing reached the emulator. */
async function refused(messages: BaseMessage[]): Promise<MessageRefusedError> {
  const { m, sent } = counted();
  const before = charges();
  const err = await m.invoke(messages).catch((e) => e);
  const streamErr = await m.stream(messages).then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(MessageRefusedError);
  expect(err).toBeInstanceOf(ValidationError);
  expect(streamErr).toBeInstanceOf(MessageRefusedError);
  expect(sent.chat).toBe(0);
  expect(charges()).toBe(before);
  return err;
}

describe("refused before sending", () => {
  it("an assistant message with neither content nor tool calls, named by its index", async () => {
    const err = await refused([new HumanMessage("hi"), new AIMessage(""), new HumanMessage("again")]);
    expect([err.messageIndex, err.rule, err.code]).toEqual([1, "empty_assistant", "empty_assistant"]);
    expect(err.message).toMatch(/messages\[1\] \(assistant\)/);
    // reasoning alone is no content: the service drops it all the same
    const reasoning = new AIMessage({ content: "", additional_kwargs: { reasoning_content: "thinking" } });
    expect((await refused([new HumanMessage("hi"), reasoning, new HumanMessage("again")])).messageIndex).toBe(1);
  });

  it("media outside user messages", async () => {
    const sys = new SystemMessage({ content: [{ type: "text", text: "be brief" }, image] as never });
    const err = await refused([sys, new HumanMessage("hi")]);
    expect([err.messageIndex, err.rule, err.partType]).toEqual([0, "media_outside_user", "image_url"]);
    const ai = new AIMessage({ content: [{ type: "text", text: "here" }, image] as never });
    expect((await refused([new HumanMessage("hi"), ai, new HumanMessage("more")])).rule).toBe("media_outside_user");
  });

  it.each([
    ["image_url", image, 10],
    ["input_audio", audio, 5],
    ["video_url", video, 3],
    ["file", file, 5],
  ])("more than the cap of %s parts in one message", async (type, part, cap) => {
    const err = await refused([new HumanMessage("first"), user(...times(cap + 1, part))]);
    expect([err.messageIndex, err.rule, err.partType, err.limit]).toEqual([1, "too_many_parts", type, cap]);
    expect(err.message).toContain(String(cap));
  });

  it("more than 3 videos in one request", async () => {
    const err = await refused([user(video, video), new AIMessage("ok"), user(video, video)]);
    expect([err.messageIndex, err.rule, err.limit]).toEqual([2, "too_many_parts", 3]);
  });

  it("audio that is not base64", async () => {
    const url = { type: "input_audio", input_audio: { data: "https://example.org/a.wav", format: "wav" } };
    const err = await refused([user(url)]);
    expect([err.messageIndex, err.rule]).toEqual([0, "audio_not_base64"]);
    expect((await refused([user({ type: "audio", url: "https://example.org/a.wav" })])).rule).toBe("audio_not_base64");
  });

  it("at the caps, and with an empty assistant message that carries tool calls, the request is sent", async () => {
    const { m, sent } = counted();
    await m.invoke([user(...times(10, image), ...times(5, audio), ...times(3, video), ...times(5, file))]);
    const call = new AIMessage({ content: "", tool_calls: [{ id: "c1", name: "lookup", args: {}, type: "tool_call" }] });
    await m.invoke([new HumanMessage("hi"), call, { role: "tool", content: "42", tool_call_id: "c1" } as never]);
    expect(sent.chat).toBe(2);
  });
});

/** One raw chat request to an emulator. */
async function post(emu: Emulator, body: Record<string, unknown>) {
  const res = await fetch(`${emu.url}/chat/completions`, {
    method: "POST",
    headers: { authorization: "Bearer k1", "content-type": "application/json" },
    body: JSON.stringify({ model: "emu-m", ...body }),
  });
  return { status: res.status, json: (await res.json()) as any };
}
const wireUser = (...parts: object[]) => ({ role: "user", content: [{ type: "text", text: "look" }, ...parts] });

describe("the emulator as the live service", () => {
  it.each([
    ["image_url", image, 10],
    ["input_audio", audio, 5],
    ["video_url", video, 3],
    ["file", file, 5],
  ])("%s over its per-message cap: 400 naming the message in issues; seed serves it", async (type, part, cap) => {
    const over = await post(live, { messages: [wireUser(...times(cap + 1, part))] });
    expect(over.status).toBe(400);
    expect(over.json.issues[0].path).toEqual(["messages", 0, "content"]);
    expect(over.json.issues[0].message).toContain(`${cap} ${type}`);
    expect((await post(live, { messages: [wireUser(...times(cap, part))] })).status).toBe(200);
    expect((await post(seed, { messages: [wireUser(...times(cap + 1, part))] })).status).toBe(200);
  });

  it("more than 3 videos in a request, and audio as a URL: 400", async () => {
    expect(
      (await post(live, { messages: [wireUser(video, video), { role: "assistant", content: "ok" }, wireUser(video, video)] })).status,
    ).toBe(400);
    const url = await post(live, { messages: [wireUser({ type: "input_audio", input_audio: { data: "https://example.org/a.wav" } })] });
    expect(url.status).toBe(400);
    expect(url.json.issues[0].message).toMatch(/base64/);
  });

  it("an assistant message with neither content nor tool calls is dropped silently", async () => {
    const withEmpty = [
      { role: "user", content: "hi" },
      { role: "assistant", content: "" },
      { role: "user", content: "again" },
    ];
    const without = [withEmpty[0], withEmpty[2]];
    const a = await post(live, { messages: withEmpty });
    const b = await post(live, { messages: without });
    expect(a.status).toBe(200);
    expect(a.json.usage.prompt_tokens).toBe(b.json.usage.prompt_tokens);
    const s = await post(seed, { messages: withEmpty });
    expect(s.json.usage.prompt_tokens).toBeGreaterThan((await post(seed, { messages: without })).json.usage.prompt_tokens);
  });
});
