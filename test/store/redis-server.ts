/**
 * A real `redis-server` for the Redis suite: one per caller, on a free loopback port, no persistence
 * (`--save "" --appendonly no`), in a temp dir, stopped by its pid. `REDIS_URL` names a server to use instead.
 * With neither, the suite is skipped with one line (printed once by `redis-global-setup.ts`), unless
 * `REQUIRE_REDIS=1` (CI), which makes it fail.
 */
import { spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";

export const REQUIRE_REDIS = process.env.REQUIRE_REDIS === "1";
export const HOW_TO_ENABLE =
  "Redis store suite skipped: no redis-server on PATH and no REDIS_URL. Enable it: apt-get install -y redis-server (or any Redis >= 6.2 on PATH), or REDIS_URL=redis://host:port; REQUIRE_REDIS=1 makes a missing server fail.";

/** The `redis-server` on PATH, if any. */
export function redisServerBinary(): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, "redis-server");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

/** A server can be had: the suite runs (when false, it is skipped, or fails under REQUIRE_REDIS=1). */
export const redisAvailable = Boolean(process.env.REDIS_URL) || redisServerBinary() !== undefined;
/** A server of our own can be started (tests that pause or stop their server need one). */
export const ownRedisAvailable = redisServerBinary() !== undefined;

export interface TestRedis {
  url: string;
  /** the pid of the server we started (absent for REDIS_URL) */
  pid?: number;
  /** a fresh key prefix, so tests sharing a server never see each other's keys */
  prefix(): string;
  /** an admin client (closed by stop) */
  admin: Redis;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

/** Starts a redis-server (or, with `REDIS_URL` and `own` unset, uses that one). Every wait is bounded. */
export async function startRedis(options: { own?: boolean } = {}): Promise<TestRedis> {
  const external = process.env.REDIS_URL;
  if (external && !options.own) {
    const admin = new Redis(external, { maxRetriesPerRequest: 1, lazyConnect: true });
    await withTimeout(admin.connect(), 10_000, `REDIS_URL`);
    return {
      url: external,
      admin,
      prefix: () => `lcs-test:${randomUUID().slice(0, 8)}:`,
      stop: async () => void (await admin.quit().catch(() => admin.disconnect())),
    };
  }
  const bin = redisServerBinary();
  if (!bin) throw new Error(HOW_TO_ENABLE);
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort(); // another process may take it before the server binds: then try another
    const dir = mkdtempSync(join(tmpdir(), "lcs-redis-"));
    const child = spawn(bin, ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const ready = new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (/Ready to accept connections/.test(output)) resolve();
      };
      child.stdout!.on("data", onData);
      child.stderr!.on("data", onData);
      child.once("error", reject);
      void exited.then((code) => reject(new Error(`redis-server exited (${code}): ${output.slice(-500)}`)));
    });
    const stopServer = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const done = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5000))]);
        if (!done) {
          child.kill("SIGKILL");
          await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
        }
      }
      rmSync(dir, { recursive: true, force: true });
    };
    try {
      await withTimeout(ready, 10_000, "redis-server start");
    } catch (err) {
      lastError = err;
      await stopServer();
      continue;
    }
    const url = `redis://127.0.0.1:${port}`;
    const admin = new Redis(url, { maxRetriesPerRequest: 1 });
    admin.on("error", () => undefined); // a test that stops the server sees the failures where it looks for them
    return {
      url,
      pid: child.pid,
      admin,
      prefix: () => `lcs-test:${randomUUID().slice(0, 8)}:`,
      stop: async () => {
        admin.disconnect();
        await stopServer();
      },
    };
  }
  throw new Error(`could not start redis-server: ${String(lastError)}`);
}

/** Every key under `prefix`, by SCAN (never KEYS on a server that may be shared). */
export async function keysUnder(admin: Redis, prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = "0";
  do {
    const [next, keys] = await admin.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    out.push(...keys);
    cursor = next;
  } while (cursor !== "0");
  return out.sort();
}
