/**
 * `langchain-service-emulator`: runs the local service emulator until SIGINT/SIGTERM.
 *
 *   langchain-service-emulator [--port N] [--api-key KEY[=USD]]... [--brand NAME] [--mode live|seed] [--no-chain] [--public-origin URL] [--cors]
 *     [--sign-in-domain HOST]...
 *     [--upstream slug=URL]... [--window-ms N] [--token-window-ms N] [--fault-rate R] [--latency-ms N] [--stream-cut-after K]
 *     [--job-ms N] [--job-failures N] [--log]
 *
 * Prints the base URL and the keys it accepts; with the local chain (on by default here), also its funded
 * accounts with their private keys and the test USDC address, as ganache does: local test keys only.
 */
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import { cryptoNetworks, startEmulator, type Emulator } from "./index.js";
import type { ApiKeyOption, EmulatorOptions } from "./types.js";

export const USAGE = `Usage: langchain-service-emulator [options]

Runs a local service emulator (OpenAI-compatible chat, models, rate limits, crypto RPC, x402) on 127.0.0.1.

Options:
  --port N                 port to listen on (default 8787; 0 picks a free one)
  --api-key KEY[=USD]      accept KEY with a starting USD balance (default 100; DIEM 10); repeatable.
                           Without any, one random key is created.
  --brand NAME             brand used in wire names (x-NAME-version, NAME_parameters); default "service"
  --mode live|seed         behave as the live service does today (default) or as the seed contract describes
  --no-chain               do not start the local EVM chain (crypto RPC upstreams and x402 top-ups need it)
  --public-origin URL      the origin clients reach it at, behind a proxy (wallet sign-ins are checked against
                           it); default its own http://127.0.0.1:PORT
  --sign-in-domain HOST    a host a live wallet sign-in's domain may name (port and path stripped); repeatable.
                           Default: the public origin's host, api.BRAND.ai and BRAND.ai
  --cors                   answer CORS preflights and let pages read the answers and their headers
  --upstream slug=URL      forward crypto RPC for a network slug to this JSON-RPC URL; repeatable
  --window-ms N            rate-limit window in ms (default 60000)
  --token-window-ms N      the token limit's own window in ms (default: --window-ms)
  --fault-rate R           share of requests answered 500/503 (0..1)
  --latency-ms N           latency added to each request
  --stream-cut-after K     cut every stream after K chunks
  --job-ms N               how long a video or audio job runs, in ms (default 2000 video, 1000 audio)
  --job-failures N         the first N jobs fail when their time is up (refunded, their error on retrieve)
  --log                    log each request to stderr
  -h, --help               show this help
`;

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

const defaultIo: CliIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

export class CliUsageError extends Error {
  override name = "CliUsageError";
}

function number(name: string, raw: string | undefined, check: (n: number) => boolean): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(n) || !check(n)) throw new CliUsageError(`--${name}: invalid value ${JSON.stringify(raw)}`);
  return n;
}

/** Parses the command line into emulator options (throws CliUsageError with a clear message). */
export function parseCliArgs(argv: string[]): { help: true } | { help: false; options: EmulatorOptions } {
  const args = argv[0] === "emulator" ? argv.slice(1) : argv;
  let values;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        port: { type: "string" },
        "api-key": { type: "string", multiple: true },
        brand: { type: "string" },
        mode: { type: "string" },
        "public-origin": { type: "string" },
        "sign-in-domain": { type: "string", multiple: true },
        chain: { type: "boolean" },
        "no-chain": { type: "boolean" },
        upstream: { type: "string", multiple: true },
        "window-ms": { type: "string" },
        "token-window-ms": { type: "string" },
        "fault-rate": { type: "string" },
        "latency-ms": { type: "string" },
        "stream-cut-after": { type: "string" },
        "job-ms": { type: "string" },
        "job-failures": { type: "string" },
        log: { type: "boolean" },
        cors: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (err) {
    throw new CliUsageError((err as Error).message);
  }
  if (values.help) return { help: true };

  const apiKeys: ApiKeyOption[] = (values["api-key"] ?? []).map((spec) => {
    const eq = spec.lastIndexOf("=");
    const key = eq === -1 ? spec : spec.slice(0, eq);
    if (!key) throw new CliUsageError("--api-key: empty key");
    const usd = eq === -1 ? undefined : number("api-key", spec.slice(eq + 1), (n) => n >= 0);
    return usd === undefined ? { key } : { key, usd };
  });
  const upstreams: Record<string, string> = {};
  for (const spec of values.upstream ?? []) {
    const eq = spec.indexOf("=");
    const slug = spec.slice(0, eq);
    const url = spec.slice(eq + 1);
    if (eq <= 0 || !/^https?:\/\//.test(url))
      throw new CliUsageError(`--upstream: expected slug=http(s)://URL, got ${JSON.stringify(spec)}`);
    upstreams[slug] = url;
  }
  const windowMs = number("window-ms", values["window-ms"], (n) => n > 0);
  const tokenWindowMs = number("token-window-ms", values["token-window-ms"], (n) => n > 0);
  const errorRate = number("fault-rate", values["fault-rate"], (n) => n >= 0 && n <= 1);
  const latencyMs = number("latency-ms", values["latency-ms"], (n) => n >= 0);
  const streamCutAfter = number("stream-cut-after", values["stream-cut-after"], (n) => Number.isInteger(n) && n >= 0);
  const faults = { errorRate, latencyMs, streamCutAfter };
  const jobMs = number("job-ms", values["job-ms"], (n) => n >= 0);
  const jobFailures = number("job-failures", values["job-failures"], (n) => Number.isInteger(n) && n >= 0);

  const options: EmulatorOptions = {
    port: number("port", values.port ?? "8787", (n) => Number.isInteger(n) && n >= 0 && n <= 65_535),
    chain: !values["no-chain"],
    log: values.log ?? false,
  };
  if (apiKeys.length) options.apiKeys = apiKeys;
  if (values.cors) options.cors = true;
  if (values.brand) options.brand = values.brand;
  if (values.mode !== undefined) {
    if (values.mode !== "live" && values.mode !== "seed")
      throw new CliUsageError(`--mode: expected live or seed, got ${JSON.stringify(values.mode)}`);
    options.mode = values.mode;
  }
  if (values["public-origin"] !== undefined) {
    let origin: URL | undefined;
    try {
      origin = new URL(values["public-origin"]);
    } catch {
      origin = undefined;
    }
    if (!origin || !/^https?:$/.test(origin.protocol) || origin.origin !== values["public-origin"].replace(/\/$/, "")) {
      throw new CliUsageError(
        `--public-origin must be a bare http(s) origin such as https://api.example (got ${JSON.stringify(values["public-origin"])})`,
      );
    }
    options.publicOrigin = origin.origin;
  }
  if (values["sign-in-domain"]?.length) {
    const domains = values["sign-in-domain"].map((d) => d.trim().toLowerCase());
    const bad = domains.find((d) => !/^[a-z0-9.-]+$/.test(d) || d.startsWith(".") || d.endsWith("."));
    if (bad !== undefined)
      throw new CliUsageError(`--sign-in-domain: expected a host name such as api.example.ai, got ${JSON.stringify(bad)}`);
    options.x402 = { signInDomains: domains };
  }
  if (Object.keys(upstreams).length) options.upstreams = upstreams;
  if (windowMs !== undefined || tokenWindowMs !== undefined) {
    options.rateLimits = Object.fromEntries(Object.entries({ windowMs, tokenWindowMs }).filter(([, v]) => v !== undefined));
  }
  if (Object.values(faults).some((v) => v !== undefined)) {
    options.faults = Object.fromEntries(Object.entries(faults).filter(([, v]) => v !== undefined));
  }
  if (jobMs !== undefined || jobFailures !== undefined) {
    options.jobs = {
      ...(jobMs !== undefined ? { processingMs: jobMs } : {}),
      ...(jobFailures !== undefined ? { failures: { first: jobFailures } } : {}),
    };
  }
  return { help: false, options };
}

/** Starts with the chain if asked; if the chain cannot start, says so in one line and runs without it. */
async function startWithFallback(options: EmulatorOptions, io: CliIo): Promise<Emulator> {
  if (!options.chain) return startEmulator(options);
  try {
    return await startEmulator(options);
  } catch (err) {
    const reason = ((err as Error)?.message ?? String(err)).split("\n")[0];
    // what is lost, in true words: the Base rail and the EVM networks the chain would have served
    io.err(
      `warning: local chain not started (${reason}); continuing without it: no Base x402 top-ups, and EVM crypto RPC networks only where --upstream gives a node`,
    );
    return startEmulator({ ...options, chain: false });
  }
}

function describe(emulator: Emulator, io: CliIo): void {
  io.out(`${emulator.context.names.brand} emulator listening`);
  io.out(`base URL: ${emulator.url}`);
  io.out("API keys:");
  for (const key of emulator.apiKeys) {
    const account = emulator.account(key);
    io.out(`  ${key}  (USD ${account?.usd ?? 0}, DIEM ${account?.diem ?? 0})`);
  }
  const chain = emulator.chain;
  if (chain) {
    io.out(`local chain: ${chain.rpcUrl} (chain id ${chain.chainId})`);
    // at the real USDC address, so a client's default payment policy (real USDC only) pays it unchanged
    io.out(`test USDC (${chain.usdc.symbol}, ${chain.usdc.decimals} decimals, at the real Base USDC address): ${chain.usdc.address}`);
    io.out(`treasury (x402 payee): ${chain.treasury}`);
    io.out("funded accounts (local test keys, never use them elsewhere):");
    chain.accounts.forEach((a, i) => {
      io.out(`  (${i}) ${a.address}  ${a.privateKey}`);
    });
  }
  const solanaMint = (emulator.context.x402 as { solana?: { mint?: string } } | undefined)?.solana?.mint;
  if (solanaMint) io.out(`Solana test USDC (LiteSVM, RPC ${emulator.url}/x402/solana/rpc) at the real USDC mint: ${solanaMint}`);
  // the rails and networks it really has (the EVM rail runs exactly when the chain does)
  const rails = [chain ? "Base (local chain)" : undefined, solanaMint ? "Solana (LiteSVM)" : undefined].filter(Boolean);
  if (rails.length === 2) io.out(`x402 top-ups: ${rails.join(", ")}`);
  else if (chain) io.out("x402 top-ups: Base (local chain) only; Solana needs litesvm (npm i -D litesvm)");
  else if (solanaMint) io.out("x402 top-ups: Solana (LiteSVM) only; Base needs the local chain (run without --no-chain)");
  else io.out("x402 top-ups: none (no local chain, no litesvm): wallets can sign in but not top up; API keys work");
  const networks = cryptoNetworks(emulator.context);
  io.out(`crypto RPC networks: ${networks.length ? networks.join(", ") : "none (no local chain, no --upstream)"}`);
  io.out(`try: curl -H "Authorization: Bearer ${emulator.apiKeys[0] ?? ""}" ${emulator.url}/models`);
}

export interface MainOptions {
  io?: CliIo;
  /** close on SIGINT/SIGTERM (the binary does; in-process callers close the returned emulator themselves) */
  handleSignals?: boolean;
}

/**
 * Runs the CLI. Returns the running emulator (undefined after --help). Exit codes are the caller's business:
 * usage errors throw CliUsageError.
 */
export async function main(argv: string[], opts: MainOptions = {}): Promise<Emulator | undefined> {
  const io = opts.io ?? defaultIo;
  const parsed = parseCliArgs(argv);
  if (parsed.help) {
    io.out(USAGE);
    return undefined;
  }
  const emulator = await startWithFallback(parsed.options, io);
  describe(emulator, io);
  if (opts.handleSignals) {
    const stop = (signal: string) => {
      io.err(`${signal}: closing the emulator`);
      emulator.close().then(
        () => process.exit(0),
        (err) => {
          io.err(`error while closing: ${(err as Error).message}`);
          process.exit(1);
        },
      );
    };
    process.once("SIGINT", () => stop("SIGINT"));
    process.once("SIGTERM", () => stop("SIGTERM"));
  }
  return emulator;
}

/** Entry point for `langchain-service-emulator ...` (bin/langchain-service-emulator.mjs) and `tsx src/cli.ts ...`. */
export async function run(argv: string[]): Promise<void> {
  try {
    await main(argv, { handleSignals: true });
  } catch (err) {
    if (err instanceof CliUsageError) {
      process.stderr.write(`error: ${err.message}\n\n${USAGE}`);
      process.exit(2);
    }
    process.stderr.write(`error: ${(err as Error)?.message ?? String(err)}\n`);
    process.exit(1);
  }
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (invokedDirectly) void run(process.argv.slice(2));
