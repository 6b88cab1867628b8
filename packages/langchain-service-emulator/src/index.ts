/**
 * The local service emulator, in-process: `startEmulator(options)` starts a real HTTP server on a loopback
 * port that speaks the API at `{url}` (= `http://127.0.0.1:PORT/api/v1`) with an honest ledger, rate limits,
 * the abuse block, fault injection and, on request, a local chain and wallet payments.
 *
 *   const emu = await startEmulator({ apiKeys: [{ key: "k1", usd: 5 }] });
 *   // ... point a client at emu.url with apiKey "k1" ...
 *   await emu.close();
 */
import { randomBytes } from "node:crypto";
import { brandNames, ConfigurationError } from "langchain-service";
import { FaultInjector } from "./faults.js";
import { Ledger } from "./ledger.js";
import { validateChatOptions } from "./models/chat-behaviour.js";
import { jobOptions } from "./media/jobs.js";
import { RateLimiter } from "./rate-limits.js";
import { createApp, routeTable, type EmulatorApp } from "./app.js";
import { API_PREFIX, closeServer, listen } from "./server.js";
import {
  isLiveMode,
  type Account,
  type ApiKeyOption,
  type EmulatorContext,
  type EmulatorOptions,
  type FaultOptions,
  type LocalChain,
  type X402Hooks,
} from "./types.js";
import { createDefaultX402Hooks, loadX402Hooks } from "./x402-default.js";

export * from "./types.js";
export { Ledger, DEFAULT_KEY_DIEM, DEFAULT_KEY_USD, type ChargeResult } from "./ledger.js";
export { MODELS, findModel, type EmulatedModel, type ModelTier, type ModelCapabilities } from "./models/catalog.js";
export {
  RateLimiter,
  TIER_LIMITS,
  PARTNER_TIER_LIMITS,
  ABUSE_BLOCK_MESSAGE,
  type RateLimitLogEntry,
  type Tier,
  type TierLimit,
} from "./rate-limits.js";
export { FaultInjector, seededRandom } from "./faults.js";
export { DEFAULT_NETWORKS, cryptoNetworks } from "./routes/networks.js";
export { API_PREFIX, EMULATOR_VERSION, MAX_BODY_BYTES, SEED_MAX_BODY_BYTES } from "./server.js";
export { publicAccountId } from "./auth.js";

export interface Emulator {
  /** base URL including the version prefix: `http://127.0.0.1:PORT/api/v1` */
  url: string;
  /** `http://127.0.0.1:PORT` */
  origin: string;
  port: number;
  /** the API keys the emulator accepts */
  apiKeys: string[];
  ledger: Ledger;
  /** the local chain, when `chain` was asked for */
  chain?: LocalChain;
  context: EmulatorContext;
  rateLimiter: RateLimiter;
  /** the routes it serves, `METHOD /api/v1/path`, in the order they match (built-in, x402's, then `routes`) */
  routes: string[];
  /** swaps the fault options at run time (`{}` turns faults off) */
  setFaults(faults: FaultOptions): void;
  /** the ledger account of an API key or a wallet address */
  account(keyOrAddress: string): Account | undefined;
  close(): Promise<void>;
}

/** `https://api.example` as given (an http(s) origin and nothing else), or a ConfigurationError. */
function publicOriginOf(value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  // nothing but scheme, host and port: SIWX domain and uri are compared with exactly this
  if (
    !url ||
    (url.protocol !== "http:" && url.protocol !== "https:") ||
    url.username ||
    url.password ||
    url.pathname !== "/" ||
    url.search ||
    url.hash
  ) {
    throw new ConfigurationError(
      `emulator publicOrigin must be an http(s) origin such as https://api.example (got ${JSON.stringify(value)})`,
    );
  }
  return url.origin;
}

function validateOptions(options: EmulatorOptions): void {
  if (options.publicOrigin !== undefined) publicOriginOf(options.publicOrigin);
  try {
    jobOptions(options.jobs);
  } catch (err) {
    throw new ConfigurationError(`emulator ${(err as Error).message}`);
  }
  validateChatOptions(options.chat);
  if (options.cors !== undefined && typeof options.cors !== "boolean")
    throw new ConfigurationError(`emulator cors must be a boolean (got ${JSON.stringify(options.cors)})`);
  if (options.modelGates !== undefined && typeof options.modelGates !== "boolean")
    throw new ConfigurationError(`modelGates must be a boolean (got ${JSON.stringify(options.modelGates)})`);
  if (options.mode !== undefined && options.mode !== "live" && options.mode !== "seed") {
    throw new ConfigurationError(`emulator mode must be "live" or "seed" (got ${JSON.stringify(options.mode)})`);
  }
  const flights = options.walletConcurrency;
  if (flights !== undefined && flights !== false && !(Number.isInteger(flights) && flights > 0)) {
    throw new ConfigurationError(`emulator walletConcurrency must be a positive integer or false (got ${String(flights)})`);
  }
  const bodyLimit = options.maxBodyBytes;
  if (bodyLimit !== undefined && !(Number.isSafeInteger(bodyLimit) && bodyLimit > 0)) {
    throw new ConfigurationError(`emulator maxBodyBytes must be a positive whole number of bytes (got ${String(bodyLimit)})`);
  }
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new ConfigurationError(`emulator port must be an integer in 0..65535 (got ${String(options.port)})`);
  }
  for (const option of options.apiKeys ?? []) {
    const o: ApiKeyOption = typeof option === "string" ? { key: option } : option;
    if (typeof o.key !== "string" || !/^\S+$/.test(o.key)) {
      throw new ConfigurationError("emulator API keys must be non-empty strings without spaces");
    }
    for (const [name, value] of [
      ["usd", o.usd],
      ["diem", o.diem],
    ] as const) {
      if (value !== undefined && !(Number.isFinite(value) && value >= 0)) {
        // the key itself is a secret: name the field, not the key
        throw new ConfigurationError(`emulator API key balance \`${name}\` must be a finite number >= 0`);
      }
    }
  }
}

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  validateOptions(options);
  const names = brandNames(options.brand);
  const ledger = new Ledger();
  const apiKeyOptions = options.apiKeys?.length ? options.apiKeys : [`emu-${randomBytes(12).toString("hex")}`];
  const apiKeys = apiKeyOptions.map((o) => ledger.addApiKey(o).id);
  const now = options.now ?? Date.now;
  const rateLimiter = new RateLimiter(options.rateLimits, now, isLiveMode(options));
  const faults = new FaultInjector(options.faults);
  // the context's own copy: setFaults() updates `faults` here, where the chat route reads streamCutAfter
  const ctxOptions: EmulatorOptions = { ...options, apiKeys: apiKeyOptions, faults: faults.current };

  let resolveApp!: (app: EmulatorApp) => void;
  let rejectApp!: (err: unknown) => void;
  const appPromise = new Promise<EmulatorApp>((resolve, reject) => {
    resolveApp = resolve;
    rejectApp = reject;
  });
  appPromise.catch(() => undefined); // requests racing a failed start get a 500, not an unhandled rejection
  // the server listens first (the context needs its port); requests that come before the start wait for the app
  const { server, port } = await listen((request, env) => appPromise.then((app) => app.fetch(request, env)), options.port ?? 0);
  const origin = `http://127.0.0.1:${port}`;
  const url = `${origin}${API_PREFIX}`;

  let chain: LocalChain | undefined;
  let x402: X402Hooks | undefined;
  let routes: string[] = [];
  let context: EmulatorContext;
  try {
    if (options.chain) {
      // lazy: ganache and solc are optional and heavy
      const { startLocalChain } = await import("./chain/index.js");
      chain = await startLocalChain(typeof options.chain === "object" ? options.chain : {});
    }
    context = {
      options: ctxOptions,
      names,
      ledger,
      now,
      baseUrl: url,
      publicOrigin: options.publicOrigin !== undefined ? publicOriginOf(options.publicOrigin) : origin,
      chain,
      // until the real hooks are loaded just below (they receive this context)
      x402: createDefaultX402Hooks(),
      rateLimiter,
    };
    x402 = await loadX402Hooks(context);
    context.x402 = x402;
    if ((x402 as { solana?: unknown }).solana) {
      // the crypto RPC's Solana slugs read the same LiteSVM the x402 rail settles on (unless set explicitly)
      const solanaRpc = `${url}/x402/solana/rpc`;
      ctxOptions.upstreams = { "solana-mainnet": solanaRpc, "solana-devnet": solanaRpc, ...options.upstreams };
    }
    const app = createApp({ ctx: context, limiter: rateLimiter, faults }, [...x402.routes, ...(options.routes ?? [])]);
    routes = routeTable(app);
    resolveApp(app);
  } catch (err) {
    rejectApp(err);
    await closeServer(server);
    await x402?.close?.().catch(() => undefined);
    await chain?.close().catch(() => undefined);
    throw err;
  }

  let closing: Promise<void> | undefined;
  return {
    url,
    origin,
    port,
    apiKeys,
    ledger,
    chain,
    context,
    rateLimiter,
    routes,
    setFaults(next: FaultOptions) {
      faults.set(next);
      ctxOptions.faults = faults.current;
    },
    account(keyOrAddress: string) {
      const id = keyOrAddress.startsWith("0x") ? keyOrAddress.toLowerCase() : keyOrAddress;
      return ledger.apiKey(keyOrAddress) ?? ledger.accounts.get(`wallet:${id}`);
    },
    close() {
      closing ??= (async () => {
        await closeServer(server);
        await x402?.close?.();
        await chain?.close();
      })();
      return closing;
    },
  };
}
