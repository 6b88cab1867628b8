/**
 * Fleet members as real Node processes (a member script, its job in FLEET_JOB): each prints `ready`, waits for `go`
 * on stdin so that all start at once, and prints its result as the last JSON line. Every wait is bounded; a member still
 * running at the end is killed.
 *
 * A member runs its script bundled (esbuild, the bundler under tsx and tsup): the script, the helpers and the
 * client's sources it imports in one ESM file, the packages left to Node. It starts on about 0.9 s of CPU where
 * `node --import tsx <script>` took 2.2 s, which every process of every fleet paid.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { rmSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type BuildOptions } from "esbuild";
import { afterAll } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
// inside the checkout, so that the bundles' packages resolve from its node_modules; one folder per test process
const BUNDLES = join(ROOT, "node_modules", ".cache", "fleet-members", String(process.pid));
afterAll(() => rmSync(BUNDLES, { recursive: true, force: true }));

export function bounded<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not done within ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

const bundles = new Map<string, Promise<string>>();
/** `script` bundled once per test process (its stack traces mapped back to the sources). */
function bundled(script: string): Promise<string> {
  let file = bundles.get(script);
  if (!file) {
    const outfile = join(BUNDLES, `${basename(script, ".ts")}.mjs`);
    const options: BuildOptions = { entryPoints: [script], outfile, bundle: true, packages: "external", sourcemap: "inline" };
    file = build({ ...options, platform: "node", format: "esm", logLevel: "error" }).then(() => outfile);
    bundles.set(script, file);
  }
  return file;
}

export interface Member<R> {
  ready: Promise<void>;
  result: Promise<R>;
  go(): void;
  kill(): void;
}

export function member<R>(script: string, job: Record<string, unknown>): Member<R> {
  let killed = false;
  const started = bundled(script).then((file): ChildProcessWithoutNullStreams => {
    const child = spawn(process.execPath, ["--enable-source-maps", file], {
      cwd: ROOT,
      env: { ...process.env, FLEET_JOB: JSON.stringify(job) },
    });
    if (killed) child.kill("SIGKILL");
    return child;
  });
  let out = "";
  let err = "";
  const exited = started.then((child) => {
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    return new Promise<number | null>((resolve) => child.once("exit", resolve));
  });
  const ready = started.then(
    (child) =>
      new Promise<void>((resolve, reject) => {
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString();
          if (out.startsWith("ready\n")) resolve();
        });
        void exited.then((code) => reject(new Error(`fleet member exited (${code}) before it was ready: ${err.slice(-1000)}`)));
      }),
  );
  ready.catch(() => undefined);
  const result = exited.then((code) => {
    if (code !== 0) throw new Error(`fleet member exited with ${code}: ${err.slice(-1000)}`);
    return JSON.parse(out.trim().split("\n").pop()!) as R;
  });
  result.catch(() => undefined); // read by the caller (or the start failed first)
  return {
    ready,
    result,
    go: () => void started.then((child) => child.stdin.write("go\n")),
    kill: () => {
      killed = true;
      void started.then((child) => child.exitCode === null && child.kill("SIGKILL")).catch(() => undefined);
    },
  };
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
