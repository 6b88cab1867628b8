/**
 * Fidelity: wallet sign-in (SIWX) as strict as the published contract, on the wire, and the client's clock.
 *
 * Emulator: a sign-in whose `issuedAt` is more than 30 s ahead is refused (live; 5 s in seed mode); the domain is
 * checked against the service's own hosts, the emulator's public origin among them (an option, default its loopback
 * origin), never the request line (siwx-live.test.ts has the live rule's details); a
 * refused sign-in proves no identity, so it counts toward the abuse block of its sender's address, not of the
 * wallet it names; a refusal is a 401 with the live service's code for its cause (`X402_SIGN_IN_…`; the seed's
 * single `X402_INVALID_SIGN_IN` in `mode: "seed"`: siwx-codes.test.ts has each cause); `Date` follows the emulator's
 * clock. Client: `issuedAt` comes from a clock corrected by the service's `Date`, and a sign-in refused while
 * `Date` shows the clock was off is signed again once.
 */
import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { ABUSE_BLOCK_MESSAGE, startEmulator, type Emulator } from "langchain-service-emulator";
import { ServiceClient } from "../../src/client.js";
import { AuthenticationError, ConfigurationError } from "../../src/http/errors.js";
import type { FetchLike } from "../../src/http/fetch-stack.js";
import { toBase64Json } from "../../src/x402/encoding.js";
import { createSiwxHeader } from "../../src/x402/siwx.js";
import type { X402Wallet } from "../../src/x402/wallets.js";
import { EvmWallet } from "../../src/evm/index.js";
import { SolanaWallet } from "../../src/solana/index.js";
import { json } from "../chat/fixture-server.js";
import { probeRoute } from "../emulator/helpers.js";
import { startHostile, type HostileServer } from "../hostile/server.js";

// throwaway local keys (ganache's deterministic accounts 1 and 2), never real ones
const victim = new EvmWallet("0x6cbed15c793ce57650b9877cf6fa156fbef513c4e6134f022a85b1ffdd59b2a1");
const other = new EvmWallet("0x6370fd033278c143179d81c5526140625662b8daa446c22ee2d73db3707e620c");
/** the seed's answer to every refused sign-in */
const SEED_401 = { error: "Invalid Sign-in-with-x signature", code: "X402_INVALID_SIGN_IN" };
/** the live service's (the emulator's default mode): the code names the check that failed */
const live401 = (code: string) => ({ error: SEED_401.error, code: `X402_SIGN_IN_${code}` });
const PROBE = { model: "emu-s", usd: 0.001 };

let emu: Emulator | undefined;
let hostile: HostileServer | undefined;
afterEach(async () => {
  await emu?.close();
  await hostile?.close();
  emu = undefined;
  hostile = undefined;
});

function start(options: Parameters<typeof startEmulator>[0] = {}): Promise<Emulator> {
  return startEmulator({ routes: [probeRoute], walletStartingUsd: 1, x402: { solana: false }, ...options });
}

function probe(e: Emulator, header: string | undefined, body: unknown = PROBE): Promise<Response> {
  return fetch(`${e.url}/probe/inference`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(header ? { "sign-in-with-x": header } : {}) },
    body: JSON.stringify(body),
  });
}

async function signed(wallet: X402Wallet, e: Emulator, options: { now?: number } = {}): Promise<string> {
  return createSiwxHeader(wallet, `${e.url}/probe/inference`, options);
}

/** A request with any request-target (absolute-form, `//host/...`): what fetch never sends. */
function rawPost(port: number, target: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; body: any }> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: target,
        headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(payload)), ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8") || "null") }));
        res.on("error", reject);
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error("no answer within 10 s")));
    req.on("error", reject);
    req.end(payload);
  });
}

/** `fetch` that records each status it sees on the wire. */
function recording(statuses: number[]): FetchLike {
  return async (input, init) => {
    const res = await globalThis.fetch(input, init);
    statuses.push(res.status);
    return res;
  };
}

describe("emulator: SIWX issuedAt and the emulator's clock", () => {
  it("refuses an issuedAt 40 s or 60 s ahead with the live 401 X402_SIGN_IN_FUTURE_TIMESTAMP, accepts one signed now", async () => {
    emu = await start();
    for (const ahead of [40_000, 60_000]) {
      const res = await probe(emu, await signed(victim, emu, { now: Date.now() + ahead }));
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ ...live401("FUTURE_TIMESTAMP"), details: { reason: "issued_in_future" } });
    }
    expect((await probe(emu, await signed(victim, emu))).status).toBe(200);
  });

  it("the Date header is the emulator's clock (ctx.now), so a test can run it behind the client", async () => {
    emu = await start({ now: () => Date.now() - 45_000 });
    const res = await fetch(`${emu.url}/models`);
    const skew = Date.parse(res.headers.get("date")!) - Date.now();
    expect(skew).toBeGreaterThan(-47_000);
    expect(skew).toBeLessThan(-43_000);
    // and its SIWX check uses the same clock: a header signed by a machine clock 45 s ahead is refused
    expect((await probe(emu, await signed(victim, emu))).status).toBe(401);
  });
});

describe("emulator: SIWX domain and uri against the public origin, never the request line", () => {
  it("a sign-in made for evil.example is refused even when the request line names evil.example", async () => {
    emu = await start();
    const evil = await createSiwxHeader(victim, "http://evil.example/api/v1/probe/inference");
    for (const target of ["http://evil.example/api/v1/probe/inference", "//evil.example/api/v1/probe/inference"]) {
      const res = await rawPost(emu.port, target, { host: "evil.example", "sign-in-with-x": evil }, PROBE);
      expect(res.status, target).toBe(401);
      expect(res.body).toMatchObject({ ...live401("DOMAIN_MISMATCH"), details: { reason: "domain_mismatch" } });
    }
    // the absolute form itself is fine when it names the emulator
    const own = await signed(victim, emu);
    expect((await rawPost(emu.port, `${emu.url}/probe/inference`, { "sign-in-with-x": own }, PROBE)).status).toBe(200);
  });

  it("with publicOrigin set (behind a proxy), sign-ins are for that origin, and the challenge names it", async () => {
    emu = await start({ publicOrigin: "https://api.example" });
    const forPublic = await createSiwxHeader(victim, "https://api.example/api/v1/probe/inference");
    expect((await probe(emu, forPublic)).status).toBe(200);
    const forLoopback = await probe(emu, await signed(victim, emu));
    expect(forLoopback.status).toBe(401);
    expect(await forLoopback.json()).toMatchObject({ ...live401("DOMAIN_MISMATCH"), details: { reason: "domain_mismatch" } });
    // a uri on another origin, with the right domain: the live service does not check the uri
    const otherUri = await createSiwxHeader(victim, "http://api.example/api/v1");
    expect((await probe(emu, otherUri)).status).toBe(200);
    // the discovery 402's challenge names the public origin
    const discovery = await probe(emu, undefined);
    expect(discovery.status).toBe(402);
    const info = ((await discovery.json()) as { extensions: Record<string, { info: { domain: string; uri: string } }> }).extensions[
      "sign-in-with-x"
    ]!.info;
    expect(info).toMatchObject({ domain: "api.example", uri: "https://api.example" });
  });

  it("a publicOrigin that is not an http(s) origin is a ConfigurationError before anything listens", async () => {
    for (const bad of [
      "api.example",
      "ftp://api.example",
      "https://api.example/v1",
      "https://api.example?x=1",
      "https://user@api.example",
    ]) {
      await expect(start({ publicOrigin: bad }), bad).rejects.toBeInstanceOf(ConfigurationError);
    }
  });
});

// the seed's abuse rule (more than 20 non-success answers in 30 s, an unknown model a 400): the live one counts
// non-429 4xx up to 50, and whom a failure counts against is the same in both
describe("emulator: refused sign-ins count toward the block of their sender, not of the wallet they name", () => {
  it("21 junk headers claiming the victim's address block their sender's address, never the victim", async () => {
    emu = await start({ mode: "seed" });
    const junk = toBase64Json({ address: victim.address, message: "junk", signature: "0x00", timestamp: Date.now(), chainId: 8453 });
    for (let i = 0; i < 21; i++) {
      const res = await probe(emu, junk);
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject(SEED_401);
    }
    // the victim signs in and is served
    const served = await probe(emu, await signed(victim, emu));
    expect(served.status, await served.clone().text()).toBe(200);
    // the junk's sender is blocked (spec part 7), by its address
    const blocked = await probe(emu, junk);
    expect(blocked.status).toBe(429);
    expect(await blocked.json()).toEqual({ error: ABUSE_BLOCK_MESSAGE });
    expect((await fetch(`${emu.url}/models`)).status).toBe(429);
    // still the victim is not
    expect((await probe(emu, await signed(victim, emu))).status).toBe(200);
  });

  it("a captured header replayed 21 times does not block the wallet that signed it", async () => {
    emu = await start({ mode: "seed" });
    const captured = await signed(victim, emu);
    expect((await probe(emu, captured)).status).toBe(200);
    for (let i = 0; i < 21; i++) {
      const res = await probe(emu, captured);
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ ...SEED_401, details: { reason: "nonce_reused" } });
    }
    expect((await probe(emu, await signed(victim, emu))).status).toBe(200);
  });

  it("failures of a verified wallet still count against that wallet", async () => {
    emu = await start({ mode: "seed" });
    for (let i = 0; i < 21; i++) expect((await probe(emu, await signed(other, emu), { model: "no-such-model" })).status).toBe(400);
    const res = await probe(emu, await signed(other, emu));
    expect(res.status).toBe(429);
    expect(await res.json()).toEqual({ error: ABUSE_BLOCK_MESSAGE });
    expect((await probe(emu, await signed(victim, emu))).status).toBe(200);
  });
});

describe("client: issuedAt from a clock corrected by the service's Date", () => {
  for (const [kind, make] of [
    ["EVM", () => victim],
    ["Solana", () => SolanaWallet.random()],
  ] as const) {
    it(`${kind}: a client clock 30 s ahead gets the user's call through with at most one 401 on the wire`, async () => {
      emu = await start({ now: () => Date.now() - 30_000 });
      const statuses: number[] = [];
      const client = new ServiceClient({ baseUrl: emu.url, wallet: make(), fetch: recording(statuses), abuseGuard: false });
      const first = await client.request<{ caller: string }>("/probe/inference", { body: PROBE });
      expect(first.data.caller).toBe("wallet");
      expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(1);
      // learned: the next calls are signed right the first time
      statuses.length = 0;
      for (let i = 0; i < 3; i++) await client.request("/probe/inference", { body: PROBE });
      expect(statuses).toEqual([200, 200, 200]);
    });
  }

  it("a refused sign-in whose Date agrees with the clock is not re-sent", async () => {
    emu = await start({ publicOrigin: "https://api.example" });
    const statuses: number[] = [];
    const client = new ServiceClient({ baseUrl: emu.url, wallet: victim, fetch: recording(statuses), abuseGuard: false });
    await expect(client.request("/probe/inference", { body: PROBE })).rejects.toBeInstanceOf(AuthenticationError);
    expect(statuses).toEqual([401]);
  });

  it("a hostile Date re-signs at most once per call, and a Date more than a day off is ignored", async () => {
    let n = 0;
    hostile = await startHostile((_req, res) => {
      // a service whose Date swings an hour either way on every answer
      const date = new Date(Date.now() + (n++ % 2 === 0 ? 3_600_000 : -3_600_000)).toUTCString();
      json(res, { error: "Authentication failed" }, { date }, 401);
    });
    const client = new ServiceClient({ baseUrl: hostile.url, wallet: other, abuseGuard: false, retry: false });
    await expect(client.request("/models")).rejects.toBeInstanceOf(AuthenticationError);
    expect(hostile.requests).toHaveLength(2);
    // the re-signed attempt used the service's (claimed) clock: issuedAt an hour ahead, within the day cap
    const issued = hostile.requests.map((r) => {
      const msg = JSON.parse(Buffer.from(String(r.headers["sign-in-with-x"]), "base64").toString()).message as string;
      return Date.parse(/Issued At: (\S+)/.exec(msg)![1]!) - Date.now();
    });
    expect(Math.abs(issued[0]!)).toBeLessThan(5_000);
    expect(issued[1]!).toBeGreaterThan(3_590_000);

    hostile.requests.length = 0;
    hostile.script = (_req, res) =>
      json(res, { error: "Authentication failed" }, { date: new Date(Date.now() + 3 * 86_400_000).toUTCString() }, 401);
    await expect(client.request("/models")).rejects.toBeInstanceOf(AuthenticationError);
    expect(hostile.requests).toHaveLength(1);
  });
});
