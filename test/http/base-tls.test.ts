/**
 * The Node base (undici, src/http/base.node.ts) over HTTPS, as a user meets it against the live service: the
 * certificate is checked (an untrusted one fails as fetch fails), a CA the process trusts (NODE_EXTRA_CA_CERTS) is honoured, and the TLS
 * connection is kept alive. A real TLS server on loopback with a certificate made here by openssl (installed by
 * .ci/run); each client runs in its own process, since the CA list is read at start.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");
let dir: string;
let server: Server;
let url: string;
let connections = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tls-"));
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=DNS:localhost,IP:127.0.0.1",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
    ],
    { stdio: "ignore" },
  );
  server = createServer({ key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) }, (req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end('{"secure":true}'));
  });
  server.on("secureConnection", () => connections++);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/x`;
}, 30_000);
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function child(env: Record<string, string>): Promise<{
  ours: { status?: number; text?: string; error?: string; code?: string }[];
  theirs: { status?: number; error?: string; code?: string };
}> {
  const { NODE_EXTRA_CA_CERTS: _ca, NODE_TLS_REJECT_UNAUTHORIZED: _off, ...clean } = process.env;
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", "tsx", "test/http/tls-child.ts", url], { cwd: ROOT, env: { ...clean, ...env } });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => (out += d));
    p.stderr.on("data", (d: Buffer) => (err += d));
    p.on("close", (code) =>
      code === 0 ? resolve(JSON.parse(out.trim().split("\n").pop()!)) : reject(new Error(`child exited ${code}: ${err}`)),
    );
  });
}

describe("the Node base over HTTPS", () => {
  it("refuses a certificate the process does not trust, as fetch does", async () => {
    const { ours, theirs } = await child({});
    expect(ours[0]).toEqual({ error: "fetch failed", code: "DEPTH_ZERO_SELF_SIGNED_CERT" });
    expect(theirs).toMatchObject({ error: "fetch failed" });
  }, 30_000);

  it("trusts a CA given in NODE_EXTRA_CA_CERTS, and keeps the TLS connection alive", async () => {
    const before = connections;
    const { ours, theirs } = await child({ NODE_EXTRA_CA_CERTS: join(dir, "cert.pem") });
    expect(ours).toEqual(Array(4).fill({ status: 200, text: '{"secure":true}' }));
    expect(theirs).toMatchObject({ status: 200 });
    // four requests of ours on at most two connections (undici's pool opens a second one when the next request
    // comes as the first's socket is still being handed back), one of fetch's on its own
    expect(connections - before).toBeLessThanOrEqual(3);
  }, 30_000);
});
