/**
 * Fleet members as real Node processes (`node --import tsx <script>`, the job in FLEET_JOB): each prints `ready`,
 * waits for `go` on stdin so that all start at once, and prints its result as the last JSON line. Every wait is
 * bounded; a member still running at the end is killed.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export function bounded<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not done within ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

export interface Member<R> {
  child: ChildProcessWithoutNullStreams;
  ready: Promise<void>;
  result: Promise<R>;
  go(): void;
  kill(): void;
}

export function member<R>(script: string, job: Record<string, unknown>): Member<R> {
  const child = spawn(process.execPath, ["--import", "tsx", script], {
    cwd: ROOT,
    env: { ...process.env, FLEET_JOB: JSON.stringify(job) },
  });
  let out = "";
  let err = "";
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.startsWith("ready\n")) resolve();
    });
    void exited.then((code) => reject(new Error(`fleet member exited (${code}) before it was ready: ${err.slice(-1000)}`)));
  });
  ready.catch(() => undefined);
  const result = exited.then((code) => {
    if (code !== 0) throw new Error(`fleet member exited with ${code}: ${err.slice(-1000)}`);
    return JSON.parse(out.trim().split("\n").pop()!) as R;
  });
  result.catch(() => undefined); // read by the caller (or the start failed first)
  return { child, ready, result, go: () => child.stdin.write("go\n"), kill: () => child.exitCode === null && child.kill("SIGKILL") };
}

/**
 * Starts every member, lets them all go at once (after `beforeGo`, when given), and returns what each one printed.
 */
export async function fleet<R>(script: string, jobs: Record<string, unknown>[], ms = 30_000, beforeGo?: () => Promise<void>): Promise<R[]> {
  const members = jobs.map((job) => member<R>(script, job));
  try {
    await bounded(Promise.all(members.map((m) => m.ready)), 30_000, "fleet start");
    await beforeGo?.();
    for (const m of members) m.go();
    return await bounded(Promise.all(members.map((m) => m.result)), ms, "fleet run");
  } finally {
    for (const m of members) m.kill();
  }
}
