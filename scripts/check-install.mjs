#!/usr/bin/env node
/**
 * Both packages as a user gets them. The client: `npm pack` (of the built dist), checked to hold no emulator
 * file and to name no emulator library in its package.json, then `npm install <tarball> @langchain/core` into
 * an empty project under the OS temp dir (never under this checkout, whose node_modules would answer an import
 * the package forgot to declare). Checks that none of the optional peers (wallet and adapter faces) was
 * installed and that every entry point loads by `import` and by `require`. Then the emulator's tarball
 * (packages/langchain-service-emulator) is installed beside it, as a user adds it as a dev dependency:
 * `npx langchain-service-emulator --help` runs, it loads by `import` and `require`, and a chat request with an
 * API key works against it started without its chain, with none of its optional peers installed. Prints the
 * installed packages and MB. Run after `npm run build` (it builds both); part of `.ci/run`.
 *
 *   node scripts/check-install.mjs [--keep]
 */
import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const EMULATOR = join(ROOT, "packages", "langchain-service-emulator");
/** what only the emulator uses: the client's tarball must name none of these */
const EMULATOR_ONLY = ["langchain-service-emulator", "ganache", "solc", "litesvm", "@solana-program/token", "hono", "@hono/node-server"];
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const keep = process.argv.includes("--keep");
/** what an API-key user may install: today 24 (langchain-service, @langchain/openai + openai, zod, ethers, @langchain/core) */
const MAX_PACKAGES = 30;

function diskBytes(path) {
  const st = lstatSync(path);
  let total = st.blocks * 512;
  if (st.isDirectory()) for (const name of readdirSync(path)) total += diskBytes(join(path, name));
  return total;
}

if (!existsSync(join(ROOT, "dist", "index.js")) || !existsSync(join(EMULATOR, "dist", "index.js"))) {
  console.error("check-install: no dist/ in both packages (run `npm run build` first)");
  process.exit(1);
}

const work = mkdtempSync(join(tmpdir(), "lcs-check-install-"));
let failed = false;
try {
  const [{ filename, files: packed }] = JSON.parse(
    execFileSync(npm, ["pack", "--json", "--pack-destination", work], {
      cwd: ROOT,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    }),
  );
  // the client's tarball: no emulator code, no emulator library named
  const emulatorFiles = packed.map((f) => f.path).filter((path) => /emulator/i.test(path));
  if (emulatorFiles.length) {
    console.error(`check-install: the client's tarball holds emulator files: ${emulatorFiles.join(", ")}`);
    failed = true;
  }
  const named = Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies, ...pkg.optionalDependencies });
  const emulatorNamed = EMULATOR_ONLY.filter((n) => named.includes(n));
  if (emulatorNamed.length || pkg.bin) {
    console.error(
      `check-install: the client's package.json names the emulator's libraries or a bin: ${[...emulatorNamed, ...(pkg.bin ? ["bin"] : [])].join(", ")}`,
    );
    failed = true;
  }
  console.log(`check-install: the client's tarball holds ${packed.length} files, none of the emulator's, and names none of its libraries`);
  const project = join(work, "user");
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), '{"name":"check-install","version":"1.0.0","private":true,"type":"module"}\n');
  const core = JSON.parse(readFileSync(join(ROOT, "node_modules/@langchain/core/package.json"), "utf8")).version;
  execFileSync(npm, ["install", "--no-audit", "--no-fund", "--loglevel=error", join(work, filename), `@langchain/core@${core}`], {
    cwd: project,
    stdio: "inherit",
  });

  const lock = JSON.parse(readFileSync(join(project, "node_modules/.package-lock.json"), "utf8"));
  const installed = Object.keys(lock.packages).filter((k) => k !== "");
  const mb = diskBytes(join(project, "node_modules")) / 2 ** 20;
  console.log(
    `check-install: an API-key user installs ${installed.length} packages, ${mb.toFixed(0)} MB (langchain-service + @langchain/core@${core})`,
  );

  // @langchain/openai alone is 14 packages (with @langchain/core); ethers adds 9. The 150 of the old manifest,
  // where every wallet and emulator library was a dependency, must not come back.
  if (installed.length > MAX_PACKAGES) {
    console.error(`check-install: ${installed.length} packages is over the budget of ${MAX_PACKAGES}`);
    failed = true;
  }

  const optional = Object.keys(pkg.peerDependenciesMeta ?? {}).filter((n) => pkg.peerDependenciesMeta[n]?.optional);
  const present = optional.filter((n) => installed.some((k) => k === `node_modules/${n}` || k.endsWith(`/node_modules/${n}`)));
  if (present.length) {
    console.error(`check-install: optional peers were installed for an API-key user: ${present.join(", ")}`);
    failed = true;
  }

  // every entry by import and by require
  const smoke = `
    import { createRequire } from "node:module";
    const require = createRequire(import.meta.url);
    for (const entry of ["langchain-service", "langchain-service/chat", "langchain-service/redis"]) {
      const esm = await import(entry);
      const cjs = require(entry);
      if (!Object.keys(esm).length || !Object.keys(cjs).length) throw new Error(entry + " exports nothing");
    }
    // the wallets, the agent middleware and the web3.js Connection are their own entries: without their optional peers, importing one names the missing package
    const { ConfigurationError } = await import("langchain-service");
    for (const [entry, peers] of [["langchain-service/evm", ["viem", "@x402/"]], ["langchain-service/solana", ["@solana/kit", "@x402/"]], ["langchain-service/agents", ["@langchain/langgraph"]], ["langchain-service/solana-connection", ["@solana/web3.js"]]]) {
      const err = await import(entry).then(() => undefined, (e) => e);
      if (err?.code !== "ERR_MODULE_NOT_FOUND" || !peers.some((p) => err.message.includes(p))) {
        throw new Error(entry + " without its peers should fail to load naming one, got: " + String(err));
      }
    }
    // a fleet store without its client (ioredis, an optional peer) says what to install
    const { RedisStore } = await import("langchain-service/redis");
    const storeErr = await new RedisStore({ url: "redis://127.0.0.1:1" }).spentUsd("wallet:x", 1, 1).catch((e) => e);
    if (!(storeErr instanceof ConfigurationError) || !storeErr.message.includes("npm install ioredis")) {
      throw new Error("a RedisStore without ioredis should be a ConfigurationError naming the install line, got: " + String(storeErr));
    }
    console.log("check-install: import and require of every entry, and a clear error for a wallet or a RedisStore without its peers: ok");
  `;
  execFileSync(process.execPath, ["--input-type=module", "-e", smoke], { cwd: project, stdio: "inherit" });

  // the emulator's tarball beside the client's, as a dev dependency; none of its optional peers installed
  const emu = JSON.parse(readFileSync(join(EMULATOR, "package.json"), "utf8"));
  const [{ filename: emuTarball }] = JSON.parse(
    execFileSync(npm, ["pack", "--json", "--pack-destination", work], {
      cwd: EMULATOR,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    }),
  );
  execFileSync(npm, ["install", "--save-dev", "--no-audit", "--no-fund", "--loglevel=error", join(work, emuTarball)], {
    cwd: project,
    stdio: "inherit",
  });
  const emuLock = JSON.parse(readFileSync(join(project, "node_modules/.package-lock.json"), "utf8"));
  const emuOptional = Object.keys(emu.peerDependenciesMeta ?? {}).filter((n) => emu.peerDependenciesMeta[n]?.optional);
  const emuPresent = emuOptional.filter((n) =>
    Object.keys(emuLock.packages).some((k) => k === `node_modules/${n}` || k.endsWith(`/node_modules/${n}`)),
  );
  if (emuPresent.length) {
    console.error(`check-install: the emulator's optional peers were installed: ${emuPresent.join(", ")}`);
    failed = true;
  }
  const help = execFileSync(npm, ["exec", "--no", "--", "langchain-service-emulator", "--help"], {
    cwd: project,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  if (!help.includes("Usage: langchain-service-emulator")) {
    console.error(`check-install: npx langchain-service-emulator --help printed no usage:\n${help}`);
    failed = true;
  }
  const emuSmoke = `
    import { createRequire } from "node:module";
    const require = createRequire(import.meta.url);
    if (!Object.keys(require("langchain-service-emulator")).length) throw new Error("require of the emulator exports nothing");
    const { ChatService, costOf } = await import("langchain-service");
    const { startEmulator } = await import("langchain-service-emulator");
    const emu = await startEmulator({ apiKeys: [{ key: "k1", usd: 5 }] });
    try {
      const msg = await new ChatService({ model: "emu-s", baseUrl: emu.url, apiKey: "k1" }).invoke("hello");
      if (!msg.text || !costOf(msg)) throw new Error("no answer or no cost: " + JSON.stringify(msg));
    } finally {
      await emu.close();
    }
    console.log("check-install: the emulator's tarball installs beside the client's, npx langchain-service-emulator --help runs, import and require load it, and an API-key chat request against it works: ok");
  `;
  execFileSync(process.execPath, ["--input-type=module", "-e", emuSmoke], { cwd: project, stdio: "inherit" });
} catch (err) {
  console.error(`check-install: ${err instanceof Error ? err.message : String(err)}`);
  failed = true;
} finally {
  if (keep) console.log(`check-install: kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
