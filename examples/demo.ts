/**
 * The main job, in one command (`npm run demo`): an agent that has only a wallet pays for its own inference
 * and answers a question that needs chain reads.
 *
 * With no SERVICE_BASE_URL it starts, in-process, the local service emulator and a local chain (ganache,
 * chain id 8453) with a test USDC, funds a fresh wallet with it, and runs a LangChain agent (`createAgent`)
 * built on `ChatService` with the `CryptoRpcToolkit`. Its first request hits 402; the payment layer tops up
 * within the owner's policy and retries; the agent reads the chain through the service's JSON-RPC proxy and
 * streams its answer. Against a real deployment: SERVICE_BASE_URL plus SERVICE_API_KEY or WALLET_PRIVATE_KEY.
 */
import { pathToFileURL } from "node:url";
import { Contract, JsonRpcProvider, Network, Wallet, formatUnits, parseUnits } from "ethers";
import { createAgent } from "langchain";
import { AIMessageChunk, HumanMessage } from "@langchain/core/messages";
import type { Serialized } from "@langchain/core/load/serializable";
import type { LLMResult } from "@langchain/core/outputs";
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import {
  ChatService,
  CryptoRpcToolkit,
  PaymentPolicy,
  ServiceClient,
  SpendLog,
  type PaymentEvent,
  type Reconciliation,
  type ServiceResponseHeaders,
} from "../src/index.js";
import type { Emulator } from "langchain-service-emulator";
import { EvmWallet } from "../src/evm/index.js";

export interface DemoResult {
  answer: string;
  modelCalls: number;
  toolCalls: string[];
  tokens: { input: number; output: number };
  costUsd: number;
  payments: PaymentEvent[];
  creditLeftUsd?: number;
  ledger?: { toppedUp: number; charged: number };
  onChain?: { walletBefore: string; walletAfter: string; treasuryGain: string };
  /** HTTP requests that reached the service, and how many it refused with 429 (rate, in-flight or overload limits) */
  wire: { requests: number; refused429: number };
  /** the run's receipts (JSONL) and their proof against the service's ledger (wallet runs) */
  receipts: string;
  reconciliation?: Reconciliation;
}

export interface DemoOptions {
  log?: (line: string) => void;
  /** write streamed answer tokens (default: process.stdout) */
  write?: (text: string) => void;
}

const usd = (n: number | undefined) => (n === undefined ? "?" : `$${n.toFixed(n !== 0 && Math.abs(n) < 0.01 ? 6 : 2)}`);
/** balances move by fractions of a cent per call: show enough digits to see it */
const credit = (n: number | undefined) => (n === undefined ? "?" : `$${n.toFixed(6)}`);
const short = (s: string) => (s.length > 14 ? `${s.slice(0, 8)}…${s.slice(-4)}` : s);
const color = (code: number) => (s: string) => (process.stdout.isTTY ? `\x1b[${code}m${s}\x1b[0m` : s);
const bold = color(1);
const dim = color(2);
const green = color(32);
const yellow = color(33);
const cyan = color(36);

/** Prints each step as it happens: model calls (tokens, cost, balance) and tool calls. */
class StepPrinter extends BaseCallbackHandler {
  name = "demo-steps";
  modelCalls = 0;
  toolCalls: string[] = [];
  input = 0;
  output = 0;
  costUsd = 0;
  /** tool call id -> tool name, from the model's tool calls (tool callbacks carry class names) */
  #toolNames = new Map<string, string>();
  /** set while the answer streams, so step lines start on a fresh line */
  midLine = false;
  /**
   * `creditLeft`: the wallet's credit after a call, when its answer did not say (the live service sends no
   * X-Balance-Remaining): read from GET /x402/balance, so the step lines wait for it (awaited, in order)
   */
  constructor(
    private readonly log: (line: string) => void,
    private readonly creditLeft?: () => Promise<number | undefined>,
  ) {
    super();
    this.awaitHandlers = creditLeft !== undefined;
  }
  #line(text: string) {
    if (this.midLine) {
      this.log("");
      this.midLine = false;
    }
    this.log(text);
  }
  override handleChatModelStart(llm: Serialized, _messages: unknown, _runId: string, _parent?: string, extra?: Record<string, unknown>) {
    this.modelCalls++;
    const model = (extra?.invocation_params as { model?: string } | undefined)?.model ?? llm.id.at(-1);
    this.#line(`${cyan(`[model call ${this.modelCalls}]`)} ${model} …`);
  }
  override async handleLLMEnd(output: LLMResult) {
    const message = (output.generations[0]?.[0] as { message?: AIMessageChunk } | undefined)?.message;
    const usage = message?.usage_metadata;
    const meta = message?.response_metadata as { cost?: { usd?: number; diem?: number }; headers?: ServiceResponseHeaders } | undefined;
    // the service bills staking-token (DIEM) credit first, then USD; both count as USD here
    const cost = (meta?.cost?.usd ?? 0) + (meta?.cost?.diem ?? 0);
    this.input += usage?.input_tokens ?? 0;
    this.output += usage?.output_tokens ?? 0;
    this.costUsd += cost;
    for (const c of message?.tool_calls ?? []) if (c.id) this.#toolNames.set(c.id, c.name);
    const calls = message?.tool_calls?.map((c) => c.name).join(", ");
    const remaining = meta?.headers?.balance?.remainingUsd ?? (await this.creditLeft?.().catch(() => undefined));
    this.#line(
      dim(
        `    ${usage?.input_tokens ?? "?"} in / ${usage?.output_tokens ?? "?"} out tokens, cost ${usd(cost)}` +
          (remaining !== undefined ? `, credit left ${credit(remaining)}` : "") +
          `, spent so far ${usd(this.costUsd)}` +
          (calls ? ` → wants ${calls}` : ""),
      ),
    );
  }
  override handleToolStart(
    tool: Serialized,
    input: string,
    _runId: string,
    _parent?: string,
    _tags?: string[],
    _metadata?: Record<string, unknown>,
    runName?: string,
    toolCallId?: string,
  ) {
    const toolName = (toolCallId && this.#toolNames.get(toolCallId)) ?? runName ?? tool.id.at(-1) ?? "tool";
    this.toolCalls.push(toolName);
    this.#line(`${yellow(`[tool call]`)} ${toolName} ${dim(input.length > 160 ? `${input.slice(0, 160)}…` : input)}`);
  }
  override handleToolEnd(output: unknown) {
    const content = typeof output === "string" ? output : String((output as { content?: unknown })?.content ?? output);
    this.#line(dim(`    ← ${content.length > 200 ? `${content.slice(0, 200)}…` : content}`));
  }
}

async function usdcOf(rpcUrl: string, chainId: number, token: string, owner: string): Promise<bigint> {
  const provider = new JsonRpcProvider(rpcUrl, Network.from(chainId), { staticNetwork: true });
  try {
    return (await new Contract(token, ["function balanceOf(address) view returns (uint256)"], provider).getFunction("balanceOf")(
      owner,
    )) as bigint;
  } finally {
    provider.destroy();
  }
}

/** Sets up the local world: emulator + chain, a funded agent wallet, and a transfer to ask about. */
async function localWorld(log: (line: string) => void) {
  const { startEmulator } = await import("langchain-service-emulator");
  log(`${bold("▸")} starting the local service emulator and a local chain (ganache, chain id 8453)…`);
  const emulator: Emulator = await startEmulator({ chain: true });
  const chain = emulator.chain!;
  const provider = new JsonRpcProvider(chain.rpcUrl, Network.from(chain.chainId), { staticNetwork: true });
  const funder = new Wallet(chain.accounts[1]!.privateKey, provider);
  const usdc = new Contract(chain.usdc.address, ["function transfer(address,uint256) returns (bool)"], funder);
  // The agent's wallet: fresh, no account, no API key — only test USDC.
  const agentKey = Wallet.createRandom();
  await (await usdc.getFunction("transfer")(agentKey.address, parseUnits("25", 6))).wait();
  // Something to ask about: a transfer of 42.25 USDC to a fresh address.
  const holder = Wallet.createRandom().address;
  const tx = await usdc.getFunction("transfer")(holder, parseUnits("42.25", 6));
  const receipt = await tx.wait();
  provider.destroy();
  log(`  service   ${emulator.url}  ${dim("(embedded emulator)")}`);
  log(`  chain     ${chain.rpcUrl}  USDC ${chain.usdc.address}`);
  return {
    emulator,
    baseUrl: emulator.url,
    wallet: new EvmWallet(agentKey.privateKey),
    policy: new PaymentPolicy({
      // default assets (real USDC only): the emulator's test token lives at the real USDC address on Base;
      // pay only the service's own payee
      allowedPayees: [chain.treasury],
      amountUsd: 5,
      maxPerTopUpUsd: 10,
      maxPerPeriodUsd: 20,
    }),
    question:
      `What is the USDC balance of "${holder}" on base-mainnet (token "${chain.usdc.address}"), ` +
      `and did transaction ${receipt!.hash} succeed?`,
    chain,
  };
}

async function toolCallingModel(baseUrl: string, wallet: EvmWallet | undefined): Promise<string> {
  const models = await new ServiceClient({ baseUrl, ...(wallet ? { wallet } : {}) }).listModels({ type: "text" });
  const pick = models.find((m) => m.model_spec?.capabilities?.supportsFunctionCalling === true) ?? models[0];
  if (!pick) throw new Error("the service lists no text model; set SERVICE_MODEL");
  return pick.id;
}

export async function main(options: DemoOptions = {}): Promise<DemoResult> {
  const log = options.log ?? ((line: string) => console.log(line));
  const write = options.write ?? ((text: string) => process.stdout.write(text));
  log(bold("langchain-service demo — an agent that pays for its own inference and reads a chain"));

  const remote = process.env.SERVICE_BASE_URL;
  let world: Awaited<ReturnType<typeof localWorld>> | undefined;
  let baseUrl: string;
  let wallet: EvmWallet | undefined;
  let policy: PaymentPolicy | undefined;
  let question: string;
  if (remote) {
    baseUrl = remote;
    const key = process.env.WALLET_PRIVATE_KEY;
    wallet = key ? new EvmWallet(key) : undefined;
    policy = wallet ? new PaymentPolicy({ maxPerTopUpUsd: 10, maxPerPeriodUsd: 20 }) : undefined;
    question = process.env.DEMO_QUESTION ?? "What is the latest block number on base-mainnet?";
    log(`  service   ${baseUrl}  ${dim(wallet ? "(wallet sign-in)" : "(API key from SERVICE_API_KEY)")}`);
  } else {
    world = await localWorld(log);
    ({ baseUrl, wallet, policy, question } = world);
  }
  // On the emulator, emu-m plans tool calls from the prompt; elsewhere SERVICE_MODEL, else the first model
  // the service lists as able to call functions.
  const model = process.env.SERVICE_MODEL ?? (remote ? await toolCallingModel(baseUrl, wallet) : "emu-m");

  const payments: PaymentEvent[] = [];
  const onPayment = (e: PaymentEvent) => {
    if (e.type === "payment.requested")
      log(`${green("[payment]")} 402 Payment Required → topping up ${usd(e.amountUsd)} on ${e.network} to ${short(e.payTo ?? "?")}`);
    else if (e.type === "payment.settled") {
      payments.push(e);
      log(`${green("[payment]")} settled ${usd(e.amountUsd)}, tx ${short(e.transaction ?? "?")}, credit now ${credit(e.balanceUsd)}`);
    } else if (e.type === "payment.refused") log(`${green("[payment]")} refused by policy (${e.rule}): ${e.reason}`);
    else if (e.type === "payment.failed") log(`${green("[payment]")} failed: ${e.reason}`);
  };

  const walletBefore =
    world && wallet ? await usdcOf(world.chain.rpcUrl, world.chain.chainId, world.chain.usdc.address, wallet.address) : undefined;
  const treasuryBefore = world
    ? await usdcOf(world.chain.rpcUrl, world.chain.chainId, world.chain.usdc.address, world.chain.treasury)
    : undefined;
  if (wallet) {
    log(
      `${bold("▸")} agent wallet ${wallet.address} ${dim("— no account, no API key")}${walletBefore !== undefined ? `, holds ${formatUnits(walletBefore, 6)} test USDC` : ""}`,
    );
    log(
      dim(
        `  policy: ${usd(5)} per top-up, at most ${usd(10)} per top-up and ${usd(20)} per 24 h, only the service's payee, real USDC only`,
      ),
    );
  }

  // What reached the service: the stack keeps within its limits (5 requests in flight per wallet, crypto RPC one
  // at a time, the rate windows), so the service should refuse nothing with a 429.
  const wire = { requests: 0, refused429: 0 };
  const countingFetch = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await fetch(input, init);
    wire.requests++;
    if (res.status === 429) wire.refused429++;
    return res;
  };
  // One wallet object and one policy: the chat model and the crypto tools share the money state and caps.
  // Receipts of every charge and payment, from both faces, to prove against the service's ledger at the end
  const receipts = new SpendLog();
  const access = { fetch: countingFetch, spendLog: receipts, ...(wallet ? { wallet, payment: policy, onPayment } : {}) };
  const chat = new ChatService({ model, baseUrl, ...access, streaming: true });
  const client = new ServiceClient({ baseUrl, ...access });
  const tools = new CryptoRpcToolkit({ client }).getTools();
  const agent = createAgent({ model: chat, tools });

  log("");
  log(`${bold("Question:")} ${question}`);
  log("");
  const steps = new StepPrinter(log, wallet ? () => client.lastBalanceUsd() : undefined);
  let answer = "";
  let answering = false;
  let failure: { error: unknown } | undefined;
  try {
    const stream = await agent.stream({ messages: [new HumanMessage(question)] }, { streamMode: "messages", callbacks: [steps] });
    for await (const [chunk] of stream) {
      if (!(chunk instanceof AIMessageChunk) || typeof chunk.content !== "string" || !chunk.content) continue;
      if (chunk.tool_call_chunks?.length) continue;
      if (!answering) {
        answering = true;
        log(`${bold("[answer, streaming]")}`);
      }
      answer += chunk.content;
      write(chunk.content);
      steps.midLine = true;
    }
    if (steps.midLine) write("\n");
    steps.midLine = false;
  } catch (error) {
    failure = { error };
  }
  // the summary, after a failed run too; then the run's error, so that a failed run exits non-zero
  log("");
  const creditLeft = wallet
    ? await client.getX402Balance().then(
        (b) => b.balanceUsd,
        () => undefined,
      )
    : undefined;
  const ledger = world && wallet ? world.emulator.ledger.totals(world.emulator.ledger.wallet(wallet.address)) : undefined;
  const walletAfter =
    world && wallet ? await usdcOf(world.chain.rpcUrl, world.chain.chainId, world.chain.usdc.address, wallet.address) : undefined;
  const treasuryAfter = world
    ? await usdcOf(world.chain.rpcUrl, world.chain.chainId, world.chain.usdc.address, world.chain.treasury)
    : undefined;
  const paid = payments.reduce((a, p) => a + (p.amountUsd ?? 0), 0);
  log(bold("Summary"));
  log(`  model calls ${steps.modelCalls}, tool calls ${steps.toolCalls.length} (${steps.toolCalls.join(", ") || "none"})`);
  log(`  tokens ${steps.input + steps.output} (${steps.input} in / ${steps.output} out), inference cost ${usd(steps.costUsd)}`);
  log(`  payments ${payments.length} (${usd(paid)})${creditLeft !== undefined ? `, credit left ${credit(creditLeft)}` : ""}`);
  if (ledger) log(`  service ledger: topped up ${usd(ledger.toppedUp)}, charged ${usd(ledger.charged)} in ${ledger.charges} requests`);
  log(`  requests to the service ${wire.requests}, refused with 429: ${wire.refused429}`);
  // the receipts against the service's own ledger (GET /x402/transactions): a wallet's run only
  const reconciliation = wallet ? await receipts.reconcile(client).catch(() => undefined) : undefined;
  const totals = receipts.totals();
  if (reconciliation) {
    const differences =
      reconciliation.unseenCharges.length +
      reconciliation.missingFromLedger.length +
      reconciliation.amountMismatches.length +
      reconciliation.unseenTopUps.length +
      reconciliation.missingTopUps.length;
    log(
      `  receipts: ${totals.payments} payment(s), ${totals.charges} charge(s) (${usd(totals.chargedUsd)}); ` +
        `reconciled with the service's ledger: ${differences} difference(s)`,
    );
  }
  if (walletBefore !== undefined && walletAfter !== undefined && treasuryBefore !== undefined && treasuryAfter !== undefined) {
    log(
      `  on chain: agent wallet ${formatUnits(walletBefore, 6)} → ${formatUnits(walletAfter, 6)} USDC, service treasury +${formatUnits(treasuryAfter - treasuryBefore, 6)} USDC`,
    );
  }
  const result: DemoResult = {
    answer,
    modelCalls: steps.modelCalls,
    toolCalls: steps.toolCalls,
    tokens: { input: steps.input, output: steps.output },
    costUsd: steps.costUsd,
    payments,
    creditLeftUsd: creditLeft,
    wire,
    receipts: receipts.toJSONL(),
    reconciliation,
    ledger: ledger && { toppedUp: ledger.toppedUp, charged: ledger.charged },
    onChain:
      walletBefore !== undefined && walletAfter !== undefined && treasuryBefore !== undefined && treasuryAfter !== undefined
        ? {
            walletBefore: formatUnits(walletBefore, 6),
            walletAfter: formatUnits(walletAfter, 6),
            treasuryGain: formatUnits(treasuryAfter - treasuryBefore, 6),
          }
        : undefined,
  };
  await world?.emulator.close();
  if (failure) throw failure.error;
  return result;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(`demo failed: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
      process.exit(1);
    },
  );
}
