/**
 * Using the emulator in your own test suite: start it in-process, script the model, run your code against
 * it, and assert on its ledger. No network, no account, no mocks: real HTTP over loopback, with the same
 * auth, billing, rate limits and faults as the service.
 *
 * This file is framework-free (node:assert). The same checks as a vitest file are in
 * `emulator-in-tests.example-test.ts` (copy it into your test folder as `*.test.ts`).
 *
 *   npm run example:emulator-in-tests
 *
 * Scripting the emulated model (see `startEmulator`'s docs for more): its answers are derived from the
 * input (`Echo: ...`); `[[emu:tool=NAME {json}]]` in the last user message makes it call tool NAME;
 * `[[emu:tokens=N]]` makes it answer with exactly N tokens; `[[emu:error]]` makes the answer fail.
 */
import assert from "node:assert/strict";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import { createAgent, tool } from "langchain";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { ChatService } from "../src/index.js";
import { startEmulator } from "langchain-service-emulator";

export interface Options {
  /** ignored: this example is about the embedded emulator */
  baseUrl?: string;
  apiKey?: string;
  log?: (line: string) => void;
}

export interface Result {
  answer: string;
  /** model calls the agent made (each is one CHARGE in the ledger) */
  modelCalls: number;
  /** USD the responses said they cost (`response_metadata.cost.usd`), summed */
  reportedCostUsd: number;
  /** what the ledger charged, and the key's balance before and after */
  ledger: { charges: number; chargedUsd: number; balanceBefore: number; balanceAfter: number };
  /** with 503s injected on half the requests: the agent still answered, and failed requests cost nothing */
  underFaults: { answer: string; attempts: number[]; charges: number };
}

// ---- the code under test: a user's support agent with one tool ----------------------------------------

export const lookupOrder = tool(async ({ orderId }) => JSON.stringify({ orderId, status: "shipped", eta: "2 days" }), {
  name: "lookup_order",
  description: "Looks up an order by its id",
  schema: z.object({ orderId: z.string() }),
});

export function createSupportAgent(model: ChatService) {
  return createAgent({ model, tools: [lookupOrder], systemPrompt: "You help customers with their orders." });
}

// ---- the test ----------------------------------------------------------------------------------------

export async function main(options: Options = {}): Promise<Result> {
  const log = options.log ?? console.log;
  // 1. start: one API key with $1 and no staking credit, so every charge is in USD
  const emulator = await startEmulator({ apiKeys: [{ key: "test-key", usd: 1, diem: 0 }] });
  try {
    // what reached the wire (status per HTTP attempt, retries included)
    const statuses: number[] = [];
    const model = new ChatService({
      model: "emu-m",
      baseUrl: emulator.url,
      apiKey: "test-key",
      retry: { maxRetries: 6, baseDelayMs: 5, maxDelayMs: 20 }, // fast retries: this is a test
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        statuses.push(response.status);
        return response;
      },
    });
    const agent = createSupportAgent(model);
    const account = emulator.account("test-key")!;
    const balanceBefore = account.usd;

    // 2. script: force the tool call with a directive, then let the agent finish
    const { messages } = await agent.invoke({
      messages: [new HumanMessage('Where is my order A-17? [[emu:tool=lookup_order {"orderId":"A-17"}]]')],
    });
    const ais = messages.filter((m): m is AIMessage => AIMessage.isInstance(m));
    const answer = ais.at(-1)!.text;
    log(`agent: ${answer}`);
    assert.deepEqual(
      ais[0]!.tool_calls?.map((c) => c.args),
      [{ orderId: "A-17" }],
    );
    assert.match(answer, /shipped/);

    // 3. assert on the ledger: one charge per model call, and the money adds up
    const charges = account.entries.filter((e) => e.type === "CHARGE");
    const chargedUsd = -charges.reduce((sum, e) => sum + e.amount, 0);
    const reportedCostUsd = ais.reduce((sum, m) => sum + ((m.response_metadata.cost as { usd: number } | undefined)?.usd ?? 0), 0);
    const balanceAfter = account.usd;
    log(`ledger: ${charges.length} charges, $${chargedUsd.toFixed(6)}; balance $${balanceBefore} -> $${balanceAfter}`);
    assert.equal(charges.length, ais.length);
    assert.ok(Math.abs(chargedUsd - reportedCostUsd) < 1e-9, "the ledger charged what the responses reported");
    assert.ok(Math.abs(balanceBefore - chargedUsd - balanceAfter) < 1e-9, "the balance moved by exactly the charges");

    // 4. reliability: half of the chat requests answer 503 (seeded, so the run is reproducible)
    emulator.setFaults({ errorRate: 0.5, statuses: [503], paths: ["/chat/completions"], seed: 7 });
    const before = account.entries.length;
    statuses.length = 0;
    const second = await agent.invoke({ messages: [new HumanMessage('And order B-2? [[emu:tool=lookup_order {"orderId":"B-2"}]]')] });
    emulator.setFaults({});
    const secondAnswer = second.messages.at(-1)!.text;
    const newCharges = account.entries.slice(before).filter((e) => e.type === "CHARGE").length;
    const failed = statuses.filter((s) => s === 503).length;
    log(`under faults: ${secondAnswer}`);
    log(`  ${statuses.length} attempts (${failed} answered 503 and were retried), ${newCharges} charges`);
    assert.ok(failed > 0, "faults were injected");
    assert.match(secondAnswer, /B-2/);
    assert.equal(newCharges, 2); // a tool-call turn and the answer; the 503s cost nothing

    const result: Result = {
      answer,
      modelCalls: ais.length,
      reportedCostUsd,
      ledger: { charges: charges.length, chargedUsd, balanceBefore, balanceAfter },
      underFaults: { answer: secondAnswer, attempts: [...statuses], charges: newCharges },
    };
    log("all checks passed");
    return result;
  } finally {
    await emulator.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  main().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}
