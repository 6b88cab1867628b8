/**
 * Chat route fidelity against the published description (`ChatCompletionRequest`, the assistant message's
 * `thought_signature`, DetailedError): the emulator is checked on the wire with plain fetch, and the client
 * (ChatService) is checked against that strict emulator, or against a scripted server where the emulator
 * does not produce the case (members on tool calls).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { tool } from "@langchain/core/tools";
import { AIMessage, type AIMessageChunk, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { ChatService } from "../../src/chat/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { BadRequestError, ValidationError } from "../../src/http/errors.js";
import { completion, json, sse, chunk, startFixtureServer, type FixtureServer } from "../chat/fixture-server.js";

const KEY = "k-fidelity-chat";
let emu: Emulator;
let fx: FixtureServer;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: [{ key: KEY, usd: 50, diem: 0 }], rateLimits: { enabled: false } });
  fx = await startFixtureServer();
});
afterAll(async () => {
  await emu?.close();
  await fx?.close();
});

async function post(body: unknown): Promise<{ status: number; json: any; text: string }> {
  const res = await fetch(`${emu.url}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let parsed: any;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, json: parsed, text };
}

/** DetailedError as published: `error` a string, `details` an object. */
function expectDetailedError(r: { status: number; json: any }) {
  expect(r.status).toBe(400);
  expect(typeof r.json.error).toBe("string");
  expect(r.json.details).toBeTypeOf("object");
  expect(r.json.details).not.toBeNull();
}

const user = (content: unknown) => ({ role: "user", content });
const rpcTool = {
  type: "function",
  function: {
    name: "crypto_rpc",
    description: "Call a JSON-RPC method on a network",
    parameters: {
      type: "object",
      properties: { network: { type: "string" }, method: { type: "string" } },
      required: ["network", "method"],
    },
  },
};
const question = "What is the latest block number on base-mainnet?";

describe("emulator rule 4: the request schema is closed", () => {
  it("an unknown top-level member is a 400 DetailedError naming it", async () => {
    const r = await post({ model: "emu-s", messages: [user("hi")], logit_bias: { "1": 2 } });
    expectDetailedError(r);
    expect(JSON.stringify(r.json.details)).toContain("logit_bias");
    expect(r.json.issues[0].code).toBe("unrecognized_keys");
  });

  it("every published top-level member is accepted", async () => {
    const r = await post({
      model: "emu-s",
      messages: [user("hi")],
      fallbacks: [{ model: "emu-m" }],
      text: { verbosity: "low" },
      include: ["usage"],
      metadata: { run: "fidelity" },
      store: false,
      user: "u-1",
      verbosity: "low",
      prompt_cache_retention: "24h",
      min_temp: 0.1,
      max_temp: 1.5,
      stop_token_ids: [1],
      service_parameters: { include_service_system_prompt: false },
    });
    expect(r.status).toBe(200);
    expect(r.json.choices[0].message.content).toBe("Echo: hi");
  });

  it("response_format variants are closed too", async () => {
    expectDetailedError(await post({ model: "emu-s", messages: [user("hi")], response_format: { type: "json_object", schema: {} } }));
    expect((await post({ model: "emu-s", messages: [user("hi")], response_format: { type: "json_object" } })).status).toBe(200);
  });

  it("a tool message's content must be a string", async () => {
    const call = {
      id: "call_1",
      type: "function",
      function: { name: "crypto_rpc", arguments: '{"network":"base-mainnet","method":"eth_blockNumber"}' },
    };
    const turn = (content: unknown) => [
      user(question),
      { role: "assistant", content: null, tool_calls: [call] },
      { role: "tool", tool_call_id: "call_1", content },
    ];
    const asArray = await post({ model: "emu-s", messages: turn([{ type: "text", text: '"0x10"' }]) });
    expectDetailedError(asArray);
    expect(asArray.json.issues.length).toBeGreaterThan(0);
    const asString = await post({ model: "emu-s", messages: turn('"0x10"') });
    expect(asString.status).toBe(200);
    expect(asString.json.choices[0].message.content).toBe('Based on crypto_rpc: "0x10"');
  });

  it("file_data is a data URL or a public URL, as published; anything else is a 400", async () => {
    const file = (file_data: string) =>
      user([
        { type: "text", text: "Summarize:" },
        { type: "file", file: { filename: "a.txt", file_data } },
      ]);
    const raw = await post({ model: "emu-s", messages: [file(Buffer.from("plan").toString("base64"))] });
    expectDetailedError(raw);
    expect(JSON.stringify(raw.json.details)).toMatch(/data URL/);
    expectDetailedError(await post({ model: "emu-s", messages: [file("file:///etc/passwd")] }));
    const dataUrl = await post({ model: "emu-s", messages: [file(`data:text/plain;base64,${Buffer.from("plan").toString("base64")}`)] });
    expect(dataUrl.json.choices[0].message.content).toBe("Echo: Summarize:\nplan");
    // the description's own words: "a data URL ... or a publicly accessible URL"
    expect((await post({ model: "emu-s", messages: [file("https://files.example/a.pdf")] })).status).toBe(200);
  });
});

describe("emulator rule 5: thought_signature", () => {
  it("is on the assistant message; a tool-call turn must send it back unchanged", async () => {
    const first = await post({ model: "emu-reasoner", messages: [user(question)], tools: [rpcTool] });
    const assistant = first.json.choices[0].message;
    expect(assistant.thought_signature).toMatch(/^emu-ts\./);
    expect(assistant.tool_calls).toHaveLength(1);
    const result = { role: "tool", tool_call_id: assistant.tool_calls[0].id, content: '"0x10"' };
    const send = (message: unknown) => post({ model: "emu-reasoner", messages: [user(question), message, result], tools: [rpcTool] });

    expect((await send(assistant)).status).toBe(200);

    const { thought_signature: _dropped, ...without } = assistant;
    const missing = await send(without);
    expectDetailedError(missing);
    expect(missing.json.error).toMatch(/^thought_signature missing or altered/);
    expect(missing.json.details.messages["1"].thought_signature._errors[0]).toMatch(/missing/);

    const sig = assistant.thought_signature as string;
    const altered = { ...assistant, thought_signature: `${sig.slice(0, -2)}${sig.endsWith("A") ? "B" : "A"}A` };
    expectDetailedError(await send(altered));

    // the signature of another turn does not fit these tool calls
    const other = await post({
      model: "emu-reasoner",
      messages: [user("What is the latest block number on ethereum-mainnet?")],
      tools: [rpcTool],
    });
    expectDetailedError(await send({ ...assistant, thought_signature: other.json.choices[0].message.thought_signature }));
  });

  it("a text turn's signature is optional, but must verify when sent", async () => {
    const first = await post({ model: "emu-reasoner", messages: [user("Why is the sky blue")] });
    const assistant = first.json.choices[0].message;
    expect(assistant.thought_signature).toMatch(/^emu-ts\./);
    const next = (message: unknown) =>
      post({ model: "emu-reasoner", messages: [user("Why is the sky blue"), message, user("and at night?")] });
    expect((await next(assistant)).status).toBe(200);
    const { thought_signature: _s, ...without } = assistant;
    expect((await next(without)).status).toBe(200);
    expectDetailedError(await next({ ...assistant, thought_signature: "emu-ts.e30.forged" }));
  });

  it("streams it whole in one delta, before the tool calls", async () => {
    const res = await post({ model: "emu-reasoner", messages: [user(question)], tools: [rpcTool], stream: true });
    const deltas = res.text
      .split("\n\n")
      .filter((b) => b.startsWith("data: {"))
      .map((b) => JSON.parse(b.slice(6)))
      .filter((e) => e.choices?.length)
      .map((e) => e.choices[0].delta);
    const carrying = deltas.filter((d) => d.thought_signature !== undefined);
    expect(carrying).toHaveLength(1);
    expect(carrying[0].thought_signature).toMatch(/^emu-ts\./);
    expect(deltas.indexOf(carrying[0])).toBeLessThan(deltas.findIndex((d) => d.tool_calls));
  });
});

describe("emulator rule 7: chat error bodies as published", () => {
  it("400s are DetailedError {error, details} in zod's formatted shape; a failed inference is StandardError", async () => {
    const wrongType = await post({ model: "emu-s", messages: [user("hi")], temperature: "hot" });
    expectDetailedError(wrongType);
    expect(wrongType.json.details.temperature._errors.length).toBeGreaterThan(0);
    const noVision = await post({
      model: "emu-s",
      messages: [user([{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }])],
    });
    expectDetailedError(noVision);
    expect(noVision.json.details._errors).toEqual([]);
    // the live capability gate: the reason sits at the part's path, in `details` and in `issues[]`
    expect(noVision.json.details.messages["0"].content["0"]._errors[0]).toMatch(/supportsVision/);
    expect(noVision.json.issues[0].path).toEqual(["messages", 0, "content", 0]);
    const failed = await post({ model: "emu-s", messages: [user("[[emu:error]] hi")] });
    expect(failed.status).toBe(500);
    expect(Object.keys(failed.json)).toEqual(["error"]);
  });
});

// --- the client against the strict emulator ----------------------------------------------------------------

const weather = tool(async ({ city }) => `sunny in ${city}`, {
  name: "get_weather",
  description: "Current weather in a city",
  schema: z.object({ city: z.string() }),
});

function reasoner(fields: Record<string, unknown> = {}) {
  return new ChatService({ model: "emu-reasoner", apiKey: KEY, baseUrl: emu.url, maxRetries: 0, ...fields }).bindTools([weather]);
}

async function concatStream(stream: AsyncIterable<AIMessageChunk>): Promise<AIMessageChunk> {
  let acc: AIMessageChunk | undefined;
  for await (const c of stream) acc = acc ? acc.concat(c) : c;
  if (!acc) throw new Error("empty stream");
  return acc;
}

describe("client 4: thought_signature and other members go back unchanged", () => {
  it("invoke: kept in additional_kwargs and accepted on the tool-call turn", async () => {
    const m = reasoner();
    const q = new HumanMessage("Use get_weather for Rome");
    const first = (await m.invoke([q])) as AIMessage;
    expect(first.tool_calls).toHaveLength(1);
    expect(first.additional_kwargs.thought_signature).toMatch(/^emu-ts\./);
    const result = new ToolMessage({ content: "sunny", tool_call_id: first.tool_calls![0]!.id! });
    const next = await m.invoke([q, first, result]);
    expect(next.text).toContain("Based on get_weather: sunny");
    // a dropped signature is refused: the check above is not vacuous
    const { thought_signature: _s, ...kw } = first.additional_kwargs;
    await expect(m.invoke([q, new AIMessage({ ...first, additional_kwargs: kw }), result])).rejects.toBeInstanceOf(BadRequestError);
  });

  it("stream: the merged message carries it once, and the next turn is accepted", async () => {
    const m = reasoner({ streaming: true });
    const q = new HumanMessage("Use get_weather for Oslo");
    const first = await concatStream(await m.stream([q]));
    expect(first.tool_calls).toHaveLength(1);
    expect(first.additional_kwargs.thought_signature).toMatch(/^emu-ts\./);
    const result = new ToolMessage({ content: "cloudy", tool_call_id: first.tool_calls![0]!.id! });
    const next = await concatStream(await m.stream([q, first, result]));
    expect(next.text).toContain("Based on get_weather: cloudy");
  });

  it("members the service adds to the message or to a tool call go back as received (invoke, stream, content-block events)", async () => {
    const extraCall = {
      id: "call_x",
      type: "function",
      function: { name: "get_weather", arguments: '{"city":"Rome"}' },
      extra_content: { google: { thought_signature: "tc-sig" } },
    };
    const toolTurn = { role: "assistant", content: null, tool_calls: [extraCall], provider_state: { opaque: [1, 2] } };
    for (const mode of ["invoke", "stream", "events"] as const) {
      fx.requests.length = 0;
      fx.script = (req, res) => {
        if (fx.requests.length > 1) return json(res, completion({ content: "fine" }));
        if (!req.body.stream)
          return json(res, { ...completion({}), choices: [{ index: 0, finish_reason: "tool_calls", logprobs: null, message: toolTurn }] });
        sse(res, [
          chunk({ role: "assistant", content: "" }),
          chunk({ provider_state: { opaque: [1, 2] } }),
          chunk({
            tool_calls: [
              {
                index: 0,
                id: "call_x",
                type: "function",
                function: { name: "get_weather", arguments: "" },
                extra_content: { google: { thought_signature: "tc-sig" } },
              },
            ],
          }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Rome"}' } }] }),
          chunk({}, {}, "tool_calls"),
        ]);
      };
      const base = new ChatService({ model: "fx-model", apiKey: "k", baseUrl: fx.url, maxRetries: 0 });
      const m = base.bindTools([weather]);
      const q = new HumanMessage("weather in Rome?");
      let first: AIMessage;
      if (mode === "invoke") first = (await m.invoke([q])) as AIMessage;
      else if (mode === "stream") first = await concatStream(await m.stream([q]));
      else first = (await base.streamEvents([q], { tools: [weather] } as never)) as unknown as AIMessage;
      expect(first.tool_calls?.[0]?.id).toBe("call_x");
      await m.invoke([q, first, new ToolMessage({ content: "sunny", tool_call_id: "call_x" })]);
      const sent = fx.requests[1]!.body.messages[1];
      expect(sent.provider_state, mode).toEqual({ opaque: [1, 2] });
      expect(sent.tool_calls, mode).toEqual([
        {
          id: "call_x",
          type: "function",
          function: { name: "get_weather", arguments: '{"city":"Rome"}' },
          extra_content: { google: { thought_signature: "tc-sig" } },
        },
      ]);
    }
  });
});

describe("client 5: a tool message with array content is sent as a string", () => {
  it("text blocks are joined into the string the service requires", async () => {
    const m = new ChatService({ model: "emu-s", apiKey: KEY, baseUrl: emu.url, maxRetries: 0 }).bindTools([weather]);
    const q = new HumanMessage("weather in Paris?");
    const call = new AIMessage({
      content: "",
      tool_calls: [{ id: "call_p", name: "get_weather", args: { city: "Paris" }, type: "tool_call" }],
    });
    const result = new ToolMessage({
      content: [
        { type: "text", text: "sunny" },
        { type: "text", text: " and 21C" },
      ],
      tool_call_id: "call_p",
    });
    const answer = await m.invoke([q, call, result] as BaseMessage[]);
    expect(answer.text).toBe("Based on get_weather: sunny and 21C");
  });

  it("a tool result that is not text is refused before any request", async () => {
    const fetchSpy = vi.fn(globalThis.fetch);
    const m = new ChatService({ model: "emu-s", apiKey: KEY, baseUrl: emu.url, maxRetries: 0, fetch: fetchSpy });
    const call = new AIMessage({
      content: "",
      tool_calls: [{ id: "call_i", name: "get_weather", args: { city: "Paris" }, type: "tool_call" }],
    });
    const image = new ToolMessage({
      content: [{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }],
      tool_call_id: "call_i",
    });
    await expect(m.invoke([new HumanMessage("x"), call, image])).rejects.toBeInstanceOf(ValidationError);
    expect(fetchSpy).not.toHaveBeenCalled();
  });
});
