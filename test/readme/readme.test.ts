/**
 * The README's TypeScript blocks run as written (`scripts/check-readme.mjs`, in `npm test`, type-checks them).
 * Each block runs in its own Node process (bundled with the sources it imports, see bundle()), as a user would paste
 * it into a file, against one embedded emulator
 * with its local chain: `SERVICE_BASE_URL`, `SERVICE_API_KEY` and `WALLET_PRIVATE_KEY` are the emulator's URL,
 * a funded key and a funded chain account, the only prelude is the README's own `baseUrl` / `apiKey`
 * (RUN_PRELUDE), and `langchain-service` imports point at `src/`.
 */
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { redisAvailable, startRedis, type TestRedis } from "../store/redis-server.js";
import { PACKAGE_ENTRIES, RUN_PRELUDE, extractBlocks } from "../../scripts/readme-blocks.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
// inside the checkout, so that the blocks' imports resolve from its node_modules as in a user's project
const WORK = join(ROOT, "node_modules", ".cache", "readme-run");
// the root README's blocks and the emulator package's
const blocks = ["README.md", "packages/langchain-service-emulator/README.md"].flatMap((readme) =>
  extractBlocks(readFileSync(join(ROOT, readme), "utf8")).map((block) => ({ ...block, readme })),
);

function toRunnable(code: string): string {
  let out = code;
  for (const [specifier, file] of Object.entries(PACKAGE_ENTRIES)) {
    out = out.replaceAll(`from "${specifier}"`, `from ${JSON.stringify(join(ROOT, file))}`);
  }
  // one line, so the block's own line numbers stay one off in a stack trace
  return `${RUN_PRELUDE}\n${out}\nexport {};\n`;
}

/**
 * The block bundled with the client's sources it imports (esbuild, the bundler under tsx: packages left to Node), run
 * by plain Node: each block's process starts on a fraction of the CPU a `tsx` process takes to compile the sources.
 */
async function bundle(file: string): Promise<string> {
  const outfile = file.replace(/\.mts$/, ".mjs");
  await build({
    entryPoints: [file],
    outfile,
    bundle: true,
    packages: "external",
    platform: "node",
    format: "esm",
    sourcemap: "inline",
    logLevel: "error",
  });
  return outfile;
}

async function run(source: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const file = await bundle(source);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--enable-source-maps", file], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe("README TypeScript blocks run as written", () => {
  let emu: Emulator;
  // the Fleets block needs a Redis; without one (the store suite then says how to enable it) that block is not run
  let redis: TestRedis | undefined;
  beforeAll(async () => {
    emu = await startEmulator({ apiKeys: [{ key: "readme-key", usd: 100 }], chain: true });
    if (redisAvailable) redis = await startRedis();
    rmSync(WORK, { recursive: true, force: true });
    mkdirSync(WORK, { recursive: true });
  }, 120_000);
  afterAll(async () => {
    await emu?.close();
    await redis?.stop();
  });

  it("has blocks to run", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(5);
  });

  for (const [i, block] of blocks.entries()) {
    it(`${block.readme} line ${block.line}`, async () => {
      if (block.code.includes("REDIS_URL") && !redis) return; // said once by the store suite's global setup
      const file = join(WORK, `readme-${block.readme === "README.md" ? "" : "emulator-"}line-${block.line}.mts`);
      writeFileSync(file, toRunnable(block.code));
      const { code, output } = await run(file, {
        SERVICE_BASE_URL: emu.url,
        SERVICE_API_KEY: "readme-key",
        ...(redis ? { REDIS_URL: redis.url } : {}),
        // a funded account of the local chain, a different one per block
        WALLET_PRIVATE_KEY: emu.chain!.accounts[1 + (i % (emu.chain!.accounts.length - 2))]!.privateKey,
      });
      expect(output && code !== 0 ? output : "", `block at ${block.readme}:${block.line} exited ${code}`).toBe("");
      expect(code).toBe(0);
    }, 120_000);
  }
});
