/**
 * Importing the package leaves the runtime's own fetch working for everyone else in the process: undici, when
 * loaded first, would install its Agent as the global dispatcher, and Node 20's built-in fetch (undici 6) then
 * refuses a request that sets its own `content-length` (what @solana/kit's RPC transport does).
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

describe("the Node base and the runtime's fetch", () => {
  it('after `import "langchain-service"`, a global fetch with its own content-length header still goes through', () => {
    // a fresh process: nothing has touched fetch or Response before the package loads
    const script = `
      import { createServer } from "node:http";
      await import(${JSON.stringify(new URL("../../src/index.ts", import.meta.url).href)});
      const server = createServer((req, res) => { let n = 0; req.on("data", (c) => (n += c.length)); req.on("end", () => res.end(String(n))); });
      await new Promise((r) => server.listen(0, "127.0.0.1", r));
      const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getSlot" });
      try {
        const res = await fetch("http://127.0.0.1:" + server.address().port, { method: "POST", body, headers: { "content-length": String(body.length), "content-type": "application/json" } });
        console.log("status " + res.status + " read " + (await res.text()));
      } catch (e) {
        console.log("failed " + (e.cause?.message ?? e.message));
      } finally {
        server.close();
      }
    `;
    const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: ROOT, encoding: "utf8" });
    expect(out.trim()).toBe(`status 200 read ${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getSlot" }).length}`);
  });
});
