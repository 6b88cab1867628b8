/**
 * What a user pays for the package itself, beside `@langchain/openai` (the anchor):
 * - installed packages and MB for an API-key chat user: a fresh `npm install` of the packed tarball and
 *   `@langchain/core` into an empty project, against `@langchain/openai` and `@langchain/core` the same way;
 * - cold-import time (and RSS) of `langchain-service/chat` and `langchain-service` in a fresh `node` process,
 *   against `@langchain/openai`.
 * Both installs go to fresh directories under the OS temp dir (never under this checkout, whose node_modules
 * would otherwise answer an import the package forgot to declare) and are removed afterwards. Builds `dist`
 * first when it is missing or older than `src`.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, lstatSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { median, type BenchRow } from "./types.js";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const ROUNDS = 7;

function run(cmd: string, args: string[], cwd: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", timeout: 600_000 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (exit ${r.status ?? "timeout"}): ${(r.stderr ?? "").slice(-400)}`);
  return r.stdout;
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

function ensureBuilt(): void {
  let built = 0;
  try {
    built = statSync(join(ROOT, "dist/index.js")).mtimeMs;
  } catch {
    built = 0;
  }
  if (built >= newestMtime(join(ROOT, "src"))) return;
  process.stderr.write("building dist (npm run build)…\n");
  run("npm", ["run", "build"], ROOT);
}

/** Bytes on disk, as `du` counts them (allocated blocks; symlinks not followed). */
function diskBytes(path: string): number {
  const st = lstatSync(path);
  let total = st.blocks * 512;
  if (st.isDirectory()) for (const name of readdirSync(path)) total += diskBytes(join(path, name));
  return total;
}

interface Install {
  dir: string;
  packages: number;
  mb: number;
  ms: number;
}

function install(specs: string[]): Install {
  const dir = mkdtempSync(join(tmpdir(), "lcs-bench-package-"));
  writeFileSync(join(dir, "package.json"), '{"name":"bench-user","version":"1.0.0","private":true,"type":"module"}\n');
  const t = performance.now();
  run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", ...specs], dir);
  const ms = performance.now() - t;
  const lock = JSON.parse(readFileSync(join(dir, "node_modules/.package-lock.json"), "utf8")) as { packages: Record<string, unknown> };
  const packages = Object.keys(lock.packages).filter((k) => k !== "").length;
  return { dir, packages, mb: diskBytes(join(dir, "node_modules")) / 2 ** 20, ms };
}

/** One cold import in a fresh process: [ms for the import itself, RSS MB after it]. */
function coldImport(dir: string, specifier: string): [number, number] {
  const code = `const t = performance.now(); await import(${JSON.stringify(specifier)}); const ms = performance.now() - t; process.stdout.write(JSON.stringify([ms, process.memoryUsage().rss / 2 ** 20]));`;
  return JSON.parse(run(process.execPath, ["--input-type=module", "-e", code], dir)) as [number, number];
}

function version(name: string): string {
  return (JSON.parse(readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;
}

export async function benchPackage(): Promise<BenchRow[]> {
  ensureBuilt();
  const packDir = mkdtempSync(join(tmpdir(), "lcs-bench-pack-"));
  const dirs = [packDir];
  try {
    const packed = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", packDir], ROOT)) as { filename: string }[];
    const tarball = join(packDir, packed[0]!.filename);
    const core = `@langchain/core@${version("@langchain/core")}`;
    const openai = `@langchain/openai@${version("@langchain/openai")}`;
    process.stderr.write(`installing the packed tarball and ${openai} into fresh temp projects…\n`);
    const ours = install([tarball, core]);
    const anchor = install([openai, core]);
    dirs.push(ours.dir, anchor.dir);

    const targets: [string, string][] = [
      ["langchain-service/chat", ours.dir],
      ["langchain-service", ours.dir],
      ["@langchain/openai", anchor.dir],
    ];
    const times = new Map<string, number[]>(targets.map(([s]) => [s, []]));
    const rss = new Map<string, number[]>(targets.map(([s]) => [s, []]));
    // interleaved, so load on the machine falls on every target alike
    for (let i = 0; i < ROUNDS; i++) {
      for (const [specifier, dir] of targets) {
        const [ms, mb] = coldImport(dir, specifier);
        times.get(specifier)!.push(ms);
        rss.get(specifier)!.push(mb);
      }
    }
    const anchorMs = median(times.get("@langchain/openai")!);
    const anchorRss = median(rss.get("@langchain/openai")!);
    const anchorImport = `${openai}: ${anchorMs.toFixed(0)} ms, RSS ${anchorRss.toFixed(0)} MB`;
    const importRow = (specifier: string): BenchRow => {
      const ms = median(times.get(specifier)!);
      return {
        name: `cold import ${specifier}`,
        median_ms: ms,
        ratio: ms / anchorMs,
        anchor: anchorImport,
        note: `RSS after import ${median(rss.get(specifier)!).toFixed(0)} MB; fresh node process, ${ROUNDS} rounds`,
      };
    };
    return [
      {
        name: "install for an API-key chat user (tarball + @langchain/core): installed size",
        median_ms: ours.ms,
        ratio: ours.mb / anchor.mb,
        anchor: `${openai} + ${core}: ${anchor.packages} packages, ${anchor.mb.toFixed(0)} MB`,
        note: `ours: ${ours.packages} packages, ${ours.mb.toFixed(0)} MB (ratio = MB; ms = npm install wall time, warm cache)`,
      },
      importRow("langchain-service/chat"),
      importRow("langchain-service"),
      { ...importRow("@langchain/openai"), name: "cold import @langchain/openai (anchor)" },
    ];
  } finally {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The chat-only bundle for a worker (esbuild, minified, conditions workerd/worker/browser), `@langchain/core`
 * bundled in both, against `@langchain/openai`'s `ChatOpenAI` built the same way. Optional peers and Node
 * builtins still reached are left external (and counted in the note) so the figure is what a worker ships.
 */
export async function benchBundleSize(): Promise<BenchRow[]> {
  const { build } = await import("esbuild");
  const { gzipSync } = await import("node:zlib");
  const { builtinModules } = await import("node:module");
  const peers = [
    "siwe",
    "@x402/",
    "@solana/",
    "@solana-program/",
    "viem",
    "ioredis",
    "langchain",
    "@langchain/langgraph",
    "ganache",
    "solc",
    "litesvm",
  ];
  const size = async (contents: string) => {
    const left: string[] = [];
    const r = await build({
      stdin: { contents, resolveDir: ROOT, loader: "ts" },
      bundle: true,
      write: false,
      minify: true,
      format: "esm",
      platform: "browser",
      conditions: ["workerd", "worker", "browser"],
      logLevel: "silent",
      plugins: [
        {
          name: "external-peers",
          setup(b) {
            b.onResolve({ filter: /^[^./]/ }, (args) => {
              const p = args.path;
              const name = p.startsWith("@") ? p.split("/").slice(0, 2).join("/") : p.split("/")[0]!;
              if (
                peers.some((x) => p === x || p.startsWith(x.endsWith("/") ? x : `${x}/`)) ||
                p.startsWith("node:") ||
                builtinModules.includes(name)
              ) {
                left.push(p);
                return { path: p, external: true };
              }
              return undefined;
            });
          },
        },
      ],
    });
    const bytes = r.outputFiles[0]!.contents;
    return { min: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length, left: [...new Set(left)] };
  };
  const t = performance.now();
  const ours = await size(`export { ChatService } from "./src/chat/index.ts";`);
  const ms = performance.now() - t;
  const anchor = await size(`export { ChatOpenAI } from "@langchain/openai";`);
  const kb = (n: number) => `${(n / 1024).toFixed(0)} KB`;
  const anchorText = `@langchain/openai ${version("@langchain/openai")} ChatOpenAI: ${kb(anchor.min)} min, ${kb(anchor.gzip)} gzip`;
  const left = ours.left.length ? `; left external: ${ours.left.join(", ")}` : "";
  return [
    {
      name: "worker bundle of langchain-service/chat (ChatService), minified",
      median_ms: ms,
      ratio: ours.min / anchor.min,
      anchor: anchorText,
      note: `${kb(ours.min)}, @langchain/core bundled in both; ms = esbuild time (ratio = bytes, goal <= 1.2)${left}`,
    },
    {
      name: "worker bundle of langchain-service/chat (ChatService), gzip",
      median_ms: NaN,
      ratio: ours.gzip / anchor.gzip,
      anchor: anchorText,
      note: `${kb(ours.gzip)} gzip -9`,
    },
  ];
}
