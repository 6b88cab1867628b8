/**
 * Runs one money schedule (schedule.ts) against a running emulator and its chain, then checks the money invariants
 * from the chain, the ledger and the signatures counted at the signer. Returns the violations found (empty: held).
 */
import { Contract, Interface, JsonRpcProvider, Network, NonceManager, Wallet, zeroPadValue } from "ethers";
import { privateKeyToAccount } from "viem/accounts";
import type { Emulator } from "langchain-service-emulator";
import type { X402EmulatorOptions } from "../../packages/langchain-service-emulator/src/x402/index.js";
import { USDC_ABI } from "../../packages/langchain-service-emulator/src/chain/index.js";
import {
  AbortError,
  ChatService,
  CryptoRpcToolkit,
  NetworkError,
  ServiceClient,
  ServiceEmbeddings,
  ServiceError,
  SpendBudget,
  SpendLog,
  StreamError,
  InBandStreamError,
  TimeoutError,
  createServiceContext,
  type PaymentEvent,
} from "../../src/index.js";
import { EvmWallet } from "../../src/evm/index.js";
import { stateOf } from "../../src/x402/wallet-state.js";
import { unpacedRoutes } from "../x402/helpers.js";
import type { Op, Schedule } from "./schedule.js";

/** The emulator's terms for these tests: top-ups small enough that a schedule pays several times. */
export const MIN_TOP_UP_USD = 0.05;
export const MIN_BALANCE_USD = 0.005;
/** how late past its deadline a call may end: a turn of a loaded 2-core machine's event loop, and then some */
export const DEADLINE_MARGIN_MS = 1_000;
const STRANGER = "0x000000000000000000000000000000000000dEaD";
const OTHER_TOKEN = "0x1111111111111111111111111111111111111111";

const usdc = new Interface(USDC_ABI);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface MoneyEnv {
  emu: Emulator;
  x402: X402EmulatorOptions;
  provider: JsonRpcProvider;
  funder: NonceManager;
  /** unhandled rejections seen since the last schedule (the test file's process listener fills it) */
  unhandled: unknown[];
  epoch: number;
}

export async function moneyEnv(emu: Emulator, x402: X402EmulatorOptions, unhandled: unknown[]): Promise<MoneyEnv> {
  const provider = new JsonRpcProvider(emu.chain!.rpcUrl, Network.from(emu.chain!.chainId), {
    staticNetwork: true,
    cacheTimeout: -1,
    pollingInterval: 20,
  });
  const funder = new NonceManager(new Wallet(emu.chain!.accounts[1]!.privateKey, provider));
  return { emu, x402, provider, funder, unhandled, epoch: 0 };
}

interface Outcome {
  op: Op;
  ok: boolean;
  error?: unknown;
  /** the caller's own signal's reason, when it aborted */
  reason?: unknown;
  ms: number;
  limitMs: number;
}

/** A viem local account over `key` that counts what it signs (EIP-3009 authorizations: payments). */
function countingAccount(key: `0x${string}`) {
  const inner = privateKeyToAccount(key);
  const signed: { nonce: string; valueAtomic: bigint; to: string }[] = [];
  const account = {
    address: inner.address,
    type: "local" as const,
    signMessage: (args: { message: string }) => inner.signMessage(args),
    signTypedData: (request: Parameters<typeof inner.signTypedData>[0]) => {
      if (request.primaryType === "TransferWithAuthorization") {
        const m = request.message as { nonce: string; value: bigint | string; to: string };
        signed.push({ nonce: String(m.nonce).toLowerCase(), valueAtomic: BigInt(m.value), to: m.to });
      }
      return inner.signTypedData(request);
    },
  };
  return { account, signed };
}

function setKnobs(env: MoneyEnv, s: Schedule): void {
  const f = s.faults;
  env.emu.setFaults({
    errorRate: f.errorRate,
    statuses: f.statuses,
    latencyMs: f.latencyMs,
    paths: f.paths,
    streamCutAfter: f.streamCutAfter,
    loseAnswers: f.loseAnswersRate !== undefined ? { rate: f.loseAnswersRate } : undefined,
    overload: f.overloadRate !== undefined ? { rate: f.overloadRate, retryAfterSeconds: 1 } : undefined,
    streamErrors: f.streamErrors
      ? { first: f.streamErrors.first, code: "upstream_error", afterContent: f.streamErrors.afterContent }
      : undefined,
    seed: f.seed,
  });
  const x = s.x402;
  const w = x.wrongOffer;
  clearKnobs(env);
  Object.assign(env.x402, {
    countsEpoch: ++env.epoch,
    settleDelayMs: x.settleDelayMs,
    delayedSettlements: x.delayedSettlements,
    settlementFailures: x.settlementFailures,
    settlementTimeouts: x.settlementTimeouts,
    settlementTimeoutLands: x.settlementTimeoutLands,
    topUpFailures: x.topUpFailures,
    topUpResponseDelayMs: x.topUpResponseDelayMs,
    wrongOffer: w && {
      first: w.first,
      ...(w.what === "payTo" ? { payTo: STRANGER } : w.what === "asset" ? { asset: OTHER_TOKEN } : { amountUsd: 50 }),
    },
  } satisfies X402EmulatorOptions);
}

function clearKnobs(env: MoneyEnv): void {
  for (const k of [
    "settleDelayMs",
    "delayedSettlements",
    "settlementFailures",
    "settlementTimeouts",
    "settlementTimeoutLands",
    "topUpFailures",
    "topUpResponseDelayMs",
    "wrongOffer",
  ] as const)
    delete env.x402[k];
}

async function fund(env: MoneyEnv, to: string, usd: number): Promise<void> {
  const token = new Contract(env.emu.chain!.usdc.address, USDC_ABI as unknown as string[], env.funder);
  await (await token.getFunction("transfer")(to, BigInt(Math.round(usd * 1e6)))).wait();
}

/** What the chain says the wallet paid: its transfers to the treasury, and the authorization nonces used. */
async function chainView(env: MoneyEnv, wallet: string, fromBlock: number) {
  const chain = env.emu.chain!;
  const transfers = await env.provider.getLogs({
    address: chain.usdc.address,
    topics: [usdc.getEvent("Transfer")!.topicHash, zeroPadValue(wallet, 32), zeroPadValue(chain.treasury, 32)],
    fromBlock,
    toBlock: "latest",
  });
  const used = await env.provider.getLogs({
    address: chain.usdc.address,
    topics: [usdc.getEvent("AuthorizationUsed")!.topicHash, zeroPadValue(wallet, 32)],
    fromBlock,
    toBlock: "latest",
  });
  return {
    transfers: transfers.map((l) => ({ tx: l.transactionHash.toLowerCase(), value: usdc.parseLog(l)!.args.getValue("value") as bigint })),
    usedNonces: new Set(used.map((l) => String(usdc.parseLog(l)!.args.getValue("nonce")).toLowerCase())),
  };
}

function ledgerView(env: MoneyEnv, wallet: string) {
  const entries = env.emu.account(wallet)?.entries ?? [];
  const topUps = entries.filter((e) => e.type === "TOP_UP");
  const perRequest = new Map<string, number>();
  let charged = 0;
  let refunded = 0;
  for (const e of entries) {
    if (e.type === "CHARGE") charged += -e.amount;
    if (e.type === "REFUND") refunded += e.amount;
    if ((e.type === "CHARGE" || e.type === "REFUND") && e.requestId)
      perRequest.set(e.requestId, (perRequest.get(e.requestId) ?? 0) - e.amount);
  }
  return {
    topUps,
    creditedAtomic: topUps.reduce((a, e) => a + BigInt(e.paidAtomic ?? "0"), 0n),
    txs: new Set(topUps.map((e) => String(e.transaction).toLowerCase())),
    spentUsd: charged - refunded,
    maxRequestUsd: Math.max(0, ...perRequest.values()),
  };
}

/** Errors after which a charged answer may have been lost on the way (the ledger may hold a charge the run never saw). */
const lossy = (err: unknown) =>
  (err instanceof TimeoutError ||
    err instanceof AbortError ||
    err instanceof NetworkError ||
    (err instanceof StreamError && !(err instanceof InBandStreamError))) as boolean;

export interface RunResult {
  violations: string[];
  outcomes: { kind: string; ok: boolean; error?: string; ms: number }[];
  payments: number;
  signatures: number;
}

export async function runSchedule(env: MoneyEnv, s: Schedule): Promise<RunResult> {
  const violations: string[] = [];
  const fail = (msg: string) => violations.push(msg);
  const key = Wallet.createRandom().privateKey as `0x${string}`;
  const { account, signed } = countingAccount(key);
  const wallet = new EvmWallet(account);
  await fund(env, wallet.address, s.fundUsd);
  const fromBlock = (await env.provider.getBlockNumber()) + 1;
  const balanceBefore = BigInt(Math.round(s.fundUsd * 1e6));

  const events: PaymentEvent[] = [];
  const context = createServiceContext();
  const budget = s.budgetUsd !== undefined ? new SpendBudget({ maxUsd: s.budgetUsd }) : undefined;
  const spendLog = s.spendLog ? new SpendLog() : undefined;
  const client = new ServiceClient({
    baseUrl: env.emu.url,
    wallet,
    payment: { allowedPayees: [env.emu.chain!.treasury], ...s.policy },
    onPayment: (e) => events.push(e),
    pacing: unpacedRoutes,
    totalTimeout: s.deadlineMs,
    topUp: { topUpTimeoutMs: s.topUpTimeoutMs, maxResends: 2, resendDelayMs: 50 },
    retry: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 100 },
    context,
    ...(budget ? { budget } : {}),
    ...(spendLog ? { spendLog } : {}),
  });
  const model = new ChatService({ serviceFetch: client.fetch, model: "emu-xs", maxTokens: 16 });
  const embeddings = new ServiceEmbeddings({ serviceFetch: client.fetch, model: "text-embedding-bge-m3" });
  const latestBlock = new CryptoRpcToolkit({ client }).getTools().find((t) => t.name === "latest_block")!;

  const call = async (op: Op, signal: AbortSignal | undefined): Promise<unknown> => {
    switch (op.kind) {
      case "chat":
        return model.invoke("how much?", { signal });
      case "stream": {
        let text = "";
        for await (const chunk of await model.stream("stream it", { signal })) text += String(chunk.content);
        return text;
      }
      case "embed":
        return embeddings.embedWithUsage(["a", "b"], { signal });
      case "rpc":
        return client.cryptoRpc("base-mainnet", { method: "eth_blockNumber" }, { signal });
      case "rpcTool":
        return latestBlock.invoke({ network: "base-mainnet" }, { signal });
      case "image":
        return client.generateImage({ model: "emu-image", prompt: "a boat", width: 64, height: 64 }, { signal });
    }
  };

  setKnobs(env, s);
  const outcomes: Outcome[] = [];
  try {
    await Promise.all(
      s.ops.map(async (op) => {
        await sleep(op.startMs);
        const started = Date.now();
        const signalMs = Math.min(op.abortMs ?? Number.POSITIVE_INFINITY, op.deadlineSignal ? s.deadlineMs : Number.POSITIVE_INFINITY);
        const signal = Number.isFinite(signalMs) ? AbortSignal.timeout(signalMs) : undefined;
        // A crypto RPC call reads the network list first (once per client): two requests, each with its own
        // totalTimeout, so a call bound by totalTimeout alone may take two (reported in issue 35)
        const byTotalTimeout = (op.kind === "rpc" || op.kind === "rpcTool" ? 2 : 1) * s.deadlineMs;
        const limitMs = Math.min(byTotalTimeout, signalMs);
        try {
          await call(op, signal);
          outcomes.push({ op, ok: true, ms: Date.now() - started, limitMs });
        } catch (error) {
          outcomes.push({ op, ok: false, error, reason: signal?.reason, ms: Date.now() - started, limitMs });
        }
      }),
    );
  } finally {
    // quiet: the wallet's top-up still running (the caller gave up on it, not the wallet) ends on a calm service
    env.emu.setFaults({});
    clearKnobs(env);
  }

  // 7. typed errors only; 8. within the deadline
  for (const o of outcomes) {
    // the caller's own abort reason handed back as it is (LangChain does so for a signal aborted before the call) is
    // the caller's; anything else is one of ours
    if (!o.ok && !(o.error instanceof ServiceError) && !(o.reason !== undefined && o.error === o.reason))
      fail(`${o.op.kind}: untyped failure ${(o.error as Error)?.name}: ${String((o.error as Error)?.message ?? o.error).slice(0, 200)}`);
    if (o.ms > o.limitMs + DEADLINE_MARGIN_MS) fail(`${o.op.kind}: ended after ${o.ms} ms, its deadline ${o.limitMs} ms`);
  }

  // the wallet's own top-up in flight (the calls gave up on it, it runs on) and the emulator's settlements end
  // (a 402 still on its way when its caller gave up starts one after the calls ended): quiet means no top-up in flight,
  // every signature's outcome reported, and no payment event for a while
  const state = stateOf(wallet, context);
  const endedAt = Date.now();
  const quietBy = endedAt + 20_000;
  const unresolved = () =>
    signed.filter(
      (x) =>
        !events.some(
          (e, i) =>
            (e.type === "payment.settled" && e.nonce?.toLowerCase() === x.nonce) ||
            (e.type === "payment.failed" && i > events.findIndex((f) => f.type === "payment.signed" && f.nonce?.toLowerCase() === x.nonce)),
        ),
    );
  for (let seen = -1; Date.now() < quietBy; ) {
    if (state.inFlight) await Promise.race([state.inFlight.catch(() => undefined), sleep(100)]);
    else if (seen !== events.length || unresolved().length > 0) {
      seen = events.length;
      await sleep(200);
    } else break;
  }
  if (state.inFlight) fail("the wallet's top-up was still in flight 20 s after the calls ended");
  const eventLog = () => events.map((e) => `${e.type}${e.nonce ? `(${e.nonce.slice(0, 10)})` : ""}@${e.at - endedAt}`).join(", ");
  let chain = await chainView(env, wallet.address, fromBlock);
  let ledger = ledgerView(env, wallet.address);
  for (let i = 0; i < 60 && chain.transfers.length !== ledger.topUps.length; i++) {
    await sleep(100);
    chain = await chainView(env, wallet.address, fromBlock);
    ledger = ledgerView(env, wallet.address);
  }

  // 1. total signed within the policy's caps
  const signedUsd = signed.reduce((a, x) => a + Number(x.valueAtomic), 0) / 1e6;
  if (signedUsd > s.policy.maxPerPeriodUsd + 1e-9) fail(`signed $${signedUsd}, over the period cap $${s.policy.maxPerPeriodUsd}`);
  const perTopUp = s.policy.maxPerTopUpUsd ?? 20;
  for (const x of signed) {
    if (Number(x.valueAtomic) / 1e6 > perTopUp + 1e-9) fail(`signed $${Number(x.valueAtomic) / 1e6}, over the cap per top-up $${perTopUp}`);
    if (x.to.toLowerCase() !== env.emu.chain!.treasury.toLowerCase()) fail(`signed a payment to ${x.to}, not the treasury`);
  }
  if (new Set(signed.map((x) => x.nonce)).size !== signed.length) fail("a nonce was signed twice");
  const signedEvents = events.filter((e) => e.type === "payment.signed");
  if (signedEvents.length !== signed.length)
    fail(`${signed.length} signatures at the signer, ${signedEvents.length} payment.signed events`);

  // 2. every signature credited on the ledger or reported as failed
  for (const x of signed) {
    const at = events.findIndex((e) => e.type === "payment.signed" && e.nonce?.toLowerCase() === x.nonce);
    const settledEvent = events.some((e) => e.type === "payment.settled" && e.nonce?.toLowerCase() === x.nonce);
    const failedAfter = events.slice(at + 1).some((e) => e.type === "payment.failed");
    const onChain = chain.usedNonces.has(x.nonce);
    if (settledEvent && !onChain) fail(`payment ${x.nonce.slice(0, 10)} reported settled, but its authorization is unused on chain`);
    if (!onChain && !failedAfter)
      fail(`payment ${x.nonce.slice(0, 10)} neither settled on chain nor reported as failed; events: ${eventLog()}`);
    if (onChain && !settledEvent && !failedAfter)
      fail(`payment ${x.nonce.slice(0, 10)} settled on chain, reported neither settled nor failed`);
  }
  for (const n of chain.usedNonces)
    if (!signed.some((x) => x.nonce === n)) fail(`an authorization ${n.slice(0, 10)} the signer never gave was used`);

  // 4. what the ledger credited is what moved on chain
  const movedAtomic = chain.transfers.reduce((a, t) => a + t.value, 0n);
  if (ledger.creditedAtomic !== movedAtomic) fail(`ledger credited ${ledger.creditedAtomic} atomic, chain moved ${movedAtomic}`);
  if (ledger.topUps.length !== chain.transfers.length) fail(`${ledger.topUps.length} ledger top-ups, ${chain.transfers.length} transfers`);
  for (const t of chain.transfers) if (!ledger.txs.has(t.tx)) fail(`transfer ${t.tx.slice(0, 10)} is not credited on the ledger`);
  const balanceAfter = (await new Contract(env.emu.chain!.usdc.address, USDC_ABI as unknown as string[], env.provider).getFunction(
    "balanceOf",
  )(wallet.address)) as bigint;
  if (balanceBefore - balanceAfter !== movedAtomic)
    fail(`the wallet's USDC fell by ${balanceBefore - balanceAfter}, transfers say ${movedAtomic}`);

  // 3. payments within what the credit spent needs (less the minimum credit the service keeps), plus one
  const amountUsd = s.policy.amountUsd ?? MIN_TOP_UP_USD;
  const bound = Math.ceil(ledger.spentUsd / (amountUsd - MIN_BALANCE_USD) - 1e-9) + 1;
  if (chain.transfers.length > bound)
    fail(`${chain.transfers.length} payments for $${ledger.spentUsd} spent at $${amountUsd} each (bound ${bound})`);

  // 5. the receipts reconcile where no charged answer was lost
  const lost =
    s.faults.loseAnswersRate !== undefined || s.faults.streamCutAfter !== undefined || outcomes.some((o) => !o.ok && lossy(o.error));
  if (spendLog && !lost) {
    const report = await spendLog.reconcile(client, { signal: AbortSignal.timeout(10_000) });
    if (!report.ok) fail(`reconcile: ${JSON.stringify({ ...report, ledger: undefined, run: undefined }).slice(0, 600)}`);
  }

  // 6. a budget exceeded by one call at most, and nothing left held
  if (budget) {
    if (ledger.spentUsd > budget.maxUsd + ledger.maxRequestUsd + 1e-9)
      fail(`budget $${budget.maxUsd}: the ledger charged $${ledger.spentUsd} (largest request $${ledger.maxRequestUsd})`);
    await budget.refresh();
    if (budget.reservedUsd !== 0) fail(`budget holds $${budget.reservedUsd} after every call ended`);
  }

  // 7. no unhandled rejection
  await sleep(20);
  // (one that comes after this check is the next schedule's finding: late, never lost)
  for (const r of env.unhandled.splice(0)) fail(`unhandled rejection: ${String((r as Error)?.stack ?? r).slice(0, 300)}`);

  return {
    violations,
    outcomes: outcomes.map((o) => ({
      kind: o.op.kind,
      ok: o.ok,
      ms: o.ms,
      ...(o.ok ? {} : { error: `${(o.error as Error)?.name}: ${String((o.error as Error)?.message).slice(0, 120)}` }),
    })),
    payments: chain.transfers.length,
    signatures: signed.length,
  };
}
