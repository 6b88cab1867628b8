/** The CLI: in-process `main()`, argument parsing, and the real binary spawned with node. */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { CliUsageError, main, parseCliArgs } from "../../packages/langchain-service-emulator/src/cli.js";

const BIN = fileURLToPath(new URL("../../packages/langchain-service-emulator/bin/langchain-service-emulator.mjs", import.meta.url));

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe("cli", () => {
  it("main() starts the emulator, prints the base URL and the keys", async () => {
    const { io, out } = capture();
    const emu = await main(["emulator", "--port", "0", "--no-chain", "--api-key", "cli-key=7", "--api-key", "other", "--brand", "acme"], {
      io,
    });
    try {
      expect(emu).toBeDefined();
      const text = out.join("\n");
      const url = /base URL: (http:\/\/127\.0\.0\.1:\d+\/api\/v1)/.exec(text)?.[1];
      expect(url).toBe(emu!.url);
      expect(text).toContain("cli-key");
      expect(text).toContain("USD 7");
      expect(text).toContain("other");
      const res = await fetch(`${url}/models`, { headers: { authorization: "Bearer cli-key" } });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-acme-version")).toBeTruthy();
      expect(emu!.account("cli-key")!.usd).toBe(7);
    } finally {
      await emu?.close();
    }
  });

  it("--help prints usage and starts nothing", async () => {
    const { io, out } = capture();
    expect(await main(["--help"], { io })).toBeUndefined();
    expect(out.join("\n")).toContain("--api-key KEY[=USD]");
  });

  it("parses every option into emulator options", () => {
    const parsed = parseCliArgs([
      "--port",
      "9999",
      "--window-ms",
      "500",
      "--fault-rate",
      "0.2",
      "--latency-ms",
      "10",
      "--stream-cut-after",
      "3",
      "--upstream",
      "base-mainnet=http://127.0.0.1:8545",
      "--log",
      "--public-origin",
      "https://api.example",
      "--job-ms",
      "300",
      "--job-failures",
      "2",
      "--token-window-ms",
      "1500",
      "--sign-in-domain",
      "api.example.ai",
      "--sign-in-domain",
      "Example.AI",
    ]);
    expect(parsed).toEqual({
      help: false,
      options: {
        port: 9999,
        chain: true,
        log: true,
        upstreams: { "base-mainnet": "http://127.0.0.1:8545" },
        publicOrigin: "https://api.example",
        x402: { signInDomains: ["api.example.ai", "example.ai"] },
        rateLimits: { windowMs: 500, tokenWindowMs: 1500 },
        faults: { errorRate: 0.2, latencyMs: 10, streamCutAfter: 3 },
        jobs: { processingMs: 300, failures: { first: 2 } },
      },
    });
    expect(parseCliArgs([])).toMatchObject({ options: { port: 8787, chain: true } });
  });

  it.each([
    [["--fault-rate", "2"], /fault-rate/],
    [["--job-failures", "1.5"], /job-failures/],
    [["--token-window-ms", "0"], /token-window-ms/],
    [["--port", "abc"], /port/],
    [["--upstream", "nourl"], /upstream/],
    [["--api-key", "k=-3"], /api-key/],
    [["--bogus"], /bogus/],
    [["--public-origin", "https://api.example/api/v1"], /public-origin/],
    [["--public-origin", "ftp://x"], /public-origin/],
    [["--sign-in-domain", "https://api.example.ai/x"], /sign-in-domain/],
  ])("rejects %j with a usage error", (argv, message) => {
    expect(() => parseCliArgs(argv)).toThrow(CliUsageError);
    expect(() => parseCliArgs(argv)).toThrow(message);
  });

  it("the binary runs the emulator until SIGTERM", async () => {
    const child = spawn(process.execPath, [BIN, "--port", "0", "--no-chain", "--api-key", "bin-key"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let buffer = "";
        child.stdout.on("data", (d: Buffer) => {
          buffer += d.toString();
          const m = /base URL: (\S+)/.exec(buffer);
          if (m) resolve(m[1]!);
        });
        child.once("exit", (code) => reject(new Error(`exited early with ${code}`)));
      });
      const res = await fetch(`${url}/crypto/rpc/networks`);
      // --no-chain: only the LiteSVM-backed Solana slugs have a node (run against src; a stale dist/ lists more)
      expect((await res.json()).networks).toEqual(["solana-devnet", "solana-mainnet"]);
      const models = await fetch(`${url}/models`, { headers: { authorization: "Bearer bin-key" } });
      expect(models.status).toBe(200);
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  });

  it("the binary prints usage for --help and rejects a stray argument", async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const child = spawn(process.execPath, [BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
        let out = "";
        let err = "";
        child.stdout.on("data", (d: Buffer) => (out += d.toString()));
        child.stderr.on("data", (d: Buffer) => (err += d.toString()));
        child.once("exit", (code) => resolve({ code, out, err }));
      });
    const help = await run(["--help"]);
    expect(help.code).toBe(0);
    expect(help.out).toContain("Usage: langchain-service-emulator [options]");
    const unknown = await run(["frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain("frobnicate");
  });
});
