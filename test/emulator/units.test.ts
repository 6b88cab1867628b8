/** Pure parts of the server: route matching, the missing-module test behind the x402 fallback, auth helpers. */
import { describe, expect, it } from "vitest";
import { bearerToken, claimedIdentity, publicAccountId } from "../../packages/langchain-service-emulator/src/auth.js";
import { Ledger } from "../../packages/langchain-service-emulator/src/ledger.js";
import { matchRoute } from "../../packages/langchain-service-emulator/src/server.js";
import type { EmulatorRequest, Route } from "../../packages/langchain-service-emulator/src/types.js";
import { EmulatorHttpError } from "../../packages/langchain-service-emulator/src/types.js";
import { createDefaultX402Hooks, isMissingModule } from "../../packages/langchain-service-emulator/src/x402-default.js";
import { brandNames } from "../../src/config.js";

const handler = () => ({ status: 200 });
const routes: Route[] = [
  { method: "GET", pattern: "/x402/balance/:wallet", auth: "required", handler },
  { method: "POST", pattern: "/crypto/rpc/:network", auth: "required", handler },
  { method: "GET", pattern: "/crypto/rpc/networks", auth: "public", handler },
];

describe("matchRoute", () => {
  it("captures and decodes :params", () => {
    const m = matchRoute(routes, "GET", "/x402/balance/0xAbC%20");
    expect(m && "route" in m && m.params).toEqual({ wallet: "0xAbC " });
  });
  it("prefers the route of the right method; other methods give `allowed`", () => {
    const m = matchRoute(routes, "GET", "/crypto/rpc/networks");
    expect(m && "route" in m && m.route.auth).toBe("public");
    expect(matchRoute(routes, "PUT", "/crypto/rpc/base-mainnet")).toEqual({ allowed: ["POST"] });
  });
  it("no match for other shapes", () => {
    expect(matchRoute(routes, "GET", "/x402/balance")).toBeUndefined();
    expect(matchRoute(routes, "GET", "/x402/balance/a/b")).toBeUndefined();
  });
});

describe("isMissingModule", () => {
  const err = (message: string, code = "ERR_MODULE_NOT_FOUND") => Object.assign(new Error(message), { code });
  it("is true only when the module itself is missing", () => {
    expect(
      isMissingModule(
        err("Cannot find module '/work/src/emulator/x402/index.js' imported from /work/src/emulator/x402-default.ts"),
        "x402",
      ),
    ).toBe(true);
    expect(isMissingModule(err("Cannot find module 'C:\\w\\emulator\\x402\\index.ts' imported from C:\\w\\x.ts"), "x402")).toBe(true);
    // one of its own imports is missing: that is a real error, not "no x402 module"
    expect(isMissingModule(err("Cannot find package '@x402/zz' imported from /work/src/emulator/x402/index.ts"), "x402")).toBe(false);
    expect(isMissingModule(err("Cannot find module '/work/src/emulator/x402zz/index.js' imported from /a.ts"), "x402")).toBe(false);
    expect(isMissingModule(err("Cannot find module '/w/x402/index.js'", "ERR_OTHER"), "x402")).toBe(false);
    expect(isMissingModule(undefined, "x402")).toBe(false);
  });
});

describe("auth helpers", () => {
  const req = (headers: Record<string, string>): EmulatorRequest => ({
    method: "GET",
    path: "/models",
    params: {},
    query: new URLSearchParams(),
    headers,
    body: Buffer.alloc(0),
    url: new URL("http://127.0.0.1/api/v1/models"),
    remoteAddress: "127.0.0.1",
  });
  it("bearerToken: token, malformed, absent", () => {
    expect(bearerToken({ authorization: "Bearer abc" })).toBe("abc");
    expect(bearerToken({ authorization: "bearer   abc " })).toBe("abc");
    expect(bearerToken({ authorization: "Basic abc" })).toBe("");
    expect(bearerToken({})).toBeUndefined();
  });
  it("claimedIdentity: known key, SIWX address, else the peer address", () => {
    const ledger = new Ledger();
    ledger.addApiKey("k1");
    expect(claimedIdentity(req({ authorization: "Bearer k1" }), ledger)).toBe("key:k1");
    expect(claimedIdentity(req({ authorization: "Bearer unknown" }), ledger)).toBe("ip:127.0.0.1");
    const siwx = Buffer.from(JSON.stringify({ address: "0xABCdef" })).toString("base64");
    expect(claimedIdentity(req({ "sign-in-with-x": siwx }), ledger)).toBe("wallet:0xabcdef");
    expect(claimedIdentity(req({ "x-sign-in-with-x": "!!notbase64json" }), ledger)).toBe("ip:127.0.0.1");
  });
  it("publicAccountId never reveals the key", () => {
    const account = new Ledger().addApiKey("super-secret-key");
    const id = publicAccountId(account);
    expect(id).toMatch(/^key_[0-9a-f]{16}$/);
    expect(id).not.toContain("secret");
  });
});

describe("default x402 hooks (no wallet module)", () => {
  const hooks = createDefaultX402Hooks();
  const ctx = { names: brandNames("service") } as Parameters<typeof hooks.discovery402>[1];
  const req = { url: new URL("http://127.0.0.1:1/api/v1/chat/completions") } as EmulatorRequest;
  it("refuses wallet sign-in with 401", async () => {
    await expect(hooks.verifySiwx("x", req, ctx)).rejects.toMatchObject({ status: 401 });
    await expect(hooks.verifySiwx("x", req, ctx)).rejects.toBeInstanceOf(EmulatorHttpError);
  });
  it("discovery 402: published shape, no payee offered, requirements in PAYMENT-REQUIRED", () => {
    const res = hooks.discovery402(req, ctx);
    expect(res.status).toBe(402);
    expect(res.body).toMatchObject({ x402Version: 2, accepts: [], resource: { url: req.url.toString(), mimeType: "application/json" } });
    const header = JSON.parse(Buffer.from(res.headers!["PAYMENT-REQUIRED"]!, "base64").toString("utf8"));
    expect(header).toMatchObject({ x402Version: 2, accepts: [] });
  });
  it("insufficient credit: variant 3 with code PAYMENT_REQUIRED", () => {
    const account = new Ledger().wallet("0xabc", 0.05);
    const res = hooks.insufficientCredit402(req, ctx, account);
    expect(res).toMatchObject({ status: 402, body: { error: "Payment required", code: "PAYMENT_REQUIRED", currentBalanceUsd: 0.05 } });
    expect(hooks.minimumBalanceUsd).toBe(0.1);
  });
});
