/**
 * Starts `http-store-server.ts` as a child process and gives its URL; `stop()` ends it (by its own pid).
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { bounded } from "./processes.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SERVER = fileURLToPath(new URL("./http-store-server.ts", import.meta.url));

export interface StoreServer {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

export async function startStoreServer(): Promise<StoreServer> {
  const child = spawn(process.execPath, ["--import", "tsx", SERVER], { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
  let err = "";
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const port = await bounded(
    new Promise<number>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        const m = /^listening (\d+)\n/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      void exited.then(() => reject(new Error(`the store server exited before it listened: ${err.slice(-1000)}`)));
    }),
    30_000,
    "store server start",
  ).catch((e: unknown) => {
    child.kill("SIGKILL");
    throw e;
  });
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      await bounded(exited, 5_000, "store server stop").catch(() => child.kill("SIGKILL"));
    },
  };
}
