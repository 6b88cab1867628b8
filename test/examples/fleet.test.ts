/**
 * `npm run example:fleet`, run as a user runs it: a separate process (`node --import tsx examples/fleet.ts`)
 * that starts its own redis-server (or uses REDIS_URL), the emulator with a local chain, and 4 worker processes
 * on one wallet. Its output is checked: every request served, spend within the wallet's cap and equal to what
 * the ledger credited and what left the wallet on chain, and everything it started stopped (exit 0, its Redis
 * port closed). Skipped without a Redis, failed instead under REQUIRE_REDIS=1 (see test/store/redis-server.ts).
 */
import { spawn } from "node:child_process";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { redisAvailable } from "../store/redis-server.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

function runExample(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // the examples target a real deployment when these are set; this run is the embedded one
    const clean = { ...process.env };
    for (const name of ["SERVICE_BASE_URL", "SERVICE_API_KEY", "WALLET_PRIVATE_KEY", "FLEET_WORKERS", "FLEET_REQUESTS"]) delete clean[name];
    const child = spawn(process.execPath, ["--import", "tsx", "examples/fleet.ts"], { cwd: ROOT, env: { ...clean, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`example:fleet not done within 90 s:\n${stdout}\n${stderr}`));
    }, 90_000);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** true when something accepts connections on the port */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

describe.skipIf(!redisAvailable)("example:fleet", () => {
  it("4 workers on one wallet: every request served, spend within the cap and equal on ledger and chain, clean exit", {
    timeout: 100_000,
  }, async () => {
    const { code, stdout, stderr } = await runExample({ FLEET_WORKERS: "4", FLEET_REQUESTS: "10" });
    expect(code, `${stdout}\n${stderr}`).toBe(0);

    const summary =
      /^summary: (\d+)\/(\d+) requests served, (\d+) payment\(s\), \$([\d.]+) spent \(ledger \$([\d.]+), on chain \$([\d.]+); cap \$(\d+)\), (\d+) 429s, (\d+) errors$/m.exec(
        stdout,
      );
    expect(summary, stdout).not.toBeNull();
    const [served, requests, payments, spent, ledger, onChain, cap, n429, errors] = summary!.slice(1).map(Number) as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    expect(requests).toBe(40);
    expect(served).toBe(40);
    expect(errors).toBe(0);
    expect(n429).toBe(0);
    // one payment for the fleet: the top-up is single-flight across processes (the wallet's lease in Redis);
    // before that, each worker paid for itself (4 payments, $20)
    expect(payments).toBe(1);
    expect(spent).toBe(5);
    expect(spent).toBeLessThanOrEqual(cap);
    expect(ledger).toBe(spent);
    expect(onChain).toBe(spent);
    expect(stdout).toContain("check: paid = credited = on chain, within the cap");

    // each payment was printed as it happened: one settled line per payment, by a worker
    expect(stdout.match(/^ {2}worker \d: payment\.settled \$5 tx 0x[0-9a-f]+…$/gm)).toHaveLength(payments);
    // no private key in the output
    expect(stdout + stderr).not.toMatch(/0x[0-9a-fA-F]{64}/);

    // the redis-server it started is gone
    const port = /redis: redis-server on port (\d+)/.exec(stdout)?.[1];
    if (port) expect(await listening(Number(port))).toBe(false);
  });
});
