/**
 * Fidelity: the codes of a refused wallet sign-in, on the wire, and what the client does with them.
 *
 * The live service answers a refused sign-in on inference with 401 `{error, code: "X402_SIGN_IN_<cause>"}`
 * (`EXPIRED`, `NONCE_REUSED`, `INVALID_SIGNATURE`, `DOMAIN_MISMATCH`, …: its auth guide's list); the seed contract
 * answers `X402_INVALID_SIGN_IN` to them all.
 * - Emulator: the live code of each cause in its default mode, EVM and Solana; the seed's one code with
 *   `mode: "seed"` or `x402.signInCodes: "seed"`.
 * - Client: a refusal a fresh header cures (`EXPIRED`, `NONCE_REUSED`) is signed again once (fresh nonce,
 *   `issuedAt` on the service's clock) and re-sent: 2 requests on the wire; refused again, an
 *   `AuthenticationError` with the code after exactly those 2; any other code is not re-sent (1 request), nor is a
 *   request whose body is a stream. The error carries the body and code, and says what to do, never the header.
 */
import { generateKeyPairSync } from "node:crypto";
import { Wallet } from "ethers";
import { afterEach, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ServiceClient } from "../../src/client.js";
import { createServiceFetch } from "../../src/stack.js";
import { AuthenticationError } from "../../src/http/errors.js";
import type { AuthProvider, FetchLike } from "../../src/http/fetch-stack.js";
import { toBase64Json } from "../../src/x402/encoding.js";
import { createSiwxHeader, createSiwxPayload, createWalletAuth } from "../../src/x402/siwx.js";
import type { X402Wallet } from "../../src/x402/wallets.js";
import { EvmWallet } from "../../src/evm/index.js";
import { SolanaWallet } from "../../src/solana/index.js";
import { probeRoute } from "../emulator/helpers.js";

const PROBE = { model: "emu-s", usd: 0.001 };
const SIX_MINUTES_AGO = () => Date.now() - 6 * 60_000;

let started: Emulator[] = [];
afterEach(async () => {
  await Promise.all(started.map((e) => e.close()));
  started = [];
});

async function start(options: Parameters<typeof startEmulator>[0] = {}): Promise<Emulator> {
  const emu = await startEmulator({ routes: [probeRoute], walletStartingUsd: 1, ...options, x402: { solana: false, ...options.x402 } });
  started.push(emu);
  return emu;
}

function probe(e: Emulator, header: string): Promise<Response> {
  return fetch(`${e.url}/probe/inference`, {
    method: "POST",
    headers: { "content-type": "application/json", "sign-in-with-x": header },
    body: JSON.stringify(PROBE),
  });
}

/** A 64-byte Solana secret key (seed, then public key). */
function solanaSecret(): Uint8Array {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const d = Buffer.from(privateKey.export({ format: "jwk" }).d!, "base64url");
  const x = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url");
  return new Uint8Array(Buffer.concat([d, x]));
}

const KINDS = [
  ["EVM", () => EvmWallet.random(), 1],
  ["Solana", () => SolanaWallet.random(), "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"],
] as const;

/** One header per cause, for emulator `e`: [live code, details.reason, header]. A reused nonce is sent twice. */
async function causes(
  e: Emulator,
  wallet: X402Wallet,
  other: X402Wallet,
  otherChain: number | string,
): Promise<[string, string, string][]> {
  const url = `${e.url}/probe/inference`;
  const good = await createSiwxPayload(wallet, url);
  return [
    ["X402_SIGN_IN_EXPIRED", "stale", await createSiwxHeader(wallet, url, { now: SIX_MINUTES_AGO(), ttlMs: 60 * 60_000 })],
    ["X402_SIGN_IN_EXPIRED", "expired", await createSiwxHeader(wallet, url, { now: Date.now() - 60_000, ttlMs: 30_000 })],
    ["X402_SIGN_IN_FUTURE_TIMESTAMP", "issued_in_future", await createSiwxHeader(wallet, url, { now: Date.now() + 60_000 })],
    ["X402_SIGN_IN_NONCE_REUSED", "nonce_reused", await createSiwxHeader(wallet, url)],
    [
      "X402_SIGN_IN_INVALID_SIGNATURE",
      "invalid_signature",
      toBase64Json({ ...good, signature: (await createSiwxPayload(other, url)).signature }),
    ],
    ["X402_SIGN_IN_DOMAIN_MISMATCH", "domain_mismatch", await createSiwxHeader(wallet, "http://evil.example/api/v1")],
    // (a uri on another origin: refused in seed mode only, test/fidelity/siwx-live.test.ts)
    ["X402_SIGN_IN_ADDRESS_MISMATCH", "address_mismatch", toBase64Json({ ...good, address: other.address })],
    ["X402_SIGN_IN_UNSUPPORTED_CHAIN", "unsupported_chain", toBase64Json({ ...good, chainId: otherChain })],
    ["X402_SIGN_IN_INVALID_MESSAGE", "malformed", toBase64Json({ ...good, message: "not a sign-in message" })],
    ["X402_SIGN_IN_INVALID_PAYLOAD", "malformed", toBase64Json({ address: wallet.address })],
    ["X402_SIGN_IN_PARSE_ERROR", "malformed", "not base64 json"],
  ];
}

/** Sends each cause's header to `e` and returns what came back: [code, reason] per cause. */
async function answers(e: Emulator, wallet: X402Wallet, other: X402Wallet, otherChain: number | string): Promise<[string, string][]> {
  const out: [string, string][] = [];
  for (const [, reason, header] of await causes(e, wallet, other, otherChain)) {
    if (reason === "nonce_reused") expect((await probe(e, header)).status, "first use of the nonce").toBe(200);
    const res = await probe(e, header);
    expect(res.status, reason).toBe(401);
    const body = (await res.json()) as { error: string; code: string; details: { reason: string } };
    // the body's shape is the emulator's for every 401 of a sign-in
    expect(body, reason).toMatchObject({ error: "Invalid Sign-in-with-x signature", details: { reason } });
    out.push([body.code, body.details.reason]);
  }
  return out;
}

describe("emulator: a refused sign-in's code", () => {
  for (const [kind, make, otherChain] of KINDS) {
    it(`${kind}: live, each cause's own X402_SIGN_IN_* code; seed (mode or option), X402_INVALID_SIGN_IN for them all`, async () => {
      const wallet = make();
      const other = make();
      const live = await start();
      const expected = (await causes(live, wallet, other, otherChain)).map(([code, reason]) => [code, reason]);
      expect(await answers(live, wallet, other, otherChain)).toEqual(expected);
      for (const seed of [await start({ mode: "seed" }), await start({ x402: { signInCodes: "seed" } })]) {
        expect(await answers(seed, wallet, other, otherChain)).toEqual(expected.map(([, reason]) => ["X402_INVALID_SIGN_IN", reason]));
      }
      // and the option wins over the mode the other way too
      const liveInSeed = await start({ mode: "seed", x402: { signInCodes: "live" } });
      expect(await answers(liveInSeed, wallet, other, otherChain)).toEqual(expected);
    });
  }
});

/** A base fetch that records what goes on the wire: each request's status and its sign-in header. */
function wire(rewrite: (header: string) => string = (h) => h): { fetch: FetchLike; sent: { status: number; header: string }[] } {
  const sent: { status: number; header: string }[] = [];
  return {
    sent,
    fetch: async (input, init) => {
      const headers = new Headers(init?.headers);
      const header = rewrite(headers.get("sign-in-with-x") ?? "");
      headers.set("sign-in-with-x", header);
      const res = await globalThis.fetch(input, { ...init, headers });
      sent.push({ status: res.status, header });
      return res;
    },
  };
}

/**
 * Something between the client and the service that re-sends a sign-in header it saw before: once (`times`: 1,
 * the next request after it is armed), or on every request after (Infinity).
 */
function replaying(): { fetch: FetchLike; sent: { status: number; header: string }[]; arm(times: number): void } {
  let previous: string | undefined;
  let left = 0;
  const w = wire((header) => {
    if (left > 0 && previous) {
      left--;
      return previous;
    }
    previous = header;
    return header;
  });
  return { ...w, arm: (times) => (left = times) };
}

/**
 * A wallet's auth provider that hands out a header it signed six minutes ago (kept too long, say in a pool of
 * pre-signed headers) for its first `stale` requests, then fresh ones. The service's `Date` agrees with the clock:
 * only the refusal's code tells the client a fresh header would pass.
 */
function keptTooLong(wallet: X402Wallet, stale: number): AuthProvider {
  const own = createWalletAuth(wallet);
  let left = stale;
  return {
    identity: own.identity,
    kind: "wallet",
    clockSensitive: true,
    async headers(url, init) {
      if (left-- > 0) return { "SIGN-IN-WITH-X": await createSiwxHeader(wallet, url, { now: SIX_MINUTES_AGO(), ttlMs: 60 * 60_000 }) };
      return own.headers(url, init);
    },
  };
}

function issuedAt(header: string): number {
  const message = (JSON.parse(Buffer.from(header, "base64").toString("utf8")) as { message: string }).message;
  return Date.parse(/Issued At: (\S+)/.exec(message)![1]!);
}

async function refusal(promise: Promise<unknown>): Promise<AuthenticationError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AuthenticationError);
  return err as AuthenticationError;
}

describe("client: a refusal a fresh header cures is signed again once", () => {
  for (const [kind, make] of KINDS) {
    it(`${kind}: X402_SIGN_IN_NONCE_REUSED (a header re-sent on the way) is re-signed once and the call goes through: 2 requests`, async () => {
      const emu = await start();
      const proxy = replaying();
      const client = new ServiceClient({ baseUrl: emu.url, wallet: make(), fetch: proxy.fetch, abuseGuard: false });
      expect((await client.request<{ caller: string }>("/probe/inference", { body: PROBE })).data.caller).toBe("wallet");
      proxy.sent.length = 0;
      proxy.arm(1);
      const served = await client.request<{ caller: string }>("/probe/inference", { body: PROBE });
      expect(served.data.caller).toBe("wallet");
      expect(proxy.sent.map((s) => s.status)).toEqual([401, 200]);
      expect(proxy.sent[1]!.header).not.toBe(proxy.sent[0]!.header);
    });

    it(`${kind}: X402_SIGN_IN_EXPIRED (a header kept too long, the service's Date agreeing) is re-signed once on the service's clock: 2 requests`, async () => {
      const emu = await start();
      const w = wire();
      const client = new ServiceClient({ baseUrl: emu.url, auth: keptTooLong(make(), 1), fetch: w.fetch, abuseGuard: false });
      const served = await client.request<{ caller: string }>("/probe/inference", { body: PROBE });
      expect(served.data.caller).toBe("wallet");
      expect(w.sent.map((s) => s.status)).toEqual([401, 200]);
      expect(Math.abs(issuedAt(w.sent[1]!.header) - Date.now())).toBeLessThan(5_000);
    });
  }

  it("refused again after the one re-sign: an AuthenticationError with the code, body kept, after exactly 2 requests", async () => {
    const emu = await start();
    // a proxy that re-sends the first header it saw on every request after
    const proxy = replaying();
    const client = new ServiceClient({ baseUrl: emu.url, wallet: EvmWallet.random(), fetch: proxy.fetch, abuseGuard: false });
    await client.request("/probe/inference", { body: PROBE });
    proxy.sent.length = 0;
    proxy.arm(Infinity);
    const reused = await refusal(client.request("/probe/inference", { body: PROBE }));
    expect(proxy.sent.map((s) => s.status)).toEqual([401, 401]);
    expect(reused.status).toBe(401);
    expect(reused.code).toBe("X402_SIGN_IN_NONCE_REUSED");
    expect(reused.body).toMatchObject({ code: "X402_SIGN_IN_NONCE_REUSED", details: { reason: "nonce_reused" } });
    expect(reused.message).toMatch(/re-signed once with a fresh nonce and refused again/);
    expect(reused.message).not.toContain(proxy.sent[0]!.header.slice(0, 40));

    // a signer whose every header is six minutes old: EXPIRED twice
    const w = wire();
    const stale = new ServiceClient({
      baseUrl: emu.url,
      auth: keptTooLong(EvmWallet.random(), Infinity),
      fetch: w.fetch,
      abuseGuard: false,
    });
    const expired = await refusal(stale.request("/probe/inference", { body: PROBE }));
    expect(w.sent.map((s) => s.status)).toEqual([401, 401]);
    expect(expired.code).toBe("X402_SIGN_IN_EXPIRED");
    expect(expired.body).toMatchObject({ code: "X402_SIGN_IN_EXPIRED", details: { reason: "stale" } });
    expect(expired.message).toMatch(/re-signed once .*and refused again: check the machine's clock/);
    for (const { header } of w.sent) expect(expired.message).not.toContain(header.slice(0, 40));
  });

  it("a request whose body is a stream is not re-sent: the refusal is its error, after 1 request", async () => {
    const emu = await start();
    const w = wire();
    const stack = createServiceFetch({ baseUrl: emu.url, auth: keptTooLong(EvmWallet.random(), 1), fetch: w.fetch, abuseGuard: false });
    const bytes = new TextEncoder().encode(JSON.stringify(PROBE));
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes);
        controller.close();
      },
    });
    const err = await refusal(
      stack(`${emu.url}/probe/inference`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        duplex: "half",
      } as RequestInit),
    );
    expect(w.sent.map((s) => s.status)).toEqual([401]);
    expect(err.code).toBe("X402_SIGN_IN_EXPIRED");
    expect(err.message).toMatch(/did not re-send this request/);
  });
});

describe("client: a refusal a fresh header would not cure is not re-sent", () => {
  /** An EVM wallet whose key does not sign for its address (as a smart-contract wallet's owner key). */
  class EvmKeyNotForAddress extends EvmWallet {
    readonly #signer = EvmWallet.random();
    override signMessage(message: string): Promise<string> {
      return this.#signer.signMessage(message);
    }
  }
  class SolanaKeyNotForAddress extends SolanaWallet {
    readonly #signer = SolanaWallet.random();
    override signMessage(message: string): Promise<string> {
      return this.#signer.signMessage(message);
    }
  }

  for (const [kind, make] of [
    ["EVM", () => new EvmKeyNotForAddress(Wallet.createRandom().privateKey)],
    ["Solana", () => new SolanaKeyNotForAddress(solanaSecret())],
  ] as const) {
    it(`${kind}: X402_SIGN_IN_INVALID_SIGNATURE after 1 request, saying the key does not sign for the address (EIP-1271 unsupported)`, async () => {
      const emu = await start();
      const w = wire();
      const client = new ServiceClient({ baseUrl: emu.url, wallet: make(), fetch: w.fetch, abuseGuard: false });
      const err = await refusal(client.request("/probe/inference", { body: PROBE }));
      expect(w.sent.map((s) => s.status)).toEqual([401]);
      expect(err.code).toBe("X402_SIGN_IN_INVALID_SIGNATURE");
      expect(err.body).toMatchObject({ code: "X402_SIGN_IN_INVALID_SIGNATURE", details: { reason: "invalid_signature" } });
      expect(err.message).toMatch(/does not sign for/);
      expect(err.message).toMatch(/EIP-1271/);
      expect(err.message).not.toContain(w.sent[0]!.header.slice(0, 40));
    });
  }

  it("X402_SIGN_IN_DOMAIN_MISMATCH (a baseUrl on another host than the service signs for), and the seed's X402_INVALID_SIGN_IN: 1 request each", async () => {
    const behindProxy = await start({ publicOrigin: "https://api.example" });
    const w = wire();
    const client = new ServiceClient({ baseUrl: behindProxy.url, wallet: EvmWallet.random(), fetch: w.fetch, abuseGuard: false });
    const domain = await refusal(client.request("/probe/inference", { body: PROBE }));
    expect(w.sent.map((s) => s.status)).toEqual([401]);
    expect(domain.code).toBe("X402_SIGN_IN_DOMAIN_MISMATCH");
    expect(domain.message).toMatch(/baseUrl's host is not the one the service signs for/);

    // the seed names no cause: a header re-sent on the way is its one code, and not re-sent
    const seed = await start({ mode: "seed" });
    const proxy = replaying();
    const seedClient = new ServiceClient({ baseUrl: seed.url, wallet: EvmWallet.random(), fetch: proxy.fetch, abuseGuard: false });
    await seedClient.request("/probe/inference", { body: PROBE });
    proxy.sent.length = 0;
    proxy.arm(Infinity);
    const old = await refusal(seedClient.request("/probe/inference", { body: PROBE }));
    expect(proxy.sent.map((s) => s.status)).toEqual([401]);
    expect(old.code).toBe("X402_INVALID_SIGN_IN");
    expect(old.message).toBe("401 Invalid Sign-in-with-x signature");
  });
});
