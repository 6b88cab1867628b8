/**
 * `npm run bench`: every benchmark in one run, side by side on this machine, against the emulator on
 * loopback. Prints one table of medians and ratios against the anchors named in the issues, and writes it
 * to bench/results.md. Sections run one after another (never in parallel) so they don't skew each other.
 *
 *   npm run bench                 # everything
 *   npm run bench -- chat pacing  # some sections
 */
import { writeFile } from "node:fs/promises";
import { cpus, totalmem } from "node:os";
import { fileURLToPath } from "node:url";
import type { BenchRow } from "./types.js";

const sections: Record<string, () => Promise<BenchRow[]>> = {
  chat: async () => (await import("./chat.js")).benchChat(),
  "chat-majors": async () => (await import("./chat-majors.js")).benchChatMajors(),
  x402: async () => (await import("./x402.js")).benchX402(),
  pacing: async () => (await import("./pacing.js")).benchPacing(),
  crypto: async () => (await import("./crypto.js")).benchCrypto(),
  "crypto-parallel": async () => (await import("./crypto-parallel.js")).benchCryptoParallel(),
  memory: async () => (await import("./memory.js")).benchMemory(),
  sse: async () => (await import("./sse.js")).benchSse(),
  package: async () => (await import("./package.js")).benchPackage(),
  bundle: async () => (await import("./package.js")).benchBundleSize(),
  fleet: async () => (await import("./fleet.js")).benchFleet(),
  embeddings: async () => (await import("./embeddings.js")).benchEmbeddings(),
  live: async () => (await import("./live.js")).benchLive(),
};

function fmt(n: number): string {
  if (Number.isNaN(n)) return "—"; // a row that counts rather than times (or a section that failed: its note says)
  if (!Number.isFinite(n)) return String(n);
  return Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toFixed(3);
}

async function main() {
  const wanted = process.argv.slice(2).filter((a) => !a.startsWith("-"));
  const names = wanted.length ? wanted : Object.keys(sections);
  const rows: (BenchRow & { section: string })[] = [];
  for (const name of names) {
    const run = sections[name];
    if (!run) throw new Error(`unknown bench section ${name}; known: ${Object.keys(sections).join(", ")}`);
    process.stderr.write(`running ${name}…\n`);
    try {
      for (const row of await run()) rows.push({ section: name, ...row });
    } catch (err) {
      rows.push({ section: name, name: "(failed)", median_ms: NaN, ratio: NaN, note: err instanceof Error ? err.message : String(err) });
    }
  }
  const cpu = cpus()[0]?.model ?? "unknown CPU";
  const machine = `${cpus().length} cores (${cpu.trim()}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${process.platform}`;
  const date = new Date().toISOString().slice(0, 10);
  const header = "| section | measure | median (ms) | ratio | against | note |\n|---|---|---:|---:|---|---|";
  const body = rows
    .map(
      (r) =>
        `| ${r.section} | ${r.name} | ${fmt(r.median_ms)} | ${fmt(r.ratio)} | ${r.anchor ?? ""} | ${(r.note ?? "").replace(/\|/g, "/")} |`,
    )
    .join("\n");
  const md =
    `# Benchmarks\n\nMeasured ${date} on ${machine}, against the local service emulator on loopback (\`npm run bench\`). ` +
    `Medians of several rounds; ratios below 1.0 are faster than the anchor (except where the row says otherwise).\n\n${header}\n${body}\n`;
  console.log(md);
  if (!wanted.length) {
    const out = fileURLToPath(new URL("./results.md", import.meta.url));
    await writeFile(out, md);
    process.stderr.write(`written to ${out}\n`);
  }
}

await main();
