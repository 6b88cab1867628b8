/**
 * Fidelity: how the live service checks a wallet sign-in's domain and times, and which credential it uses when both
 * come, on the wire against the emulator.
 * - Live (the default): the domain, stripped of protocol, port and path, must be one of the service's own hosts (the
 *   emulator's public host, `api.<brand>.ai`, `<brand>.ai`, or `x402.signInDomains`), whatever host the request
 *   reached; the `uri` is not checked; `issuedAt` may be 30 s ahead. Seed: the public origin's host with port and a
 *   uri on it; 5 s ahead.
 * - Both `Authorization: Bearer` and `SIGN-IN-WITH-X` on a route that takes a wallet: live, the wallet is signed in
 *   and billed (the key untouched); seed, the key. A Bearer-only route uses the key either way.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { createSiwxHeader, createSiwxPayload } from "../../src/x402/siwx.js";
import { toBase64Json } from "../../src/x402/encoding.js";
import type { X402Wallet } from "../../src/x402/wallets.js";
import { EvmWallet } from "../../src/evm/index.js";
import { SolanaWallet } from "../../src/solana/index.js";
import { probeRoute } from "../emulator/helpers.js";

let started: Emulator[] = [];
afterEach(async () => {
  await Promise.all(started.map((e) => e.close()));
  started = [];
});

async function start(options: Parameters<typeof startEmulator>[0] = {}): Promise<Emulator> {
  const emu = await startEmulator({
    routes: [probeRoute],
    walletStartingUsd: 1,
    apiKeys: [{ key: "k1", usd: 5, diem: 0 }],
    ...options,
    x402: { solana: false, ...options.x402 },
  });
  started.push(emu);
  return emu;
}

async function probe(
  e: Emulator,
  headers: Record<string, string>,
): Promise<{ status: number; body: { code?: string; caller?: string; details?: { reason?: string } } }> {
  const res = await fetch(`${e.url}/probe/inference`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: "emu-s", usd: 0.25 }),
  });
  return { status: res.status, body: (await res.json()) as { code?: string } };
}

/** A header signed for `domainUrl` (its host is the domain, its origin the uri), sent to the emulator. */
async function signedFor(wallet: X402Wallet, domainUrl: string, now?: number): Promise<Record<string, string>> {
  return { "sign-in-with-x": await createSiwxHeader(wallet, domainUrl, now === undefined ? {} : { now }) };
}

const WALLETS = [
  ["EVM", () => EvmWallet.random()],
  ["Solana", () => SolanaWallet.random()],
] as const;

describe("emulator, live: the sign-in's domain is one of the service's own hosts", () => {
  for (const [kind, make] of WALLETS) {
    it(`${kind}: api.<brand>.ai, <brand>.ai and the public host (any port, any path) pass; another host is DOMAIN_MISMATCH`, async () => {
      const emu = await start();
      const wallet = make();
      const port = new URL(emu.url).port;
      // the request reaches 127.0.0.1; the service's own host names are what count
      expect((await probe(emu, await signedFor(wallet, "https://api.service.ai/api/v1"))).status).toBe(200);
      expect((await probe(emu, await signedFor(wallet, "https://service.ai"))).status).toBe(200);
      // port and path stripped before comparing
      expect((await probe(emu, await signedFor(wallet, `http://127.0.0.1:${Number(port) + 1}/elsewhere`))).status).toBe(200);
      const other = await probe(emu, await signedFor(wallet, "http://evil.example/api/v1"));
      expect(other.status).toBe(401);
      expect(other.body).toMatchObject({ code: "X402_SIGN_IN_DOMAIN_MISMATCH", details: { reason: "domain_mismatch" } });
    });
  }

  it("x402.signInDomains replaces the list: only those hosts pass, the public host no longer", async () => {
    const emu = await start({ x402: { signInDomains: ["api.deploy.test"] } });
    const wallet = EvmWallet.random();
    expect((await probe(emu, await signedFor(wallet, "https://api.deploy.test:8443/api/v1"))).status).toBe(200);
    expect((await probe(emu, await signedFor(wallet, emu.url))).body.code).toBe("X402_SIGN_IN_DOMAIN_MISMATCH");
  });

  it("the uri is not checked live (a domain of the list, a uri on another origin); seed refuses it (uri_mismatch)", async () => {
    const wallet = EvmWallet.random();
    for (const [emu, expected] of [
      [await start(), 200],
      [await start({ mode: "seed" }), 401],
      [await start({ x402: { signInCheck: "seed" } }), 401],
    ] as const) {
      const url = `${emu.url}/probe/inference`;
      const payload = await createSiwxPayload(wallet, url);
      const origin = new URL(emu.url).origin;
      const message = payload.message.replace(`URI: ${origin}`, "URI: https://elsewhere.example");
      expect(message).not.toBe(payload.message);
      const header = toBase64Json({ ...payload, message, signature: await wallet.signMessage(message) });
      const res = await probe(emu, { "sign-in-with-x": header });
      expect(res.status).toBe(expected);
      if (expected === 401) expect(res.body.details?.reason).toBe("uri_mismatch");
    }
  });

  it("seed: the domain must be the public host with its port (api.<brand>.ai and another port refused)", async () => {
    const emu = await start({ mode: "seed" });
    const wallet = EvmWallet.random();
    const port = new URL(emu.url).port;
    expect((await probe(emu, await signedFor(wallet, emu.url))).status).toBe(200);
    expect((await probe(emu, await signedFor(wallet, "https://api.service.ai/api/v1"))).status).toBe(401);
    expect((await probe(emu, await signedFor(wallet, `http://127.0.0.1:${Number(port) + 1}`))).status).toBe(401);
  });
});

describe("emulator: how far ahead issuedAt may be", () => {
  it("live: 20 s ahead passes, 40 s is FUTURE_TIMESTAMP; seed: 20 s is refused already", async () => {
    const wallet = EvmWallet.random();
    const live = await start();
    expect((await probe(live, await signedFor(wallet, live.url, Date.now() + 20_000))).status).toBe(200);
    const ahead = await probe(live, await signedFor(wallet, live.url, Date.now() + 40_000));
    expect(ahead.status).toBe(401);
    expect(ahead.body.code).toBe("X402_SIGN_IN_FUTURE_TIMESTAMP");
    const seed = await start({ mode: "seed" });
    expect((await probe(seed, await signedFor(wallet, seed.url, Date.now() + 20_000))).status).toBe(401);
  });
});

describe("emulator: both an API key and a sign-in", () => {
  it("live: the wallet is signed in and billed, the key untouched", async () => {
    const emu = await start();
    const wallet = EvmWallet.random();
    const res = await probe(emu, { authorization: "Bearer k1", ...(await signedFor(wallet, emu.url)) });
    expect(res.status).toBe(200);
    expect(res.body.caller).toBe("wallet");
    expect(emu.account(wallet.address)!.usd).toBeCloseTo(0.75, 6);
    expect(emu.account("k1")!.usd).toBe(5);
  });

  it('seed (mode or x402.bothCredentials: "key"): the key is used and billed', async () => {
    for (const emu of [await start({ mode: "seed" }), await start({ x402: { bothCredentials: "key" } })]) {
      const wallet = EvmWallet.random();
      const res = await probe(emu, { authorization: "Bearer k1", ...(await signedFor(wallet, emu.url)) });
      expect(res.body.caller).toBe("apiKey");
      expect(emu.account("k1")!.usd).toBeCloseTo(4.75, 6);
      expect(emu.account(wallet.address)).toBeUndefined();
    }
  });

  it("a Bearer-only route (/api_keys/rate_limits) uses the key whatever the mode", async () => {
    const emu = await start();
    const res = await fetch(`${emu.url}/api_keys/rate_limits`, {
      headers: { authorization: "Bearer k1", ...(await signedFor(EvmWallet.random(), emu.url)) },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { balances: { USD: number } } }).data.balances.USD).toBe(5);
  });
});
