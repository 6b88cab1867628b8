/**
 * The emulator in a vitest suite: copy this file into your test folder as `support-agent.test.ts`.
 * (It is named `.example-test.ts` here so the package's own test run does not collect it twice: the package
 * runs it from `test/examples/examples.test.ts`.)
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { ChatService, InsufficientBalanceError } from "../src/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { createSupportAgent } from "./emulator-in-tests.js";

describe("support agent, against the emulator", () => {
  let emulator: Emulator;
  beforeAll(async () => {
    emulator = await startEmulator({ apiKeys: [{ key: "test-key", usd: 1, diem: 0 }] });
  });
  afterAll(() => emulator?.close());
  beforeEach(() => emulator.setFaults({}));

  const agent = () =>
    createSupportAgent(
      new ChatService({
        model: "emu-m",
        baseUrl: emulator.url,
        apiKey: "test-key",
        retry: { maxRetries: 6, baseDelayMs: 5, maxDelayMs: 20 },
      }),
    );
  const charges = () => emulator.account("test-key")!.entries.filter((e) => e.type === "CHARGE");

  it("looks the order up and answers from the tool; each model call is charged once", async () => {
    const before = charges().length;
    const { messages } = await agent().invoke({
      messages: [new HumanMessage('Where is my order A-17? [[emu:tool=lookup_order {"orderId":"A-17"}]]')],
    });
    const ais = messages.filter((m): m is AIMessage => AIMessage.isInstance(m));
    expect(ais[0]!.tool_calls).toMatchObject([{ name: "lookup_order", args: { orderId: "A-17" } }]);
    expect(ais.at(-1)!.text).toContain("shipped");
    const charged = charges().slice(before);
    expect(charged).toHaveLength(ais.length);
    const reported = ais.map((m) => (m.response_metadata.cost as { usd: number }).usd);
    expect(charged.map((e) => -e.amount)).toEqual(reported);
  });

  it("still answers when half of the chat requests fail with 503, and failures are not billed", async () => {
    emulator.setFaults({ errorRate: 0.5, statuses: [503], paths: ["/chat/completions"], seed: 7 });
    const before = charges().length;
    const { messages } = await agent().invoke({ messages: [new HumanMessage('Order B-2? [[emu:tool=lookup_order {"orderId":"B-2"}]]')] });
    expect(messages.at(-1)!.text).toContain("B-2");
    expect(charges().length - before).toBe(2);
  });

  it("an empty key gets a typed error, not an answer", async () => {
    const broke = await startEmulator({ apiKeys: [{ key: "broke", usd: 0, diem: 0 }] });
    try {
      const model = new ChatService({ model: "emu-m", baseUrl: broke.url, apiKey: "broke", retry: false });
      await expect(model.invoke("hi")).rejects.toBeInstanceOf(InsufficientBalanceError);
      expect(broke.account("broke")!.entries).toHaveLength(0);
    } finally {
      await broke.close();
    }
  });
});
