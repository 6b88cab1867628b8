/**
 * The stack's default base on Node (src/http/base.node.ts, undici's `request()`): a credentialed request answers
 * as fetch would, with a plain `Response`, over a real loopback server; what it does not send itself goes to
 * fetch untouched; a request broken on a dropped kept-alive socket is re-sent once by the retry layer.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { deflateSync, gzipSync } from "node:zlib";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { defaultFetch } from "../../src/http/base.node.js";
import { createTransport } from "../../src/http/fetch-stack.js";

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;
let handler: Handler;
let server: Server;
let base: string;
const connections = new Set<Socket>();
let connectionCount = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => handler(req, res, Buffer.concat(parts).toString()));
  });
  server.on("connection", (s: Socket) => {
    connectionCount++;
    connections.add(s);
    s.on("close", () => connections.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});
afterEach(() => vi.unstubAllGlobals());

const manual = (init: RequestInit = {}): RequestInit => ({ method: "POST", body: "{}", ...init, redirect: "manual" });

const json = JSON.stringify({ ok: true, text: "h\u00e9llo \u{1F600}" });
const cases: Record<string, Handler> = {
  json: (_q, res) => res.writeHead(200, { "content-type": "application/json" }).end(json),
  gzip: (_q, res) => res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" }).end(gzipSync(json)),
  deflate: (_q, res) => res.writeHead(200, { "content-type": "application/json", "content-encoding": "deflate" }).end(deflateSync(json)),
  "no content": (_q, res) => res.writeHead(204).end(),
  "error with body": (_q, res) => res.writeHead(404, "Nope", { "content-type": "application/json" }).end('{"error":"missing"}'),
  "two cookies": (_q, res) =>
    res
      .writeHead(200, [
        ["set-cookie", "a=1"],
        ["set-cookie", "b=2"],
        ["x-two", "1"],
        ["x-two", "2"],
      ])
      .end("ok"),
  "empty 200": (_q, res) => res.writeHead(200, { "content-length": "0" }).end(),
  bom: (_q, res) => res.writeHead(200, { "content-type": "text/plain" }).end("\ufeffhello"),
  chunked: (_q, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    res.write("one ");
    setTimeout(() => res.end("two"), 5);
  },
};

describe("defaultFetch over undici", () => {
  for (const [name, h] of Object.entries(cases)) {
    it(`answers as fetch does: ${name}`, async () => {
      handler = h;
      const ours = await defaultFetch(`${base}/x`, manual());
      const theirs = await fetch(`${base}/x`, manual());
      expect(ours).toBeInstanceOf(Response);
      // a plain Response: no subclass, nothing of its own on the instance but its url
      expect(Object.getPrototypeOf(ours)).toBe(Response.prototype);
      expect(Object.getOwnPropertyNames(ours).filter((k) => k !== "url")).toEqual([]);
      expect([ours.status, ours.statusText, ours.ok, ours.url]).toEqual([theirs.status, theirs.statusText, theirs.ok, theirs.url]);
      expect(ours.headers.getSetCookie()).toEqual(theirs.headers.getSetCookie());
      for (const k of ["content-type", "content-encoding", "x-two"]) expect(ours.headers.get(k)).toBe(theirs.headers.get(k));
      expect(ours.body === null).toBe(theirs.body === null);
      expect(await ours.text()).toBe(await theirs.text());
      expect(ours.bodyUsed).toBe(theirs.bodyUsed);
      if (theirs.body) await expect(ours.text()).rejects.toThrow(TypeError);
    });
  }

  it("sends what fetch sends: its default headers, the body's type and length", async () => {
    let seen: IncomingMessage | undefined;
    let got = "";
    handler = (req, res, body) => ((seen = req), (got = body), res.end("ok"));
    await (await defaultFetch(`${base}/x`, manual({ body: "h\u00e9", headers: { "X-Mine": "1" } }))).text();
    expect(got).toBe("h\u00e9");
    expect(seen!.headers).toMatchObject({
      accept: "*/*",
      "accept-encoding": "gzip, deflate",
      "user-agent": "node",
      "content-type": "text/plain;charset=UTF-8",
      "content-length": "3",
      "x-mine": "1",
    });
    await (
      await defaultFetch(
        `${base}/x`,
        manual({ body: new Uint8Array([1, 2, 3]), headers: new Headers({ "content-type": "application/octet-stream" }) }),
      )
    ).text();
    expect(seen!.headers["content-type"]).toBe("application/octet-stream");
    expect(seen!.headers["content-length"]).toBe("3");
  });

  it("reads a body every way a Response can be read, and clones it into two readable halves", async () => {
    handler = cases.json!;
    expect(await (await defaultFetch(`${base}/x`, manual())).json()).toEqual(JSON.parse(json));
    expect(new TextDecoder().decode(await (await defaultFetch(`${base}/x`, manual())).arrayBuffer())).toBe(json);
    expect(await (await (await defaultFetch(`${base}/x`, manual())).blob()).text()).toBe(json);
    const streamed = await defaultFetch(`${base}/x`, manual());
    expect(await new Response(streamed.body).text()).toBe(json);
    const original = await defaultFetch(`${base}/x`, manual());
    const copy = original.clone();
    expect(await copy.text()).toBe(json);
    expect(await original.text()).toBe(json);
  });

  it("hands over the body alone: its bytes are a copy of the answer's, not a view of the socket's buffer", async () => {
    handler = cases.json!; // head and body arrive in one packet: the body sits inside a larger buffer
    const size = Buffer.byteLength(json);
    expect((await (await defaultFetch(`${base}/x`, manual())).arrayBuffer()).byteLength).toBe(size);
    const stack = createTransport({ apiKey: "k", baseUrl: `${base}/api/v1` });
    expect((await (await stack(`${base}/api/v1/x`, { method: "POST", body: "{}" })).arrayBuffer()).byteLength).toBe(size);
    const reader = (await defaultFetch(`${base}/x`, manual())).body!.getReader();
    const { value } = await reader.read();
    const copy = value!.slice();
    copy[0] = 0;
    expect(value![0]).toBe("{".charCodeAt(0));
    await reader.cancel();
  });

  it("keeps the connection alive between requests", async () => {
    handler = cases.json!;
    await (await defaultFetch(`${base}/x`, manual())).text();
    const before = connectionCount;
    for (let i = 0; i < 5; i++) await (await defaultFetch(`${base}/x`, manual())).text();
    expect(connectionCount).toBe(before);
  });

  it("a request broken on a dropped kept-alive socket is sent once more by the stack; one broken on a fresh socket is not", async () => {
    const stack = createTransport({ apiKey: "k", baseUrl: `${base}/api/v1`, pacing: false, abuseGuard: false });
    handler = cases.json!;
    await (await stack(`${base}/api/v1/x`, { method: "POST", body: "{}" })).text(); // a socket kept alive
    let seen = 0;
    handler = (req, res) => {
      if (seen++ === 0) return void req.socket.destroy(); // the kept-alive socket, closed under the request
      cases.json!(req, res, "");
    };
    expect(await (await stack(`${base}/api/v1/x`, { method: "POST", body: "{}" })).json()).toEqual(JSON.parse(json));
    expect(seen).toBe(2);

    // a fresh connection closed under the request: it may have been read (a paid call is sent at most once)
    server.closeAllConnections();
    await new Promise((r) => setTimeout(r, 20));
    seen = 0;
    handler = (req) => void (seen++, req.socket.destroy());
    await expect(stack(`${base}/api/v1/x`, { method: "POST", body: "{}" })).rejects.toMatchObject({ name: "NetworkError" });
    expect(seen).toBe(1);
  });

  it("fails as fetch fails: a refused connection, an abort before the answer, a connection broken mid-body", async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const refused = await defaultFetch(`http://127.0.0.1:${port}/x`, manual()).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TypeError);
    expect((refused as TypeError).message).toBe("fetch failed");
    expect(((refused as TypeError).cause as { code?: string }).code).toBe("ECONNREFUSED");

    handler = () => undefined; // never answers
    const controller = new AbortController();
    const reason = new Error("caller gave up");
    setTimeout(() => controller.abort(reason), 20);
    await expect(defaultFetch(`${base}/x`, manual({ signal: controller.signal }))).rejects.toBe(reason);

    handler = (req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "1000" });
      res.write('{"partial":');
      setTimeout(() => req.socket.destroy(), 10);
    };
    const broken = await defaultFetch(`${base}/x`, manual());
    await expect(broken.text()).rejects.toBeDefined();

    const midway = new AbortController();
    handler = (_q, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("some");
    };
    const partial = await defaultFetch(`${base}/x`, manual({ signal: midway.signal }));
    const reading = partial.text();
    midway.abort(new Error("stop"));
    await expect(reading).rejects.toBeDefined();
  });

  it("a signal that fires once the answer is in hand (read, or all but its end) raises nothing and spoils no socket", async () => {
    handler = (_q, res) => res.writeHead(200, { "content-type": "text/event-stream" }).end("data: 1\n\n");
    const whole = new AbortController();
    expect(await (await defaultFetch(`${base}/x`, manual({ signal: whole.signal }))).text()).toBe("data: 1\n\n");
    const nearly = new AbortController();
    const reader = (await defaultFetch(`${base}/x`, manual({ signal: nearly.signal }))).body!.getReader();
    expect((await reader.read()).done).toBe(false); // every byte, but not yet its end
    // both fire while the pool's sockets serve the next requests
    const next = defaultFetch(`${base}/x`, manual());
    whole.abort(new Error("late"));
    nearly.abort(new Error("late"));
    expect(await (await next).text()).toBe("data: 1\n\n");
    await expect(reader.read()).rejects.toThrow("late");
    await new Promise((r) => setTimeout(r, 50)); // an error nobody listens to would surface here, failing the run
    expect(await (await defaultFetch(`${base}/x`, manual())).text()).toBe("data: 1\n\n");
  });

  it("leaves to fetch what it does not send itself (followed redirects, FormData), looked up at each call", async () => {
    handler = (req, res) => (req.url === "/from" ? res.writeHead(302, { location: "/to" }).end() : res.end(`at ${req.url}`));
    const followed = await defaultFetch(`${base}/from`, { method: "GET" });
    expect(await followed.text()).toBe("at /to");
    expect(followed.redirected).toBe(true);
    const manualHop = await defaultFetch(`${base}/from`, { method: "GET", redirect: "manual" });
    expect([manualHop.status, manualHop.headers.get("location")]).toEqual([302, "/to"]);

    let contentType = "";
    handler = (req, res) => ((contentType = req.headers["content-type"] ?? ""), res.end("ok"));
    const form = new FormData();
    form.set("a", "1");
    await (await defaultFetch(`${base}/x`, manual({ body: form }))).text();
    expect(contentType).toMatch(/^multipart\/form-data; boundary=/);

    const realFetch = globalThis.fetch;
    const spy = vi.fn((input: string | URL | Request, init?: RequestInit) => realFetch(input, init));
    vi.stubGlobal("fetch", spy);
    await (await defaultFetch(`${base}/x`, { method: "GET" })).text();
    expect(spy).toHaveBeenCalledTimes(1);
  });

  it("a signal that fires after the whole body is read raises nothing, and the next request still works", async () => {
    handler = cases.json!;
    const late = new AbortController();
    expect(await (await defaultFetch(`${base}/x`, manual({ signal: late.signal }))).json()).toEqual(JSON.parse(json));
    late.abort(new Error("late"));
    await new Promise((r) => setTimeout(r, 50)); // an error nobody listens to would surface here, failing the run
    expect(await (await defaultFetch(`${base}/x`, manual())).json()).toEqual(JSON.parse(json));
  });
});

describe("the default stack on the Node base", () => {
  it("sends its own requests over undici's request(), a Request input's too, and a FormData upload through fetch", async () => {
    // fetch marks what it sends with `sec-fetch-mode: cors`; request() sends no such header
    const modes: (string | undefined)[] = [];
    handler = (req, res) => (modes.push(req.headers["sec-fetch-mode"] as string | undefined), res.end("{}"));
    const stack = createTransport({ apiKey: "k", baseUrl: `${base}/api/v1` });
    await (await stack(`${base}/api/v1/chat/completions`, { method: "POST", body: "{}" })).text();
    await (await stack(new Request(`${base}/api/v1/chat/completions`, { method: "POST", body: "{}" }))).text();
    const form = new FormData();
    form.set("file", new Blob(["x"]), "a.txt");
    await (await stack(`${base}/api/v1/audio/transcriptions`, { method: "POST", body: form })).text();
    expect(modes).toEqual([undefined, undefined, "cors"]);
  });

  it("guards the body it reads: size cap and idle timeout, typed", async () => {
    const stack = createTransport({ apiKey: "k", baseUrl: `${base}/api/v1`, maxResponseBytes: 64, idleTimeout: 100, retry: false });
    handler = (_q, res) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ big: "x".repeat(200) }));
    await expect((await stack(`${base}/api/v1/big`, { method: "POST", body: "{}" })).text()).rejects.toMatchObject({
      name: "ResponseTooLargeError",
    });
    handler = (_q, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write("{");
    };
    await expect((await stack(`${base}/api/v1/slow`, { method: "POST", body: "{}" })).json()).rejects.toMatchObject({
      name: "TimeoutError",
    });
  });

  it("sends the credential and reads a stream through the guard", async () => {
    let auth = "";
    handler = (req, res) => {
      auth = req.headers.authorization ?? "";
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: 1\n\n");
      setTimeout(() => res.end("data: [DONE]\n\n"), 5);
    };
    const stack = createTransport({ apiKey: "secret-key", baseUrl: `${base}/api/v1` });
    const response = await stack(`${base}/api/v1/chat/completions`, { method: "POST", body: "{}" });
    expect(await response.text()).toBe("data: 1\n\ndata: [DONE]\n\n");
    expect(auth).toBe("Bearer secret-key");
  });
});
