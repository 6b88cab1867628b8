/** Streaming, signed reasoning, think tags, web search and the tool-calling loop over loopback HTTP. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Emulator } from "langchain-service-emulator";
import { countTokens } from "../../packages/langchain-service-emulator/src/models/tokenizer.js";
import { chat, chatStream, KEY, startModelsEmulator, streamedContent, user } from "./helpers.js";

let emu: Emulator;
/** the seed contract's behaviour, where it differs from the live service's (live: ./live-chat.test.ts) */
let seed: Emulator;
beforeAll(async () => {
  [emu, seed] = await Promise.all([startModelsEmulator(), startModelsEmulator({ mode: "seed" })]);
});
afterAll(async () => {
  await Promise.all([emu?.close(), seed?.close()]);
});

const rpcTool = {
  type: "function",
  function: {
    name: "crypto_rpc",
    description: "Calls a JSON-RPC method on a network",
    parameters: {
      type: "object",
      properties: {
        network: { type: "string" },
        method: { type: "string", description: "JSON-RPC method" },
        params: { type: "array", items: {} },
      },
      required: ["network", "method"],
    },
  },
};
const networksTool = {
  type: "function",
  function: { name: "crypto_networks", description: "Lists networks", parameters: { type: "object", properties: {} } },
};

describe("streaming", () => {
  it("streams role, content chunks, a finish chunk, a usage chunk with cost, then [DONE]", async () => {
    const { status, headers, events } = await chatStream(emu, { model: "emu-s", messages: [user("stream this sentence for me please")] });
    expect(status).toBe(200);
    expect(headers.get("content-type")).toMatch(/text\/event-stream/);
    expect(headers.get("cache-control")).toBe("no-cache");
    expect(events.at(-1)).toBe("[DONE]");
    expect(events[0].object).toBe("chat.completion.chunk");
    expect(events[0].choices[0].delta).toEqual({ role: "assistant", content: "" });
    const contentChunks = events.filter((e) => e !== "[DONE]" && e.choices[0]?.delta?.content);
    expect(contentChunks.length).toBeGreaterThan(1);
    expect(streamedContent(events)).toBe("Echo: stream this sentence for me please");
    const finish = events.find((e) => e !== "[DONE]" && e.choices[0]?.finish_reason);
    expect(finish.choices[0].finish_reason).toBe("stop");
    const last = events.at(-2);
    expect(last.choices).toEqual([]);
    expect(last.usage.completion_tokens).toBe(countTokens("Echo: stream this sentence for me please"));
    expect(last.cost.usd).toBeGreaterThan(0);
    expect(last.service_parameters.enable_web_search).toBe("off");
    expect(new Set(events.filter((e) => e !== "[DONE]").map((e) => e.id)).size).toBe(1);
  });

  it("streams a 100k-token answer lazily and exactly", async () => {
    const { events } = await chatStream(emu, { model: "emu-xs", messages: [user("[[emu:tokens=100000]]")] });
    const text = streamedContent(events);
    expect(countTokens(text)).toBe(100_000);
    expect(events.at(-2).usage.completion_tokens).toBe(100_000);
    expect(events.at(-1)).toBe("[DONE]");
  });

  it("[[emu:error]] sends an in-band error after the first content chunk, then [DONE], uncharged (seed)", async () => {
    const before = seed.ledger.apiKey(KEY)!.entries.length;
    const { status, events } = await chatStream(seed, {
      model: "emu-s",
      messages: [user("a long enough answer to need chunks [[emu:error]]")],
    });
    expect(status).toBe(200);
    const errorAt = events.findIndex((e) => e !== "[DONE]" && e.error);
    expect(errorAt).toBeGreaterThan(0);
    expect(events[errorAt].error.message).toMatch(/error/i);
    expect(events.slice(0, errorAt).filter((e) => e.choices?.[0]?.delta?.content).length).toBe(1);
    expect(events[errorAt + 1]).toBe("[DONE]");
    expect(events).toHaveLength(errorAt + 2);
    expect(seed.ledger.apiKey(KEY)!.entries.length).toBe(before);
  });

  it("streams tool calls as indexed deltas with finish_reason tool_calls", async () => {
    const { events } = await chatStream(emu, {
      model: "emu-s",
      messages: [user("Which networks exist, and what's the latest block number on base-mainnet?")],
      tools: [rpcTool, networksTool],
    });
    const deltas = events.filter((e) => e !== "[DONE]" && e.choices[0]?.delta?.tool_calls).flatMap((e) => e.choices[0].delta.tool_calls);
    const byIndex = new Map<number, { name?: string; args: string; id?: string }>();
    for (const d of deltas) {
      const cur = byIndex.get(d.index) ?? { args: "" };
      if (d.id) cur.id = d.id;
      if (d.function?.name) cur.name = d.function.name;
      cur.args += d.function?.arguments ?? "";
      byIndex.set(d.index, cur);
    }
    expect([...byIndex.values()].map((c) => c.name)).toEqual(["crypto_networks", "crypto_rpc"]);
    expect(JSON.parse(byIndex.get(1)!.args)).toMatchObject({ network: "base-mainnet", method: "eth_blockNumber" });
    expect(byIndex.get(0)!.id).toMatch(/^call_/);
    expect(events.find((e) => e !== "[DONE]" && e.choices[0]?.finish_reason)?.choices[0].finish_reason).toBe("tool_calls");
  });
});

describe("tool-calling agent loop", () => {
  it("calls tools, then answers from their results, and never repeats a call", async () => {
    const messages: any[] = [user("Which networks exist, and what's the latest block number on base-mainnet?")];
    const tools = [rpcTool, networksTool];
    let turns = 0;
    let final: any;
    while (turns++ < 6) {
      const r = await chat(emu, { model: "emu-s", messages, tools, parallel_tool_calls: false });
      expect(r.status).toBe(200);
      const msg = r.json.choices[0].message;
      messages.push(msg);
      if (!msg.tool_calls) {
        final = msg;
        break;
      }
      expect(msg.tool_calls).toHaveLength(1);
      for (const call of msg.tool_calls) {
        const result = call.function.name === "crypto_networks" ? '{"networks":["base-mainnet","ethereum-mainnet"]}' : '"0x1a2b"';
        messages.push({ role: "tool", tool_call_id: call.id, content: result });
      }
    }
    expect(turns).toBe(3);
    expect(final.content).toBe('Based on crypto_networks: networks base-mainnet, ethereum-mainnet Based on crypto_rpc: "0x1a2b"');
  });

  it("[[emu:tool=...]] forces a call with exactly those arguments", async () => {
    const r = await chat(emu, { model: "emu-s", messages: [user('[[emu:tool=lookup {"q":"x","n":2}]] go')] });
    expect(r.json.choices[0].finish_reason).toBe("tool_calls");
    expect(r.json.choices[0].message.tool_calls[0].function).toEqual({ name: "lookup", arguments: '{"q":"x","n":2}' });
    expect(r.json.choices[0].message.content).toBeNull();
  });

  it("tool_choice none answers in text; a forced function is always called", async () => {
    const none = await chat(emu, {
      model: "emu-s",
      messages: [user("block number on base-mainnet")],
      tools: [rpcTool],
      tool_choice: "none",
    });
    expect(none.json.choices[0].message.tool_calls).toBeUndefined();
    const forced = await chat(emu, {
      model: "emu-s",
      messages: [user("hello")],
      tools: [rpcTool, networksTool],
      tool_choice: { type: "function", function: { name: "crypto_networks" } },
    });
    expect(forced.json.choices[0].message.tool_calls[0].function.name).toBe("crypto_networks");
  });
});

describe("reasoning", () => {
  const question = "What is the latest block number on base-mainnet?";

  it("emu-reasoner returns reasoning_content, signed reasoning_details and reasoning_tokens", async () => {
    const r = await chat(emu, { model: "emu-reasoner", messages: [user("Why is the sky blue")] });
    const m = r.json.choices[0].message;
    expect(m.reasoning_content).toBe("Thinking about: Why is the sky blue");
    expect(m.reasoning_details[0]).toMatchObject({ type: "reasoning.text", text: m.reasoning_content, index: 0 });
    expect(m.reasoning_details[1]).toMatchObject({ type: "reasoning.encrypted", index: 1, format: "emu-v1" });
    expect(r.json.usage.completion_tokens_details.reasoning_tokens).toBe(countTokens(m.reasoning_content));
    const off = await chat(emu, { model: "emu-reasoner", messages: [user("Why is the sky blue")], reasoning_effort: "none" });
    expect(off.json.choices[0].message.reasoning_content).toBeUndefined();
    expect(off.json.usage.completion_tokens_details.reasoning_tokens).toBe(0);
  });

  it("accepts a tool-call turn sent back unchanged and rejects altered or missing reasoning_details", async () => {
    const first = await chat(emu, { model: "emu-reasoner", messages: [user(question)], tools: [rpcTool] });
    const assistant = first.json.choices[0].message;
    expect(assistant.tool_calls).toHaveLength(1);
    const toolResult = { role: "tool", tool_call_id: assistant.tool_calls[0].id, content: '"0x10"' };
    // LangChain re-serializes the arguments: the signature is over parsed arguments
    const resent = {
      ...assistant,
      tool_calls: assistant.tool_calls.map((c: any) => ({
        ...c,
        function: { ...c.function, arguments: JSON.stringify(JSON.parse(c.function.arguments)) },
      })),
    };
    const ok = await chat(emu, { model: "emu-reasoner", messages: [user(question), resent, toolResult], tools: [rpcTool] });
    expect(ok.status).toBe(200);
    expect(ok.json.choices[0].message.content).toBe('Based on crypto_rpc: "0x10"');

    const { reasoning_details: _dropped, ...withoutDetails } = assistant;
    const missing = await chat(emu, { model: "emu-reasoner", messages: [user(question), withoutDetails, toolResult], tools: [rpcTool] });
    expect(missing.status).toBe(400);
    expect(missing.json.error).toMatch(/^reasoning_details missing or altered/);
    expect(missing.json.details).toBeDefined();

    const altered = {
      ...assistant,
      reasoning_details: [{ ...assistant.reasoning_details[0], text: "Thinking about: nothing" }, assistant.reasoning_details[1]],
    };
    expect((await chat(emu, { model: "emu-reasoner", messages: [user(question), altered, toolResult], tools: [rpcTool] })).status).toBe(
      400,
    );

    const otherArgs = {
      ...assistant,
      tool_calls: [
        {
          ...assistant.tool_calls[0],
          function: { name: "crypto_rpc", arguments: '{"network":"ethereum-mainnet","method":"eth_blockNumber"}' },
        },
      ],
    };
    expect((await chat(emu, { model: "emu-reasoner", messages: [user(question), otherArgs, toolResult], tools: [rpcTool] })).status).toBe(
      400,
    );
  });

  it("streams reasoning deltas before content; merged by index they verify on the next turn", async () => {
    const { events } = await chatStream(emu, { model: "emu-reasoner", messages: [user(question)], tools: [rpcTool] });
    const deltas = events.filter((e) => e !== "[DONE]" && e.choices[0]).map((e) => e.choices[0].delta);
    const firstReasoning = deltas.findIndex((d) => d.reasoning_content);
    const firstToolCall = deltas.findIndex((d) => d.tool_calls);
    expect(firstReasoning).toBeGreaterThan(0);
    expect(firstReasoning).toBeLessThan(firstToolCall);
    // aggregate the way a client must: same index merges, text concatenates
    const merged = new Map<number, any>();
    for (const item of deltas.flatMap((d) => d.reasoning_details ?? [])) {
      const cur = merged.get(item.index);
      merged.set(
        item.index,
        cur ? { ...cur, ...item, text: (cur.text ?? "") + (item.text ?? ""), format: cur.format ?? item.format } : { ...item },
      );
    }
    const reasoningDetails = [...merged.values()];
    expect(reasoningDetails[0].text).toBe(deltas.map((d) => d.reasoning_content ?? "").join(""));
    const call = deltas.flatMap((d) => d.tool_calls ?? []);
    const toolCalls = [
      {
        id: call[0].id,
        type: "function",
        function: { name: call[0].function.name, arguments: call.map((c: any) => c.function?.arguments ?? "").join("") },
      },
    ];
    // thought_signature comes whole in one delta and goes back on the message too
    const thoughtSignature = deltas.find((d) => d.thought_signature)?.thought_signature;
    const next = await chat(emu, {
      model: "emu-reasoner",
      messages: [
        user(question),
        { role: "assistant", content: "", tool_calls: toolCalls, reasoning_details: reasoningDetails, thought_signature: thoughtSignature },
        { role: "tool", tool_call_id: toolCalls[0]!.id, content: "0x1" },
      ],
      tools: [rpcTool],
    });
    expect(next.status).toBe(200);
  });

  it("emu-thinker puts <think> in content; strip_thinking_response and disable_thinking remove it", async () => {
    const r = await chat(emu, { model: "emu-thinker", messages: [user("ponder")] });
    expect(r.json.choices[0].message.content).toBe("<think>Thinking about: ponder</think>\n\nEcho: ponder");
    const stripped = await chat(emu, { model: "emu-thinker:strip_thinking_response=true", messages: [user("ponder")] });
    expect(stripped.json.choices[0].message.content).toBe("Echo: ponder");
    expect(stripped.json.usage.completion_tokens_details.reasoning_tokens).toBeGreaterThan(0);
    expect(stripped.json.service_parameters.strip_thinking_response).toBe(true);
    const disabled = await chat(emu, { model: "emu-thinker", messages: [user("ponder")], service_parameters: { disable_thinking: true } });
    expect(disabled.json.choices[0].message.content).toBe("Echo: ponder");
    expect(disabled.json.usage.completion_tokens_details.reasoning_tokens).toBe(0);
  });
});

describe("web search", () => {
  it("seed: answers from the corpus with [REF] citations, echoes citations and bills the search", async () => {
    const plain = await chat(seed, { model: "emu-s", messages: [user("Tell me about USDC on Base")] });
    const r = await chat(seed, {
      model: "emu-s",
      messages: [user("Tell me about USDC on Base")],
      service_parameters: { enable_web_search: "on", enable_web_citations: true },
    });
    const citations = r.json.service_parameters.web_search_citations;
    expect(citations.length).toBeGreaterThan(0);
    for (const c of citations) expect(Object.keys(c).sort()).toEqual(["content", "date", "title", "url"]);
    expect(r.json.choices[0].message.content).toContain("[REF]1[/REF]");
    expect(r.json.cost.usd - plain.json.cost.usd).toBeGreaterThanOrEqual(0.0099);
  });

  it("auto searches for questions only; the suffix turns search on", async () => {
    const poem = await chat(emu, { model: "emu-s", messages: [user("write a poem")], service_parameters: { enable_web_search: "auto" } });
    expect(poem.json.service_parameters.web_search_citations).toBeUndefined();
    const q = await chat(emu, { model: "emu-s:enable_web_search=auto", messages: [user("What is the latest about Solana?")] });
    expect(q.json.service_parameters.web_search_citations[0].url).toBe("https://example.org/solana");
    expect(q.json.service_parameters.enable_web_search).toBe("auto");
  });

  it("seed: returns results as a <brand>_web_search_documents tool call when asked, finish_reason stop", async () => {
    const r = await chat(seed, {
      model: "emu-s",
      messages: [user("x402 payment protocol")],
      service_parameters: { enable_web_search: "on", return_search_results_as_documents: true },
    });
    const call = r.json.choices[0].message.tool_calls.find((c: any) => c.function.name === "service_web_search_documents");
    expect(JSON.parse(call.function.arguments).documents[0].url).toBe("https://example.org/x402");
    expect(r.json.choices[0].message.content).toContain("x402");
    expect(r.json.choices[0].finish_reason).toBe("stop");
  });

  it("seed: streams citations once: last by default, first with include_search_results_in_stream", async () => {
    const body = { model: "emu-s", messages: [user("news about Ethereum")], service_parameters: { enable_web_search: "on" } };
    const late = (await chatStream(seed, body)).events.filter((e) => e !== "[DONE]" && e.service_parameters?.web_search_citations);
    expect(late).toHaveLength(1);
    expect(late[0].usage).toBeDefined();
    const early = await chatStream(seed, {
      ...body,
      service_parameters: { enable_web_search: "on", include_search_results_in_stream: true },
    });
    const withCitations = early.events.filter((e) => e !== "[DONE]" && e.service_parameters?.web_search_citations);
    expect(withCitations).toHaveLength(1);
    expect(early.events[0]).toBe(withCitations[0]);
    expect(early.events[0].choices).toEqual([]);
  });

  it("rejects web search on a model without it", async () => {
    expect(
      (await chat(emu, { model: "emu-legacy", messages: [user("news")], service_parameters: { enable_web_search: "on" } })).status,
    ).toBe(400);
  });
});
