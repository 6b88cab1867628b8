/**
 * The one scenario every runtime runs (test/runtimes/runtimes.test.ts), written as a user writes it: it imports
 * the BUILT package by its names, `langchain-service` and the wallets' `langchain-service/evm` and
 * `langchain-service/solana`, never src/. Plain JS, ESM, no Node API: Node, Bun and Deno run it through ./cli.mjs,
 * workerd through ./worker.mjs, Chromium through ./page.mjs.
 *
 * `runScenario(config, print, entries)` runs each step and prints one JSON line per step: `{ step, ok, detail }`,
 * or `{ step, ok: false, error }` (the error's name and message). The steps go on after a failure, so one run says
 * exactly which steps work on a runtime. `entries` maps each entry's name to its loader, the first one the entry
 * under test (`{ "langchain-service": () => import("langchain-service"), "langchain-service/evm": ... }`), and
 * `resolve(name)` where the runtime can tell where a name resolved: a literal import here would put every entry
 * into every bundle, so each wrapper imports exactly what it runs (the chat worker names the chat entry alone).
 * The wallet steps load their wallet's entry themselves, as a user who pays imports it.
 *
 * config: { runtime, baseUrl, apiKey, model, steps?: string[],
 *           chain: { treasury, usdc, holder },           // the local chain's facts
 *           evmSignInKey, payerKey, solanaKey: number[], // wallets (or evmProvider: an EIP-1193 provider)
 *           evmProvider?: { request }, signInAddress?, payerAddress?,
 *           solanaWallet?: a wallet-standard wallet, instead of solanaKey }
 */
export const STEPS = ["import", "invoke", "stream", "tool-call", "crypto-rpc", "evm-sign-in", "x402-top-up", "solana-sign-in"];

const short = (err) => `${err?.name ?? "Error"}: ${String(err?.message ?? err).split("\n")[0]}`;

/** the exports each entry must give */
const ENTRY_EXPORTS = {
  "langchain-service": ["ChatService", "ServiceClient", "CryptoRpcToolkit"],
  "langchain-service/chat": ["ChatService"],
  "langchain-service/evm": ["EvmWallet"],
  "langchain-service/solana": ["SolanaWallet"],
};

/** Loads one entry and checks its exports: `{ module, detail }`. */
async function loadEntry(entries, resolve, name) {
  const loader = entries[name];
  if (!loader) throw new Error(`this run does not import ${name}`);
  const loaded = await loader();
  const names = ENTRY_EXPORTS[name];
  const missing = names.filter((n) => typeof loaded[n] !== "function");
  if (missing.length) throw new Error(`${name}: exports missing: ${missing.join(", ")}`);
  return { module: loaded, detail: { entry: name, exports: names, ...(resolve ? { resolved: resolve(name) } : {}) } };
}

export async function runScenario(config, print, entries, resolve) {
  const wanted = new Set(config.steps ?? STEPS);
  let pkg;
  const step = async (name, fn) => {
    if (!wanted.has(name)) return;
    if (name !== "import" && !pkg) {
      print(JSON.stringify({ step: name, ok: false, error: "not run: the package did not load" }));
      return;
    }
    try {
      const detail = await fn();
      print(JSON.stringify({ step: name, ok: true, detail }));
    } catch (err) {
      print(JSON.stringify({ step: name, ok: false, error: short(err) }));
    }
  };

  await step("import", async () => {
    const { module: loaded, detail } = await loadEntry(entries, resolve, Object.keys(entries)[0]);
    pkg = loaded;
    return detail;
  });
  /** a wallet entry, loaded once by the first step that needs it */
  const wallets = {};
  const walletEntry = (name) => (wallets[name] ??= loadEntry(entries, resolve, name));
  const { baseUrl, apiKey, model: modelId = "emu-xs", runtime } = config;
  const chat = (extra = {}) => new pkg.ChatService({ model: modelId, baseUrl, ...extra });

  await step("invoke", async () => {
    const message = await chat({ apiKey }).invoke(`hello from ${runtime}`);
    return { text: message.text, inputTokens: message.usage_metadata?.input_tokens };
  });

  await step("stream", async () => {
    let text = "";
    let chunks = 0;
    for await (const chunk of await chat({ apiKey }).stream(`stream on ${runtime}`)) {
      text += chunk.text;
      chunks++;
    }
    return { text, chunks };
  });

  await step("tool-call", async () => {
    const [{ tool }, { HumanMessage }, { z }] = await Promise.all([
      import("@langchain/core/tools"),
      import("@langchain/core/messages"),
      import("zod"),
    ]);
    const weather = tool(({ city }) => `Sunny in ${city}`, {
      name: "get_weather",
      description: "The weather in a city",
      schema: z.object({ city: z.string() }),
    });
    const model = chat({ apiKey }).bindTools([weather]);
    const question = new HumanMessage("Use get_weather: what is the weather in Paris?");
    const first = await model.invoke([question]);
    const call = first.tool_calls?.[0];
    if (!call) throw new Error(`no tool call (answer: ${JSON.stringify(first.text)})`);
    const result = await weather.invoke(call);
    const answer = await model.invoke([question, first, result]);
    return { call: { name: call.name, args: call.args }, toolResult: result.content, answer: answer.text };
  });

  await step("crypto-rpc", async () => {
    const client = new pkg.ServiceClient({ baseUrl, apiKey });
    const chainId = await client.cryptoRpc("base-mainnet", { method: "eth_chainId" });
    const tools = new pkg.CryptoRpcToolkit({ client }).getTools();
    const erc20 = tools.find((t) => t.name === "erc20_balance");
    const out = await erc20.invoke({ network: "base-mainnet", token: config.chain.usdc, owner: config.chain.holder });
    return {
      chainId: chainId.result ?? chainId,
      tools: tools.map((t) => t.name),
      erc20: JSON.parse(typeof out === "string" ? out : out.content),
    };
  });

  /** An EVM wallet: a raw key, or the page's EIP-1193 provider (`fromEip1193`: the key stays in the provider). */
  const evmWallet = async (key, address) => {
    const { module: evm, detail } = await walletEntry("langchain-service/evm");
    const wallet = config.evmProvider ? await evm.EvmWallet.fromEip1193(config.evmProvider, address) : new evm.EvmWallet(key);
    return { wallet, entry: detail };
  };
  const payment = () => ({ allowedPayees: [config.chain.treasury] });

  await step("evm-sign-in", async () => {
    const { wallet, entry } = await evmWallet(config.evmSignInKey, config.signInAddress);
    const message = await chat({ wallet, payment: payment() }).invoke(`signed in on ${runtime}`);
    return { address: wallet.address, text: message.text, entry };
  });

  await step("x402-top-up", async () => {
    const { wallet } = await evmWallet(config.payerKey, config.payerAddress);
    const events = [];
    const message = await chat({ wallet, payment: payment(), onPayment: (e) => events.push(e) }).invoke(`paid on ${runtime}`);
    const balance = await new pkg.ServiceClient({ baseUrl, wallet, payment: payment() }).getX402Balance();
    return {
      address: wallet.address,
      text: message.text,
      events: events.map((e) => e.type),
      settledUsd: events.filter((e) => e.type === "payment.settled").map((e) => e.amountUsd),
      balanceUsd: balance.balanceUsd,
    };
  });

  await step("solana-sign-in", async () => {
    const { module: solana, detail: entry } = await walletEntry("langchain-service/solana");
    // a page's wallet-standard wallet (the key stays in the wallet), else the raw key
    const wallet = config.solanaWallet
      ? await solana.SolanaWallet.fromWalletStandard(config.solanaWallet)
      : new solana.SolanaWallet(Uint8Array.from(config.solanaKey));
    const message = await chat({ wallet }).invoke(`solana on ${runtime}`);
    return { address: wallet.address, text: message.text, entry, ...(config.solanaWallet ? { via: config.solanaWallet.name } : {}) };
  });
}
