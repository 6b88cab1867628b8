/**
 * One module per layer (src/http/layers/): each checks and reads its own options, once, and only its own; a layer
 * that is off is left out of the list. The sign-in, redirects and body-limits layers, composed alone over a
 * scripted loopback server, do what the transport did in one closure.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigurationError, RedirectError, TimeoutError } from "../../src/http/errors.js";
import type { LayerContext } from "../../src/http/layers/context.js";
import { errors } from "../../src/http/layers/errors.js";
import { deadline } from "../../src/http/layers/deadline.js";
import { retry } from "../../src/http/layers/retry.js";
import { concurrency } from "../../src/http/layers/concurrency.js";
import { pacing } from "../../src/http/layers/pacing.js";
import { abuseGuard } from "../../src/http/layers/abuse-guard.js";
import { ApiKeyAuth, signIn } from "../../src/http/layers/sign-in.js";
import { redirects } from "../../src/http/layers/redirects.js";
import { bodyLimits } from "../../src/http/layers/body-limits.js";
import { base } from "../../src/http/layers/base.js";
import { checkTopUpOptions } from "../../src/x402/top-up-options.js";
import type { FetchLayer, FetchLike } from "../../src/http/types.js";
import { createServiceContext } from "../../src/http/context.js";

const ctx: LayerContext = {
  baseUrl: "http://127.0.0.1:1/api/v1",
  origin: "http://127.0.0.1:1",
  brand: "service",
  auth: new ApiKeyAuth("sk-layers-test"),
  identity: "key:layers-test",
  limitStore: undefined,
  service: createServiceContext(),
};

const refused = (build: () => unknown, message: RegExp) =>
  expect(build).toThrow(expect.objectContaining({ name: "ConfigurationError", message: expect.stringMatching(message) }));

describe("each layer checks its own options, once", () => {
  it("errors: maxRequestBytes", () => {
    refused(() => errors({ maxRequestBytes: 0 }, ctx), /^maxRequestBytes must be a positive whole number of bytes \(got 0\)/);
    expect(errors({ maxRequestBytes: Infinity }, ctx).maxRequestBytes).toBe(Infinity);
    expect(errors({}, ctx).maxRequestBytes).toBe(35 * 1024 * 1024);
  });

  it("deadline: totalTimeout", () => {
    refused(() => deadline({ totalTimeout: -5 }), /^totalTimeout must be a positive number of ms/);
    expect(deadline({ totalTimeout: 900 }).totalTimeout).toBe(900);
  });

  it("retry: its members, and off when false", () => {
    refused(() => retry({ retry: { maxRetries: 1.5 } }, ctx), /^retry\.maxRetries must be a non-negative integer \(got 1\.5\)/);
    refused(() => retry({ retry: "often" as never }, ctx), /^retry must be false or an object of options/);
    expect(retry({ retry: false }, ctx)).toBeUndefined();
    expect(typeof retry({}, ctx)).toBe("function");
  });

  it("concurrency: its members; off when false or without credentials", () => {
    refused(() => concurrency({ concurrency: { perWallet: 0 } }, ctx), /^concurrency\.perWallet must be a positive integer \(got 0\)/);
    expect(concurrency({ concurrency: false }, ctx)).toBeUndefined();
    expect(concurrency({}, { ...ctx, auth: undefined })).toBeUndefined();
  });

  it("pacing: its members (type and route limits); a custom layer replaces it", () => {
    refused(() => pacing({ pacing: { typeLimits: { imgae: 3 } as never } }, ctx), /^pacing\.typeLimits has an unknown model type "imgae"/);
    refused(() => pacing({ pacing: { typeWindowMs: 0 } }, ctx), /^pacing\.typeWindowMs must be a positive number of ms/);
    const own: FetchLayer = (next) => next;
    expect(pacing({ pacingLayer: own }, ctx)).toBe(own);
    expect(pacing({ pacing: false }, ctx)).toBeUndefined();
  });

  it("abuse guard: its limits (checked by AbuseGuard); off when false", () => {
    refused(
      () => abuseGuard({ abuseGuard: { maxFailures: 0 } }, { ...ctx, identity: "key:fresh-guard" }),
      /abuseGuard\.maxFailures must be a positive integer/,
    );
    expect(abuseGuard({ abuseGuard: false }, ctx)).toBeUndefined();
  });

  it("sign-in: defaultHeaders, the name only in the error (a value may be a secret)", () => {
    let thrown: unknown;
    try {
      signIn({ defaultHeaders: { "x-token": "secret\r\nvalue" } }, ctx);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ConfigurationError);
    expect((thrown as Error).message).toContain('defaultHeaders["x-token"]');
    expect((thrown as Error).message).not.toContain("secret");
  });

  it("body limits: timeout, idleTimeout, maxResponseBytes, maxEventBytes", () => {
    refused(() => bodyLimits({ timeout: Infinity }), /^timeout must be a positive number of ms, at most 2147483647/);
    refused(() => bodyLimits({ idleTimeout: 0 }), /^idleTimeout must be a positive number of ms/);
    refused(() => bodyLimits({ maxResponseBytes: 1.5 }), /^maxResponseBytes must be a positive whole number of bytes/);
    refused(() => bodyLimits({ maxEventBytes: "1" as never }), /^maxEventBytes must be a positive whole number of bytes \(got "1"\)/);
    expect(bodyLimits({ timeout: 5_000 }).limits).toMatchObject({ timeout: 5_000, idleTimeout: 0 });
  });

  it("base: fetch", () => {
    refused(() => base({ fetch: "fetch" as never }), /^fetch must be a function \(got "fetch"\)/);
  });

  it("payment (x402): topUp, checked when the stack is built", () => {
    refused(() => checkTopUpOptions({ maxResends: -1 }), /^topUp\.maxResends must be a non-negative integer/);
    refused(() => checkTopUpOptions(false), /^topUp must be an object of options/);
  });

  it("a layer reads only its own options: another layer's bad option is not its concern", () => {
    const others = {
      retry: "x",
      pacing: "x",
      concurrency: "x",
      timeout: -1,
      totalTimeout: -1,
      maxRequestBytes: -1,
      defaultHeaders: 1,
      fetch: 1,
    } as never;
    expect(() => errors({ ...(others as object), maxRequestBytes: undefined }, ctx)).not.toThrow();
    expect(() => deadline({ ...(others as object), totalTimeout: undefined })).not.toThrow();
    expect(() => retry({ ...(others as object), retry: undefined }, ctx)).not.toThrow();
    expect(() => pacing({ ...(others as object), pacing: undefined }, ctx)).not.toThrow();
    expect(() => signIn({ ...(others as object), defaultHeaders: undefined }, ctx)).not.toThrow();
    expect(() => base({ ...(others as object), fetch: undefined })).not.toThrow();
  });
});

describe("sign-in -> redirects -> body limits -> base, over loopback", () => {
  let server: Server;
  let origin: string;
  const seen: { path: string; authorization?: string; extra?: string }[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push({ path: req.url!, authorization: req.headers.authorization, extra: req.headers["x-extra"] as string | undefined });
      if (req.url === "/hop") return void res.writeHead(307, { location: "/end" }).end();
      if (req.url === "/away") return void res.writeHead(307, { location: "http://localhost:9/elsewhere" }).end();
      if (req.url === "/slow") return void setTimeout(() => res.writeHead(200).end("late"), 400);
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const compose = (layers: FetchLayer[]): FetchLike => layers.reduceRight<FetchLike>((next, layer) => layer(next), fetch);

  it("signs each hop of a same-origin redirect, with the default headers; refuses another origin", async () => {
    const c = { auth: new ApiKeyAuth("sk-hop"), origin, service: createServiceContext() };
    const f = compose([signIn({ defaultHeaders: { "x-extra": "1" } }, c), redirects(c), bodyLimits({ timeout: 5_000 })]);
    seen.length = 0;
    const res = await f(`${origin}/hop`);
    expect(await res.text()).toBe("ok");
    expect(seen).toEqual([
      { path: "/hop", authorization: "Bearer sk-hop", extra: "1" },
      { path: "/end", authorization: "Bearer sk-hop", extra: "1" },
    ]);
    await expect(f(`${origin}/away`)).rejects.toBeInstanceOf(RedirectError);
  });

  it("a request elsewhere goes without credentials", async () => {
    const c = { auth: new ApiKeyAuth("sk-hop"), origin: "http://127.0.0.1:1", service: createServiceContext() };
    const f = compose([signIn({}, c), redirects(c), bodyLimits({})]);
    seen.length = 0;
    await (await f(`${origin}/plain`)).text();
    expect(seen).toEqual([{ path: "/plain", authorization: undefined, extra: undefined }]);
  });

  it("body limits: the per-attempt timeout (a request's own hint first) ends in a TimeoutError", async () => {
    const f = compose([bodyLimits({ timeout: 5_000 })]);
    await expect(f(`${origin}/slow`, { service: { timeout: 100 } })).rejects.toBeInstanceOf(TimeoutError);
  });
});
