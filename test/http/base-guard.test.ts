/**
 * The Node base builds a guarded body itself when the body-limits layer offers its bounds (one stream per answer
 * instead of undici's web stream wrapped in the guard's): given the bounds, the base alone enforces them, with the
 * same typed errors; an encoded answer (decoded by a stream of its own) is left to the layer; and through the
 * whole stack the bounds hold either way, a custom `fetch` seeing no extra enumerable member on its init.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultFetch } from "../../src/http/base.node.js";
import { BODY_GUARD, type BodyGuardOptions } from "../../src/http/body-guard.js";
import { createServiceFetch } from "../../src/stack.js";
import { ResponseTooLargeError, TimeoutError } from "../../src/http/errors.js";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let handler: Handler;
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => handler(req, res));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

/** Sends the headers and half a JSON body, then nothing. */
const stalls: Handler = (_q, res) => {
  res.writeHead(200, { "content-type": "application/json" });
  res.write('{"half":');
};
/** A JSON body of `n` bytes in chunks, no content-length. */
const big =
  (n: number): Handler =>
  (_q, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    const piece = "x".repeat(16 * 1024);
    for (let sent = 0; sent < n; sent += piece.length) res.write(piece);
    res.end();
  };

/** The base called as the body-limits layer calls it: the bounds on a member that is not enumerable. */
function sendGuarded(guard: Partial<BodyGuardOptions>, url = `${base}/x`): { response: Promise<Response>; aborted: unknown[] } {
  const controller = new AbortController();
  const aborted: unknown[] = [];
  const init: RequestInit = { method: "POST", body: "{}", redirect: "manual", signal: controller.signal };
  Object.defineProperty(init, BODY_GUARD, {
    value: {
      idleMs: 60_000,
      maxBytes: 64 * 1024 * 1024,
      abort: (reason: unknown) => {
        aborted.push(reason);
        controller.abort(reason);
      },
      ...guard,
    },
  });
  return { response: defaultFetch(url, init), aborted };
}

/** The read's outcome, or "still reading" after `ms` (a base that does not guard never ends a stalled body). */
async function settle(read: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const still = new Promise((r) => (timer = setTimeout(() => r("still reading"), ms)));
  try {
    return await Promise.race([
      read.then(
        () => "read",
        (err: unknown) => err,
      ),
      still,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe("the Node base given the layer's bounds", () => {
  it("ends a stalled body with the idle TimeoutError by itself, and drops the request", async () => {
    handler = stalls;
    const { response, aborted } = sendGuarded({ idleMs: 150 });
    const res = await response;
    const outcome = await settle(res.text(), 3_000);
    expect(outcome).toBeInstanceOf(TimeoutError);
    expect(String((outcome as Error).message)).toContain("idleTimeout");
    expect(aborted).toHaveLength(1);
  });

  it("refuses a JSON body over maxBytes with ResponseTooLargeError by itself", async () => {
    handler = big(256 * 1024);
    const { response } = sendGuarded({ maxBytes: 64 * 1024 });
    const res = await response;
    const outcome = await settle(res.text(), 3_000);
    expect(outcome).toBeInstanceOf(ResponseTooLargeError);
  });

  it("reads an answer within the bounds whole, its bytes unchanged", async () => {
    const text = JSON.stringify({ ok: true, text: "h\u00e9llo \u{1F600}".repeat(5000) });
    handler = (_q, res) => res.writeHead(200, { "content-type": "application/json" }).end(text);
    const res = await sendGuarded({ idleMs: 2_000 }).response;
    expect(res.status).toBe(200);
    expect(res.url).toBe(`${base}/x`);
    expect(await res.text()).toBe(text);
  });

  it("leaves an encoded answer to the layer (it is decoded by a stream of its own)", async () => {
    handler = (_q, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
      res.write(gzipSync('{"a":1}').subarray(0, 10)); // part of it, then nothing
    };
    const res = await sendGuarded({ idleMs: 100 }).response;
    // the base did not bound it: the read is still waiting well after the idle bound
    expect(await settle(res.text(), 600)).toBe("still reading");
    res.body?.cancel().catch(() => undefined);
  });
});

describe("through the stack", () => {
  it("a stalled body ends with the idle TimeoutError, on the default base and on a custom fetch", async () => {
    handler = stalls;
    const seen: string[][] = [];
    const custom = (input: string | URL | Request, init?: RequestInit) => {
      const own = init ?? {};
      // what a copy of it (`{ ...init }`) or a deep equality sees: the enumerable members
      seen.push(
        Reflect.ownKeys(own)
          .filter((k) => Object.prototype.propertyIsEnumerable.call(own, k))
          .map(String),
      );
      return fetch(input, init);
    };
    for (const fetchOption of [undefined, custom]) {
      const stack = createServiceFetch({ apiKey: "k", baseUrl: base, idleTimeout: 150, retry: false, fetch: fetchOption });
      const res = await stack(`${base}/chat/completions`, { method: "POST", body: "{}" });
      const outcome = await settle(res.text(), 3_000);
      expect(outcome).toBeInstanceOf(TimeoutError);
    }
    // what a custom fetch is given: fetch's own members, nothing of the stack's
    expect(seen).toHaveLength(1);
    expect(seen[0]!.some((k) => k.includes("Symbol"))).toBe(false);
  });
});
