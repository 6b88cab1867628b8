/**
 * A wallet reaching the service through a proxy or a custom base URL, over loopback against the emulator in live
 * mode. The service checks a sign-in's domain against its own hosts, not the host a request reached; the emulator
 * lists `api.deploy.test` (x402.signInDomains) and is reached through a tiny loopback proxy that records what it
 * forwards:
 * - every face that takes a wallet (ServiceClient, ChatService, ServiceEmbeddings, a tool, withX402) signs
 *   `signInDomain` and is served; without it the sign-in names the proxy's host and is refused (DOMAIN_MISMATCH);
 * - a bad `signInDomain` is a ConfigurationError when the face is made, nothing sent;
 * - withX402 never forwards a caller's `Authorization` beside its sign-in (the service would bill the wallet
 *   anyway): the wallet pays, the key is neither sent nor billed.
 */
import { createServer, request, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { HumanMessage } from "@langchain/core/messages";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ServiceClient } from "../../src/client.js";
import { ChatService } from "../../src/chat/index.js";
import { ServiceEmbeddings } from "../../src/embeddings/index.js";
import { WebSearchTool } from "../../src/tools/web-search.js";
import { AuthenticationError, ConfigurationError } from "../../src/http/errors.js";
import { withX402 } from "../../src/x402/with-x402.js";
import { EvmWallet } from "../../src/evm/index.js";

const DOMAIN = "api.deploy.test";
let emu: Emulator;
let proxy: Server;
let proxyBase: string;
/** the headers of each request the proxy forwarded */
const forwarded: { path: string; headers: IncomingHttpHeaders }[] = [];

beforeAll(async () => {
  emu = await startEmulator({
    apiKeys: [{ key: "k1", usd: 5, diem: 0 }],
    walletStartingUsd: 1,
    x402: { solana: false, signInDomains: [DOMAIN] },
    rateLimits: { abuseMaxFailures: 10_000 },
  });
  proxy = createServer((req, res) => {
    forwarded.push({ path: req.url ?? "", headers: req.headers });
    const upstream = request({ host: "127.0.0.1", port: emu.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  proxyBase = `http://localhost:${(proxy.address() as AddressInfo).port}/api/v1`;
});
afterAll(async () => {
  await new Promise((r) => proxy?.close(r));
  await emu?.close();
});

const common = { retry: { maxRetries: 0 }, abuseGuard: false as const };

describe("signInDomain: the service's host, named by a client that reaches it elsewhere", () => {
  it("ServiceClient: served with signInDomain; without it the sign-in names the proxy's host and is refused", async () => {
    const wallet = EvmWallet.random();
    const body = { model: "emu-xs", messages: [{ role: "user", content: "hello" }] };
    const bare = new ServiceClient({ baseUrl: proxyBase, wallet, ...common });
    const refused = await bare.request("/chat/completions", { body }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AuthenticationError);
    expect(refused).toMatchObject({ code: "X402_SIGN_IN_DOMAIN_MISMATCH" });

    const client = new ServiceClient({ baseUrl: proxyBase, wallet, signInDomain: DOMAIN, ...common });
    expect((await client.request("/chat/completions", { body })).status).toBe(200);
    // the header named the configured domain (port and scheme are the service's to strip)
    const header = forwarded.at(-1)!.headers["sign-in-with-x"] as string;
    expect(JSON.parse(Buffer.from(header, "base64").toString("utf8")).message).toMatch(new RegExp(`^${DOMAIN} wants you to sign in`));
    expect(emu.account(wallet.address)!.usd).toBeLessThan(1);
  });

  it("ChatService, ServiceEmbeddings and a tool take it too (a URL's host is taken)", async () => {
    const wallet = EvmWallet.random();
    const chat = new ChatService({ model: "emu-xs", baseUrl: proxyBase, wallet, signInDomain: `https://${DOMAIN}/api/v1`, ...common });
    expect(typeof (await chat.invoke([new HumanMessage("hello")])).content).toBe("string");
    const embeddings = new ServiceEmbeddings({
      model: "text-embedding-bge-m3",
      baseUrl: proxyBase,
      wallet,
      signInDomain: DOMAIN,
      ...common,
    });
    expect((await embeddings.embedQuery("hello")).length).toBeGreaterThan(0);
    const tool = new WebSearchTool({ baseUrl: proxyBase, wallet, signInDomain: DOMAIN, ...common });
    expect(String(await tool.invoke({ query: "harbour" }))).not.toMatch(/DOMAIN_MISMATCH|error/i);
    // all three were billed to the wallet
    expect(emu.account(wallet.address)!.entries.filter((e) => e.type === "CHARGE").length).toBeGreaterThanOrEqual(3);
  });

  it("a bad signInDomain is a ConfigurationError when the face is made, before any request", () => {
    const wallet = EvmWallet.random();
    const before = forwarded.length;
    for (const bad of ["", "not a host", "https://user:pw@api.deploy.test", "api.deploy.test/path?x", 42]) {
      expect(() => new ServiceClient({ baseUrl: proxyBase, wallet, signInDomain: bad as string })).toThrow(ConfigurationError);
      expect(() => new ChatService({ model: "emu-xs", baseUrl: proxyBase, wallet, signInDomain: bad as string })).toThrow(
        ConfigurationError,
      );
      expect(() => withX402(globalThis.fetch, { wallet, baseUrl: proxyBase, signInDomain: bad as string })).toThrow(ConfigurationError);
    }
    expect(forwarded.length).toBe(before);
  });
});

describe("withX402 and a caller's Authorization", () => {
  it("a signed request carries no Authorization: the wallet is signed in and billed, the key never sent nor billed", async () => {
    const wallet = EvmWallet.random();
    const paid = withX402(globalThis.fetch, { wallet, baseUrl: proxyBase, signInDomain: DOMAIN });
    const before = forwarded.length;
    const res = await paid(`${proxyBase}/chat/completions`, {
      method: "POST",
      headers: { authorization: "Bearer k1", "content-type": "application/json" },
      body: JSON.stringify({ model: "emu-xs", messages: [{ role: "user", content: "hello" }] }),
    });
    expect(res.status).toBe(200);
    await res.text();
    const sent = forwarded.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.headers.authorization).toBeUndefined();
    expect(sent[0]!.headers["sign-in-with-x"]).toBeTruthy();
    expect(emu.account(wallet.address)!.usd).toBeLessThan(1);
    expect(emu.account("k1")!.usd).toBe(5);
  });
});
