/**
 * A non-stream answer is guarded where it is read (no stream or Response built per request): every way of reading
 * it keeps the bounds (size, idle time), a clone keeps them on both halves, and `body` asked for first (to hand it
 * on or cancel it) still reads.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTransport } from "../../src/http/fetch-stack.js";
import { ResponseTooLargeError, TimeoutError } from "../../src/http/errors.js";

let server: Server;
let base: string;
const BIG = JSON.stringify({ data: "x".repeat(5000) });
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    if (req.url === "/slow") {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"a":'); // then silence
      return;
    }
    res.writeHead(200, {
      "content-type": "application/json",
      ...(req.url === "/chunked" ? {} : { "content-length": Buffer.byteLength(BIG) }),
    });
    if (req.url === "/chunked") {
      res.write(BIG.slice(0, 2000));
      setTimeout(() => res.end(BIG.slice(2000)), 20);
    } else res.end(BIG);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const stack = (options: Parameters<typeof createTransport>[0] = {}) =>
  createTransport({ baseUrl: `${base}/api/v1`, apiKey: "k", retry: false, pacing: false, abuseGuard: false, ...options });

describe("a non-stream answer guarded where it is read", () => {
  it("text, json, arrayBuffer and blob read the whole body, in one chunk or several; a second read is refused", async () => {
    const f = stack();
    expect(await (await f(`${base}/a`)).text()).toBe(BIG);
    expect(await (await f(`${base}/chunked`)).json()).toEqual(JSON.parse(BIG));
    expect(new TextDecoder().decode(await (await f(`${base}/a`)).arrayBuffer())).toBe(BIG);
    expect(await (await (await f(`${base}/chunked`)).blob()).text()).toBe(BIG);
    const once = await f(`${base}/a`);
    expect(once.bodyUsed).toBe(false);
    await once.text();
    expect(once.bodyUsed).toBe(true);
    await expect(once.text()).rejects.toBeInstanceOf(TypeError);
  });

  it("the size cap holds whichever way it is read (declared or counted)", async () => {
    const f = stack({ maxResponseBytes: 1000 });
    await expect((await f(`${base}/a`)).json()).rejects.toBeInstanceOf(ResponseTooLargeError); // content-length says so
    await expect((await f(`${base}/chunked`)).text()).rejects.toBeInstanceOf(ResponseTooLargeError); // counted as it comes
    const streamed = (await f(`${base}/chunked`)).body!.getReader(); // the body asked for as a stream: capped too
    await expect(
      (async () => {
        for (;;) if ((await streamed.read()).done) return;
      })(),
    ).rejects.toBeInstanceOf(ResponseTooLargeError);
  });

  it("silence past idleTimeout is a TimeoutError for text(), as for a stream", async () => {
    const err = await (await stack({ idleTimeout: 150 })(`${base}/slow`)).text().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as Error).message).toContain("idleTimeout");
  });

  it("a clone keeps the guard on both halves; body asked for first still reads", async () => {
    const f = stack({ maxResponseBytes: 1000 });
    const res = await f(`${base}/chunked`);
    const copy = res.clone();
    await expect(res.text()).rejects.toBeInstanceOf(ResponseTooLargeError);
    await expect(copy.text()).rejects.toBeInstanceOf(ResponseTooLargeError);
    const ok = await stack()(`${base}/a`);
    const twin = ok.clone();
    expect(await ok.text()).toBe(BIG);
    expect(await twin.json()).toEqual(JSON.parse(BIG));
    const handed = await stack()(`${base}/chunked`);
    void handed.body; // a layer looked at it (to hand it on, or to cancel it)
    expect(await handed.text()).toBe(BIG);
  });
});
