/**
 * A self-paying agent that makes a short video and transcribes a spoken clip: no account, no API key, only a
 * wallet. The chat model, the `generate_video` and `transcribe_audio` tools and the owner's own speech request share
 * one fetch stack, so the first 402 tops up USDC credit once (x402, within the owner's policy) and everything after
 * is served from it. The video job is quoted first and held to the owner's `maxQuoteUsd`, queued once, and polled
 * until its MP4 lands in the output directory; the transcription reads the clip from that directory only.
 *
 * Against the embedded emulator the wallet is a funded account of a local chain holding the emulator's test USDC.
 *
 *   npm run example:video-agent
 *   SERVICE_BASE_URL=https://.../api/v1 WALLET_PRIVATE_KEY=0x... SERVICE_MODEL=... VIDEO_MODEL=... OUTPUT_DIR=./out npm run example:video-agent
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { createAgent } from "langchain";
import { HumanMessage, ToolMessage } from "@langchain/core/messages";
import {
  ChatService,
  ServiceClient,
  createServiceFetch,
  type JobProgress,
  type PaymentEvent,
  type PaymentPolicyOptions,
} from "../src/index.js";
import { EvmWallet } from "../src/evm/index.js";
import { TranscriptionTool, VideoGenerationTool } from "../src/tools/index.js";
import { startEmulator, type LedgerEntry } from "langchain-service-emulator";

export interface Options {
  baseUrl?: string;
  /** where the clip and the video go (default ./video-agent-output) */
  outputDir?: string;
  log?: (line: string) => void;
}

export interface Result {
  wallet: string;
  answer: string;
  /** what the clip says (the owner's text) */
  clipText: string;
  video?: { path: string; costUsd: number; duration: string };
  transcript?: { text: string; durationSeconds: number | null };
  progress: JobProgress[];
  payments: PaymentEvent[];
  /** embedded run: the emulator's ledger for the wallet */
  ledger?: LedgerEntry[];
}

const CLIP_TEXT = "The tide comes in at six. Meet me by the lighthouse.";

export async function main(options: Options = {}): Promise<Result> {
  const log = options.log ?? console.log;
  let baseUrl = options.baseUrl ?? process.env.SERVICE_BASE_URL;
  const outputDir = resolve(options.outputDir ?? process.env.OUTPUT_DIR ?? "video-agent-output");
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

    // the spoken clip the agent will transcribe: recorded by the owner with the service's own voice, same wallet
    await mkdir(outputDir, { recursive: true });
    const speech = await new ServiceClient({ serviceFetch }).createSpeech({ input: CLIP_TEXT, format: "wav" });
    await writeFile(join(outputDir, "clip.wav"), speech.audio);
    log(`clip.wav: "${CLIP_TEXT}" (${speech.durationSeconds?.toFixed(2)} s)`);

    const progress: JobProgress[] = [];
    const tools = [
      new VideoGenerationTool({
        serviceFetch,
        outputDir,
        duration: "4s",
        maxQuoteUsd: 1,
        ...(process.env.VIDEO_MODEL ? { model: process.env.VIDEO_MODEL } : {}),
        onProgress: (p) => {
          progress.push(p);
          log(
            `  video ${p.phase}${p.quoteUsd ? ` (quote $${p.quoteUsd})` : ""}${p.fraction !== undefined ? ` ${Math.round(p.fraction * 100)}%` : ""}`,
          );
        },
      }),
      new TranscriptionTool({ serviceFetch, inputDir: outputDir }),
    ];
    const model = new ChatService({ model: process.env.SERVICE_MODEL ?? "emu-s", serviceFetch });
    const agent = createAgent({
      model,
      tools,
      systemPrompt: "You make videos and transcribe recordings; say where the files are and what was said.",
    });

    const question =
      'Use generate_video with prompt: "a lighthouse at dusk as the tide comes in", ' + 'then transcribe_audio with path: "clip.wav"';
    log(`> ${question}`);
    const { messages } = await agent.invoke({ messages: [new HumanMessage(question)] });
    const result: Result = { wallet: wallet.address, answer: messages.at(-1)!.text, clipText: CLIP_TEXT, progress, payments };
    for (const m of messages) {
      if (!ToolMessage.isInstance(m)) continue;
      const json = JSON.parse(m.text) as Record<string, unknown>;
      log(`  ${m.name} -> ${m.text}`);
      if (m.name === "generate_video" && typeof json.path === "string")
        result.video = { path: json.path, costUsd: Number(json.costUsd), duration: String(json.duration) };
      if (m.name === "transcribe_audio" && typeof json.text === "string")
        result.transcript = { text: json.text, durationSeconds: (json.durationSeconds as number | null) ?? null };
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
