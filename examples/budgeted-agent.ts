/**
 * An agent on a budget: `createAgent` with `spendLimitMiddleware`. The agent reads the ETH balance of several
 * addresses, one crypto RPC call a turn; its model calls and its tool calls draw from one budget for the run. Half
 * way, the middleware warns (a `spend.warning` event, and a note asking the model to wrap up); when the next step
 * does not fit, the run pauses (`onExhausted: "interrupt"`) and a person answers: raise the limit, or stop. Stopped,
 * the agent ends with a final message saying what was spent; no exception, nothing more sent.
 *
 *   npm run example:budgeted-agent                 # asks on the terminal; without one, RAISE=yes|no (default: once)
 *   SERVICE_BASE_URL=https://.../api/v1 SERVICE_API_KEY=... npm run example:budgeted-agent
 */
import { createInterface } from "node:readline/promises";
import { pathToFileURL } from "node:url";
import { createAgent } from "langchain";
import { HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { Command, MemorySaver } from "@langchain/langgraph";
import { ChatService, CryptoRpcToolkit, ServiceClient } from "../src/index.js";
import { spendLimitMiddleware, SPEND_WARNING_EVENT, type SpendLimitInterrupt, type SpendWarning } from "../src/agents/index.js";
import { startEmulator } from "langchain-service-emulator";

/** The person's answer when the budget is spent: a new limit in USD, or false to stop. */
export type Raiser = (question: SpendLimitInterrupt) => number | false | Promise<number | false>;

export interface Options {
  /** the person; default: the terminal, or RAISE=yes|no where there is none (yes: once, by half the limit) */
  raiser?: Raiser;
  /** USD for the run (default $0.0012: a few steps of the emulator's emu-m) */
  maxUsd?: number;
  log?: (line: string) => void;
}

export interface Result {
  /** what each pause asked */
  pauses: SpendLimitInterrupt[];
  warnings: SpendWarning[];
  /** balances read */
  reads: number;
  finalMessage: string;
  spend: { spentUsd: number; limitUsd: number; calls: number };
}

let raised = 0;
async function terminalRaiser(q: SpendLimitInterrupt): Promise<number | false> {
  const more = +(q.limitUsd * 1.5).toPrecision(3);
  if (!process.stdin.isTTY) return (process.env.RAISE ?? "yes").toLowerCase().startsWith("y") && raised++ === 0 ? more : false;
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return (await rl.question(`  raise the limit to $${more}? [y/n] `)).trim().toLowerCase().startsWith("y") ? more : false;
  } finally {
    rl.close();
  }
}

export async function main(options: Options = {}): Promise<Result> {
  const log = options.log ?? console.log;
  const raiser = options.raiser ?? terminalRaiser;
  let baseUrl = process.env.SERVICE_BASE_URL;
  let apiKey = process.env.SERVICE_API_KEY;
  const emulator = baseUrl ? undefined : await startEmulator({ chain: true, apiKeys: ["budget-demo"] });
  try {
    if (emulator) [baseUrl, apiKey] = [emulator.url, "budget-demo"];
    const client = new ServiceClient({ baseUrl, apiKey });
    const tools = new CryptoRpcToolkit({ client }).getTools().filter((t) => t.name === "native_balance");
    const model = new ChatService({
      baseUrl,
      apiKey,
      model: process.env.SERVICE_MODEL ?? "emu-m",
      maxTokens: 64,
      parallelToolCalls: false,
    });
    const maxUsd = options.maxUsd ?? 0.0012;
    const agent = createAgent({
      model,
      tools,
      middleware: [spendLimitMiddleware({ maxUsd, warnAtFraction: 0.5, onExhausted: "interrupt" })],
      checkpointer: new MemorySaver(),
    });

    const addresses = [1, 2, 3, 4, 5, 6].map((i) => `0x${String(i).repeat(40)}`);
    const question = `What is the ETH balance of ${addresses.join(", ")} on base-mainnet?`;
    const config = {
      configurable: { thread_id: `budget-${Date.now()}` },
      recursionLimit: 100,
      streamMode: ["values", "updates", "custom"] as ("values" | "updates" | "custom")[],
    };
    log(`budget: $${maxUsd} for the run; warn at half; ask a person when it is spent`);
    log(`question: the balances of ${addresses.length} addresses, one a turn`);

    const pauses: SpendLimitInterrupt[] = [];
    const warnings: SpendWarning[] = [];
    let state: { messages: BaseMessage[]; spend?: Result["spend"]; __interrupt__?: { value: SpendLimitInterrupt }[] } | undefined;
    let input: unknown = { messages: [new HumanMessage(question)] };
    let lastSpent = -1;
    for (;;) {
      const pending: SpendLimitInterrupt[] = [];
      for await (const [mode, chunk] of await agent.stream(input as never, config)) {
        if (mode === "custom" && (chunk as { type?: string }).type === SPEND_WARNING_EVENT) {
          warnings.push(chunk as SpendWarning);
          log(
            `[warning] $${(chunk as SpendWarning).spentUsd} of $${(chunk as SpendWarning).limitUsd} spent: the model is asked to wrap up`,
          );
        } else if (mode === "updates") {
          // a pause is an update of its own: the question the middleware asks
          for (const i of (chunk as { __interrupt__?: { value: SpendLimitInterrupt }[] }).__interrupt__ ?? []) pending.push(i.value);
        } else if (mode === "values") {
          state = chunk as typeof state;
          const spend = state?.spend;
          if (spend && spend.spentUsd !== lastSpent)
            log(`[step] spent $${(lastSpent = spend.spentUsd)} of $${spend.limitUsd} (${spend.calls} calls)`);
        }
      }
      if (pending.length === 0) break;
      const asked = pending[0]!;
      pauses.push(asked);
      if (pauses.length > 3) throw new Error("the run keeps asking: stopping");
      log(`[paused] $${asked.spentUsd} of $${asked.limitUsd} spent; the next step needs up to $${asked.neededUsd}`);
      const answer = await raiser(asked);
      log(answer === false ? "[person] stop here" : `[person] raise the limit to $${answer}`);
      input = new Command({ resume: answer === false ? false : { raiseToUsd: answer } });
    }
    const messages = state!.messages;
    const reads = messages.filter((m) => ToolMessage.isInstance(m) && m.status !== "error").length;
    const finalMessage = String(messages.at(-1)?.content ?? "");
    log(`balances read: ${reads} of ${addresses.length}`);
    log(`answer: ${finalMessage}`);
    return { pauses, warnings, reads, finalMessage, spend: state!.spend! };
  } finally {
    await emulator?.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  });
}
