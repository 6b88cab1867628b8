/**
 * The SSE parser on one large event: time per MB for 4, 16 and 32 MB events, fed as 64 KiB reads (what
 * undici hands over on loopback) from memory, so the figure is the parser's, not the network's. A linear
 * parser costs the same per MB at every size (the old one re-scanned its buffer on every read: 16 MB took
 * ~3 s, 32 MB ~11 s). Ratio: against `TextDecoder` + `JSON.parse` of the same bytes, the floor of any parser.
 *
 *   npx tsx bench/sse.ts
 */
import { pathToFileURL } from "node:url";
import { parseSseJson } from "../src/chat/sse.js";
import { median, type BenchRow } from "./types.js";

const MB = 1024 * 1024;
const SIZES = [4, 16, 32];
const READ = 64 * 1024;

function chunked(body: Uint8Array): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= body.length) return controller.close();
      controller.enqueue(body.subarray(at, (at += READ)));
    },
  });
}

export async function benchSse(opts: { rounds?: number } = {}): Promise<BenchRow[]> {
  const rounds = opts.rounds ?? 5;
  const rows: BenchRow[] = [];
  for (const size of SIZES) {
    const body = new TextEncoder().encode(`data: {"v": "${"x".repeat(size * MB)}"}\n\ndata: [DONE]\n\n`);
    const ours: number[] = [];
    const floor: number[] = [];
    for (let r = 0; r <= rounds; r++) {
      let t0 = performance.now();
      let n = 0;
      for await (const e of parseSseJson<{ v: string }>(chunked(body), { maxEventBytes: 64 * MB })) n += e.v.length;
      if (n !== size * MB) throw new Error(`parsed ${n} characters, expected ${size * MB}`);
      const oursMs = performance.now() - t0;
      t0 = performance.now();
      const text = new TextDecoder().decode(body);
      JSON.parse(text.slice(6, text.indexOf("\n\n")));
      const floorMs = performance.now() - t0;
      // round 0 warms up
      if (r > 0) {
        ours.push(oursMs);
        floor.push(floorMs);
      }
    }
    const ms = median(ours);
    const floorMs = median(floor);
    rows.push({
      name: `one ${size} MB stream event (64 KiB reads): parse`,
      median_ms: Number(ms.toFixed(2)),
      ratio: Number((ms / floorMs).toFixed(2)),
      anchor: `TextDecoder + JSON.parse of it: ${floorMs.toFixed(1)} ms`,
      note: `${(ms / size).toFixed(2)} ms/MB (linear: about the same at every size)`,
    });
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  console.table(await benchSse());
}
