/**
 * A self-paying agent that draws and speaks: no account, no API key, only a wallet. The chat model and the
 * `generate_image` and `text_to_speech` tools share one fetch stack, so the first 402 tops up USDC credit once
 * (x402, within the owner's policy) and everything after is served from it. The picture and the speech land as
 * files in the owner's output directory; the model only ever sees their paths, never the bytes.
 *
 * Against the embedded emulator the wallet is a funded account of a local chain holding the emulator's test USDC.
 *
 *   npm run example:draw-and-speak
 *   SERVICE_BASE_URL=https://.../api/v1 WALLET_PRIVATE_KEY=0x... SERVICE_MODEL=... IMAGE_MODEL=... OUTPUT_DIR=./out npm run example:draw-and-speak
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { createAgent } from "langchain";
import { HumanMessage, ToolMessage } from "@langchain/core/messages";
import { ChatService, createServiceFetch, type PaymentEvent, type PaymentPolicyOptions } from "../src/index.js";
import { EvmWallet } from "../src/evm/index.js";
import { ImageGenerationTool, TextToSpeechTool } from "../src/tools/index.js";
import { startEmulator, type LedgerEntry } from "langchain-service-emulator";

export interface Options {
  baseUrl?: string;
  /** where the files go (default ./draw-and-speak-output) */
  outputDir?: string;
  log?: (line: string) => void;
}

export interface Result {
  wallet: string;
  answer: string;
  image?: { path: string; description: string };
  speech?: { path: string; format: string; durationSeconds: number | null };
  payments: PaymentEvent[];
  /** embedded run: the emulator's ledger for the wallet */
  ledger?: LedgerEntry[];
}

export async function main(options: Options = {}): Promise<Result> {
  const log = options.log ?? console.log;
  let baseUrl = options.baseUrl ?? process.env.SERVICE_BASE_URL;
  const outputDir = resolve(options.outputDir ?? process.env.OUTPUT_DIR ?? "draw-and-speak-output");
  const emulator = baseUrl ? undefined : await startEmulator({ chain: true });
  try {
    const policy: PaymentPolicyOptions = { amountUsd: 5, maxPerTopUpUsd: 5, maxPerPeriodUsd: 10 };
    let wallet: EvmWallet;
    if (emulator) {
      baseUrl = emulator.url;
      wallet = new EvmWallet(emulator.chain!.accounts[2]!.privateKey);
      policy.allowedPayees = [emulator.chain!.treasury];
    } else {
      const key = process.env.WALLET_PRIVATE_KEY;
      if (!key) throw new Error("set WALLET_PRIVATE_KEY (a Base wallet holding USDC) to run against SERVICE_BASE_URL");
      wallet = new EvmWallet(key);
    }
    log(`wallet ${wallet.address} (no API key)`);
    const payments: PaymentEvent[] = [];
    const serviceFetch = createServiceFetch({
      baseUrl,
      wallet,
      payment: policy,
      onPayment: (event) => {
        payments.push(event);
        log(`  payment ${event.type}${event.amountUsd !== undefined ? ` $${event.amountUsd}` : ""}`);
      },
    });
    const tools = [
      new ImageGenerationTool({
        serviceFetch,
        outputDir,
        width: 512,
        height: 320,
        ...(process.env.IMAGE_MODEL ? { model: process.env.IMAGE_MODEL } : {}),
      }),
      new TextToSpeechTool({ serviceFetch, outputDir }),
    ];
    const model = new ChatService({ model: process.env.SERVICE_MODEL ?? "emu-s", serviceFetch });
    const agent = createAgent({ model, tools, systemPrompt: "You draw pictures and speak; say where the files are." });

    const question =
      'Use generate_image with prompt: "a lighthouse at sunset over the sea", ' +
      'then text_to_speech with text: "Here is your lighthouse at sunset, drawn and paid for by me."';
    log(`> ${question}`);
    const { messages } = await agent.invoke({ messages: [new HumanMessage(question)] });
    const result: Result = { wallet: wallet.address, answer: messages.at(-1)!.text, payments };
    for (const m of messages) {
      if (!ToolMessage.isInstance(m)) continue;
      const json = JSON.parse(m.text) as Record<string, unknown>;
      log(`  ${m.name} -> ${m.text}`);
      if (m.name === "generate_image" && typeof json.path === "string")
        result.image = { path: json.path, description: String(json.description) };
      if (m.name === "text_to_speech" && typeof json.path === "string") {
        result.speech = { path: json.path, format: String(json.format), durationSeconds: (json.durationSeconds as number | null) ?? null };
      }
    }
    log(`< ${result.answer}`);
    if (emulator) result.ledger = emulator.account(wallet.address)?.entries ?? [];
    return result;
  } finally {
    await emulator?.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  main().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}
