/** The deterministic tool planner and the structured-output filler. */
import { describe, expect, it } from "vitest";
import { extractFacts, inferRpcCall } from "../../packages/langchain-service-emulator/src/models/facts.js";
import { callSignature, findMention, planToolCalls, type ToolSpec } from "../../packages/langchain-service-emulator/src/models/planner.js";
import { fillSchema } from "../../packages/langchain-service-emulator/src/models/structured.js";

const ADDR_A = "0x1111111111111111111111111111111111111111";
const ADDR_B = "0x2222222222222222222222222222222222222222";
const TX = `0x${"ab".repeat(32)}`;

const weather: ToolSpec = {
  name: "get_weather",
  description: "Current weather for a city",
  parameters: {
    type: "object",
    properties: { city: { type: "string" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
    required: ["city"],
  },
};
const networks: ToolSpec = { name: "crypto_networks", parameters: { type: "object", properties: {} } };
const rpc: ToolSpec = {
  name: "crypto_rpc",
  parameters: {
    type: "object",
    properties: {
      network: { type: "string", description: "network slug" },
      method: { type: "string", description: "JSON-RPC method" },
      params: { type: "array", items: {} },
    },
    required: ["network", "method"],
  },
};
const balance: ToolSpec = {
  name: "get_balance",
  parameters: { type: "object", properties: { address: { type: "string" } }, required: ["address"] },
};
const adder: ToolSpec = {
  name: "math_addition",
  parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
};

const plan = (userText: string, tools: ToolSpec[], extra: Partial<Parameters<typeof planToolCalls>[0]> = {}) =>
  planToolCalls({ tools, toolChoice: "auto", parallel: true, userText, alreadyCalled: [], ...extra });

describe("facts", () => {
  it("extracts addresses, hashes, slugs, numbers and quoted text", () => {
    const f = extractFacts(`Send 5 USDC from ${ADDR_A} on base-mainnet, see tx ${TX} and "my note"`);
    expect(f.addresses).toEqual([ADDR_A]);
    expect(f.txHashes).toEqual([TX]);
    expect(f.slugs).toEqual(["base-mainnet"]);
    expect(f.numbers).toEqual([5]);
    expect(f.quoted).toEqual(["my note"]);
  });

  it("infers JSON-RPC calls from keywords", () => {
    expect(inferRpcCall(extractFacts(`balance of ${ADDR_A} on base-mainnet`))).toEqual({
      method: "eth_getBalance",
      params: [ADDR_A, "latest"],
    });
    expect(inferRpcCall(extractFacts("latest block number on ethereum-mainnet")).method).toBe("eth_blockNumber");
    expect(inferRpcCall(extractFacts(`receipt of ${TX}`))).toEqual({ method: "eth_getTransactionReceipt", params: [TX] });
    expect(inferRpcCall(extractFacts("call eth_chainId please")).method).toBe("eth_chainId");
    expect(inferRpcCall(extractFacts("current slot on solana-devnet")).method).toBe("getSlot");
  });
});

describe("planner", () => {
  it("calls the tool whose name words appear, filling the city from the last capitalized word", () => {
    expect(plan("What's the weather in Paris today?", [weather])).toEqual([{ name: "get_weather", arguments: { city: "Paris" } }]);
    expect(plan("Weather in Berlin in fahrenheit", [weather])).toEqual([
      { name: "get_weather", arguments: { city: "Berlin", unit: "fahrenheit" } },
    ]);
  });

  it("fills a place with all its words, not a quoted tool name (LangChain's standard tool prompts)", () => {
    const location: ToolSpec = {
      name: "get_current_weather",
      parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] },
    };
    expect(plan("What's the weather like in San Francisco today?", [location])).toEqual([
      { name: "get_current_weather", arguments: { location: "San Francisco" } },
    ]);
    expect(
      plan("What's the weather like in San Francisco right now? Use the 'get_current_weather' tool to find the answer.", [location]),
    ).toEqual([{ name: "get_current_weather", arguments: { location: "San Francisco" } }]);
    expect(plan("Weather for 'New York' please", [location])[0]!.arguments).toEqual({ location: "New York" });
  });

  it("does not call tools for small talk", () => {
    expect(plan("Hello!", [weather, networks, rpc, balance])).toEqual([]);
  });

  it("calls several tools when several are asked for, in the order they are mentioned", () => {
    const calls = plan("Which networks are supported, and what is the latest block number on base-mainnet?", [rpc, networks]);
    expect(calls).toEqual([
      { name: "crypto_networks", arguments: {} },
      { name: "crypto_rpc", arguments: { network: "base-mainnet", method: "eth_blockNumber", params: [] } },
    ]);
  });

  it("calls once per address when two are given, and only the first with parallel_tool_calls false", () => {
    const calls = plan(`Compare the balances of ${ADDR_A} and ${ADDR_B}`, [balance]);
    expect(calls).toEqual([
      { name: "get_balance", arguments: { address: ADDR_A } },
      { name: "get_balance", arguments: { address: ADDR_B } },
    ]);
    expect(plan(`Compare the balances of ${ADDR_A} and ${ADDR_B}`, [balance], { parallel: false })).toHaveLength(1);
  });

  it("falls back to the first tool whose required parameters the text fills (numbers)", () => {
    expect(plan("What is 3 + 4?", [weather, adder])).toEqual([{ name: "math_addition", arguments: { a: 3, b: 4 } }]);
  });

  it("honours exact names, forced functions, 'required' and 'none'", () => {
    expect(
      plan("What is the value of magic_function(3)?", [
        { name: "magic_function", parameters: { type: "object", properties: { input: { type: "integer" } }, required: ["input"] } },
      ]),
    ).toEqual([{ name: "magic_function", arguments: { input: 3 } }]);
    expect(plan("Hello", [weather], { toolChoice: { name: "get_weather" } })[0]?.name).toBe("get_weather");
    expect(plan("Hello", [networks, weather], { toolChoice: "required" })).toEqual([{ name: "crypto_networks", arguments: {} }]);
    expect(plan("weather in Paris", [weather], { toolChoice: "none" })).toEqual([]);
  });

  it("never repeats a call with the same arguments, so an agent loop ends", () => {
    const text = `Compare the balances of ${ADDR_A} and ${ADDR_B}`;
    const first = plan(text, [balance], { parallel: false });
    const second = plan(text, [balance], { parallel: false, alreadyCalled: first });
    expect(second).toEqual([{ name: "get_balance", arguments: { address: ADDR_B } }]);
    const third = plan(text, [balance], { parallel: false, alreadyCalled: [...first, ...second] });
    expect(third).toEqual([]);
    // 'required' does not loop either once everything was called
    expect(plan(text, [balance], { toolChoice: "required", alreadyCalled: [...first, ...second] })).toEqual([]);
    expect(callSignature({ name: "x", arguments: '{"b":1,"a":2}' })).toBe(callSignature({ name: "x", arguments: { a: 2, b: 1 } }));
  });

  it("recognises mentions by name words, not by one generic word", () => {
    expect(findMention("crypto_networks", "which networks exist")?.exact).toBe(false);
    expect(findMention("get_weather", "use get_weather now")?.exact).toBe(true);
    expect(findMention("get_weather", "get me something")).toBeUndefined();
  });
});

describe("structured output filler", () => {
  it("fills properties named in the prompt, numbers in order, enums, arrays and nested objects", () => {
    const schema = {
      type: "object",
      properties: {
        name: { type: "string" },
        age: { type: "integer" },
        mood: { type: "string", enum: ["happy", "sad"] },
        tags: { type: "array", items: { type: "string" } },
        address: { $ref: "#/$defs/Address" },
        nickname: { type: ["string", "null"] },
      },
      required: ["name", "age", "mood", "tags", "address"],
      $defs: { Address: { type: "object", properties: { city: { type: "string" }, zip: { type: "number" } }, required: ["city", "zip"] } },
    };
    const prompt = "The person's name is Alice, she is sad and 31 years old and lives in Lyon";
    const filled = fillSchema(schema, extractFacts(prompt), { fallback: true, question: prompt });
    const v = filled?.value as Record<string, unknown>;
    expect(v.name).toBe("Alice");
    expect(v.age).toBe(31);
    expect(v.mood).toBe("sad");
    expect(Array.isArray(v.tags) && v.tags.length).toBe(1);
    expect(v.address).toEqual({ city: "Lyon", zip: 0 });
    expect(typeof v.nickname).toBe("string");
  });

  it("gives every property a value in fallback mode and fails on missing required values otherwise", () => {
    const schema = {
      type: "object",
      properties: { setup: { type: "string" }, punchline: { type: "string" }, rating: { type: "integer", minimum: 1 } },
      required: ["setup", "punchline"],
    };
    const facts = extractFacts("Tell me a joke about cats");
    const v = fillSchema(schema, facts, { fallback: true, question: "Tell me a joke about cats" })?.value as Record<string, unknown>;
    expect(Object.keys(v).sort()).toEqual(["punchline", "rating", "setup"]);
    expect(v.rating).toBe(1);
    expect(
      fillSchema({ type: "object", properties: { id: { type: "integer" } }, required: ["id"] }, facts, { fallback: false, question: "" }),
    ).toBeUndefined();
  });
});
