/**
 * Wallets keep their keys to themselves; SIWX headers built by the client verify at the emulator's checker,
 * and every way a header can be wrong is refused with a 401: the live service's code for it (the seed's single
 * `X402_INVALID_SIGN_IN` with `codes: "seed"`) and its own reason. Pure (no server).
 */
import { inspect } from "node:util";
import { Wallet } from "ethers";
import { describe, expect, it } from "vitest";
import { ConfigurationError } from "../../src/http/errors.js";
import { EvmWallet } from "../../src/evm/index.js";
import { SolanaWallet } from "../../src/solana/index.js";
import { createSiwxHeader, createSiwxPayload, createWalletAuth } from "../../src/x402/siwx.js";
import { NonceStore, verifySiwxHeader } from "../../packages/langchain-service-emulator/src/x402/siwx.js";
import { EmulatorHttpError, type EmulatorRequest } from "../../packages/langchain-service-emulator/src/types.js";
import { toBase64Json } from "../../src/x402/encoding.js";

const KEY = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318";
const ORIGIN = "http://127.0.0.1:4567";

function req(url = `${ORIGIN}/api/v1/chat/completions`): EmulatorRequest {
  return {
    method: "POST",
    path: "/chat/completions",
    params: {},
    query: new URLSearchParams(),
    headers: {},
    body: Buffer.alloc(0),
    url: new URL(url),
  };
}

/** `[code, reason]` of a refusal: the live code (the checker's default) and which check failed. */
async function code(promise: Promise<unknown>): Promise<[string, string]> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(EmulatorHttpError);
    expect((err as EmulatorHttpError).status).toBe(401);
    const body = (err as EmulatorHttpError).body as { error: string; code: string; details: { reason: string } };
    expect(body.error).toBe("Invalid Sign-in-with-x signature");
    return [body.code, body.details.reason];
  }
  throw new Error("expected a 401");
}

/** The seed's answer to the same header: its one code, the same reason. */
async function seedCode(header: string, nonces = new NonceStore()): Promise<[string, string]> {
  return code(verifySiwxHeader(header, req(), nonces, Date.now(), "seed"));
}

describe("wallets", () => {
  it("an EVM key never shows up in strings, JSON, inspection or errors", () => {
    const w = new EvmWallet(KEY);
    expect(w.address).toBe(new Wallet(KEY).address);
    for (const text of [String(w), JSON.stringify(w), inspect(w, { showHidden: true, depth: 5 }), JSON.stringify({ nested: w })]) {
      expect(text).not.toContain(KEY.slice(2, 20));
      expect(text).toContain(w.address);
    }
    const bad = `${KEY.slice(0, -1)}z`;
    try {
      new EvmWallet(bad);
      throw new Error("expected a ConfigurationError");
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigurationError);
      expect(String(err) + JSON.stringify(err)).not.toContain(bad.slice(2, 20));
    }
    expect(() => new EvmWallet("0x1234")).toThrow(ConfigurationError);
    expect(() => new EvmWallet({} as never)).toThrow(ConfigurationError);
  });

  it("wraps any ethers Signer", async () => {
    const w = await EvmWallet.fromSigner(new Wallet(KEY));
    expect(w.address).toBe(new Wallet(KEY).address);
  });

  it("a Solana key: bytes, JSON array and base58 give the same address; bad keys are clear errors", () => {
    const w = SolanaWallet.random();
    const secret = Reflect.get(w, "publicKeyBytes") as Uint8Array;
    expect(secret).toHaveLength(32);
    expect(w.address).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    expect(JSON.stringify(w)).toBe(JSON.stringify({ kind: "solana", address: w.address }));
    const tampered = new Uint8Array(64);
    tampered.set(new Uint8Array(32).fill(7));
    expect(() => new SolanaWallet(tampered)).toThrow(/does not match/);
    expect(() => new SolanaWallet(new Uint8Array(10))).toThrow(ConfigurationError);
    expect(() => new SolanaWallet("not-base58-0OIl")).toThrow(ConfigurationError);
  });
});

describe("SIWX round trip at the emulator's checker", () => {
  it("accepts an EVM header for the request's host, and returns the signer", async () => {
    const w = new EvmWallet(KEY);
    const header = await createSiwxHeader(w, `${ORIGIN}/api/v1/chat/completions`);
    const decoded = JSON.parse(Buffer.from(header, "base64").toString()) as Record<string, unknown>;
    expect(decoded).toMatchObject({ address: w.address, chainId: 8453 });
    expect(decoded.message).toContain("127.0.0.1:4567 wants you to sign in with your Ethereum account:");
    expect(decoded.message).toMatch(/Nonce: [0-9a-f]{16}/);
    await expect(verifySiwxHeader(header, req(), new NonceStore(), Date.now())).resolves.toEqual({ address: w.address, chain: "evm" });
  });

  it("accepts a Solana header (ed25519, CAIP-2 chain id)", async () => {
    const w = SolanaWallet.random();
    const header = await createSiwxHeader(w, ORIGIN);
    const decoded = JSON.parse(Buffer.from(header, "base64").toString()) as Record<string, unknown>;
    expect(decoded).toMatchObject({ type: "ed25519", chainId: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" });
    await expect(verifySiwxHeader(header, req(), new NonceStore(), Date.now())).resolves.toEqual({ address: w.address, chain: "solana" });
  });

  it("signs afresh for every attempt (each nonce is single-use)", async () => {
    const auth = createWalletAuth(new EvmWallet(KEY));
    expect(auth.identity).toBe(`wallet:${new EvmWallet(KEY).address}`);
    const a = await auth.headers(ORIGIN, {});
    const b = await auth.headers(ORIGIN, {});
    expect(a["SIGN-IN-WITH-X"]).not.toBe(b["SIGN-IN-WITH-X"]);
    const nonces = new NonceStore();
    await verifySiwxHeader(a["SIGN-IN-WITH-X"]!, req(), nonces, Date.now());
    await verifySiwxHeader(b["SIGN-IN-WITH-X"]!, req(), nonces, Date.now());
  });

  it("refuses a header signed for another domain or URI", async () => {
    const w = new EvmWallet(KEY);
    const otherPort = await createSiwxHeader(w, "http://127.0.0.1:9999/api/v1");
    expect(await code(verifySiwxHeader(otherPort, req(), new NonceStore(), Date.now()))).toEqual([
      "X402_SIGN_IN_DOMAIN_MISMATCH",
      "domain_mismatch",
    ]);
    expect(await seedCode(otherPort)).toEqual(["X402_INVALID_SIGN_IN", "domain_mismatch"]);
    const sol = await createSiwxHeader(SolanaWallet.random(), "http://localhost:4567");
    expect(await code(verifySiwxHeader(sol, req(), new NonceStore(), Date.now()))).toEqual([
      "X402_SIGN_IN_DOMAIN_MISMATCH",
      "domain_mismatch",
    ]);
    // the domain right, the URI on another origin: the same live code, its own reason
    const payload = await createSiwxPayload(w, ORIGIN);
    const otherUri = await w.signMessage(payload.message.replace(`URI: ${ORIGIN}`, "URI: http://127.0.0.1:9999"));
    const uriHeader = toBase64Json({
      ...payload,
      message: payload.message.replace(`URI: ${ORIGIN}`, "URI: http://127.0.0.1:9999"),
      signature: otherUri,
    });
    expect(await code(verifySiwxHeader(uriHeader, req(), new NonceStore(), Date.now()))).toEqual([
      "X402_SIGN_IN_DOMAIN_MISMATCH",
      "uri_mismatch",
    ]);
  });

  it("refuses a stale issuedAt, an expired message, and one from the future", async () => {
    const w = new EvmWallet(KEY);
    const stale = await createSiwxHeader(w, ORIGIN, { now: Date.now() - 6 * 60_000, ttlMs: 60 * 60_000 });
    expect(await code(verifySiwxHeader(stale, req(), new NonceStore(), Date.now()))).toEqual(["X402_SIGN_IN_EXPIRED", "stale"]);
    expect(await seedCode(stale)).toEqual(["X402_INVALID_SIGN_IN", "stale"]);
    const expired = await createSiwxHeader(w, ORIGIN, { now: Date.now() - 60_000, ttlMs: 30_000 });
    expect(await code(verifySiwxHeader(expired, req(), new NonceStore(), Date.now()))).toEqual(["X402_SIGN_IN_EXPIRED", "expired"]);
    // the live guide's own code for an issuedAt ahead of the service's clock
    const future = await createSiwxHeader(w, ORIGIN, { now: Date.now() + 10 * 60_000 });
    expect(await code(verifySiwxHeader(future, req(), new NonceStore(), Date.now()))).toEqual([
      "X402_SIGN_IN_FUTURE_TIMESTAMP",
      "issued_in_future",
    ]);
    expect(await seedCode(future)).toEqual(["X402_INVALID_SIGN_IN", "issued_in_future"]);
  });

  it("refuses a reused nonce", async () => {
    const nonces = new NonceStore();
    const header = await createSiwxHeader(new EvmWallet(KEY), ORIGIN);
    await verifySiwxHeader(header, req(), nonces, Date.now());
    expect(await code(verifySiwxHeader(header, req(), nonces, Date.now()))).toEqual(["X402_SIGN_IN_NONCE_REUSED", "nonce_reused"]);
    expect(await seedCode(header, nonces)).toEqual(["X402_INVALID_SIGN_IN", "nonce_reused"]);
  });

  it("refuses a bad signature and an address that is not the signer's", async () => {
    const w = new EvmWallet(KEY);
    const payload = await createSiwxPayload(w, ORIGIN);
    const forged = { ...payload, signature: await new Wallet(Wallet.createRandom().privateKey).signMessage(payload.message) };
    expect(await code(verifySiwxHeader(toBase64Json(forged), req(), new NonceStore(), Date.now()))).toEqual([
      "X402_SIGN_IN_INVALID_SIGNATURE",
      "invalid_signature",
    ]);
    expect(await seedCode(toBase64Json(forged))).toEqual(["X402_INVALID_SIGN_IN", "invalid_signature"]);
    const claimsOther = { ...payload, address: Wallet.createRandom().address };
    expect(await code(verifySiwxHeader(toBase64Json(claimsOther), req(), new NonceStore(), Date.now()))).toEqual([
      "X402_SIGN_IN_ADDRESS_MISMATCH",
      "address_mismatch",
    ]);
    const sol = await createSiwxPayload(SolanaWallet.random(), ORIGIN);
    const solForged = { ...sol, message: sol.message.replace("Version: 1", "Version: 1\n") };
    expect(await code(verifySiwxHeader(toBase64Json(solForged), req(), new NonceStore(), Date.now()))).toEqual([
      "X402_SIGN_IN_INVALID_SIGNATURE",
      "invalid_signature",
    ]);
    expect(await code(verifySiwxHeader("not base64 json", req(), new NonceStore(), Date.now()))).toEqual([
      "X402_SIGN_IN_PARSE_ERROR",
      "malformed",
    ]);
    expect(await code(verifySiwxHeader(toBase64Json({ address: w.address }), req(), new NonceStore(), Date.now()))).toEqual([
      "X402_SIGN_IN_INVALID_PAYLOAD",
      "malformed",
    ]);
    expect(
      await code(verifySiwxHeader(toBase64Json({ ...payload, message: "not a sign-in message" }), req(), new NonceStore(), Date.now())),
    ).toEqual(["X402_SIGN_IN_INVALID_MESSAGE", "malformed"]);
    expect(await code(verifySiwxHeader(toBase64Json({ ...payload, chainId: 1 }), req(), new NonceStore(), Date.now()))).toEqual([
      "X402_SIGN_IN_UNSUPPORTED_CHAIN",
      "unsupported_chain",
    ]);
    expect(await seedCode("not base64 json")).toEqual(["X402_INVALID_SIGN_IN", "malformed"]);
  });

  it("accepts a URI that is the request URL on the same origin (as the service's own SDK signs)", async () => {
    const w = new EvmWallet(KEY);
    const header = await createSiwxHeader(w, `${ORIGIN}/api/v1/chat/completions?x=1`);
    const payload = JSON.parse(Buffer.from(header, "base64").toString()) as { message: string };
    expect(payload.message).toContain(`URI: ${ORIGIN}`);
    await expect(verifySiwxHeader(header, req(`${ORIGIN}/api/v1/models`), new NonceStore(), Date.now())).resolves.toBeTruthy();
  });
});
