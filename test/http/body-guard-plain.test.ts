/**
 * The body guard wraps the body's stream in a plain `Response`: nothing is patched on the answer (no own `text`,
 * `body` or `clone`), and it never reads `Response.prototype`'s own `body` getter, which a runtime may keep on a
 * parent prototype (Cloudflare workerd keeps it on `Body.prototype`).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createTransport } from "../../src/http/fetch-stack.js";
import { ResponseTooLargeError } from "../../src/http/errors.js";

let server: Server;
let base: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    const body = req.url?.endsWith("/big") ? JSON.stringify({ data: "x".repeat(5000) }) : '{"ok":true}';
    res.writeHead(200, { "content-type": "application/json" }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const options = { retry: false, pacing: false, abuseGuard: false } as const;

describe("the body guard", () => {
  it("hands back a plain Response: its prototype is Response's, nothing of its own but its url", async () => {
    const f = createTransport({ baseUrl: `${base}/api/v1`, apiKey: "k", ...options });
    const res = await f(`${base}/api/v1/x`, { method: "POST", body: "{}" });
    expect(Object.getPrototypeOf(res)).toBe(Response.prototype);
    expect(Object.getOwnPropertyNames(res).filter((k) => k !== "url")).toEqual([]);
    expect(await res.json()).toEqual({ ok: true });
  });

  it("loads and guards where Response.prototype has no own body getter (workerd's shape)", async () => {
    const proto = Response.prototype as unknown as Record<string, unknown>;
    const own = Object.getOwnPropertyDescriptor(proto, "body")!;
    const parentOf = Object.getPrototypeOf(proto) as object;
    // the getter moved to a parent prototype, as workerd's Body.prototype holds it
    const parent = Object.create(parentOf, { body: own }) as object;
    delete proto.body;
    Object.setPrototypeOf(proto, parent);
    try {
      vi.resetModules();
      const { createTransport: fresh } = await import("../../src/http/fetch-stack.js");
      const f = fresh({ baseUrl: `${base}/api/v1`, apiKey: "k", maxResponseBytes: 1000, ...options });
      expect(await (await f(`${base}/api/v1/x`, { method: "POST", body: "{}" })).json()).toEqual({ ok: true });
      const big = await f(`${base}/api/v1/big`, { method: "POST", body: "{}" });
      await expect(big.text()).rejects.toMatchObject({ name: ResponseTooLargeError.name });
    } finally {
      Object.setPrototypeOf(proto, parentOf);
      Object.defineProperty(proto, "body", own);
    }
  });
});
