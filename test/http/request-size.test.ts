/**
 * The service refuses a JSON body over 35 MB with `413 PAYLOAD_TOO_LARGE` (its errors guide). The stack refuses
 * such a body before sending: a `PayloadTooLargeError`, nothing on the wire, nothing reserved or paid; a body at
 * the limit goes. With the check off (`maxRequestBytes: Infinity`) the emulator's own 413 is the same typed error,
 * with status 413. Over loopback to the emulator (live mode); the 35 MB strings are built once and shared.
 */
import { HumanMessage } from "@langchain/core/messages";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChatService, PayloadTooLargeError, ServiceClient, ServiceEmbeddings, createServiceFetch } from "../../src/index.js";
import { DEFAULT_MAX_REQUEST_BYTES } from "../../src/http/request-size.js";
import { countUtf8 } from "../../src/http/request-size.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { EvmWallet } from "../../src/evm/index.js";
import { probeRoute } from "../emulator/helpers.js";

const LIMIT = DEFAULT_MAX_REQUEST_BYTES;
let emu: Emulator;
/** LIMIT bytes of ASCII: every large body below is a slice of it, or it plus a little */
let big: string;

beforeAll(async () => {
  emu = await startEmulator({ apiKeys: ["k"], routes: [probeRoute], walletStartingUsd: 0 });
  big = "A".repeat(LIMIT);
});
afterAll(() => emu?.close());

/** A `fetch` option that counts what reaches the wire, by method and path. */
function wire() {
  const sent: string[] = [];
  const fetch = (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    sent.push(`${init?.method ?? "GET"} ${url.pathname.replace(/^\/api\/v1/, "")}`);
    return globalThis.fetch(input, init);
  };
  return { fetch, sent, posts: () => sent.filter((s) => s.startsWith("POST ")) };
}

/** A JSON body for the probe route of exactly `bytes` bytes. */
function probeBody(bytes: number): string {
  const head = '{"model":"emu-xs","pad":"';
  const tail = '"}';
  return head + big.slice(0, bytes - head.length - tail.length) + tail;
}

async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

describe("JSON request bodies over the service's 35 MB", () => {
  it("35 MiB + 1 byte is refused before sending (0 requests on the wire); exactly 35 MiB goes and is answered", async () => {
    expect(LIMIT).toBe(35 * 1024 * 1024);
    const w = wire();
    const client = new ServiceClient({ apiKey: "k", baseUrl: emu.url, fetch: w.fetch });
    const usd = emu.account("k")!.usd;
    const err = await rejection(client.request("/probe/inference", { method: "POST", body: probeBody(LIMIT + 1) }));
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect(err.status).toBeUndefined();
    expect(err.bytes).toBe(LIMIT + 1);
    expect(err.limit).toBe(LIMIT);
    expect(err.message).toContain("maxRequestBytes");
    expect(w.sent).toEqual([]);
    expect(emu.account("k")!.usd).toBe(usd);

    const res = await client.request<{ ok: boolean }>("/probe/inference", { method: "POST", body: probeBody(LIMIT) });
    expect(res.data.ok).toBe(true);
    expect(w.sent).toEqual(["POST /probe/inference"]);
  });

  it("counts UTF-8 bytes, not characters: a string under the limit in length but over it in bytes is refused", async () => {
    const w = wire();
    const client = new ServiceClient({ apiKey: "k", baseUrl: emu.url, fetch: w.fetch, maxRequestBytes: 1_000 });
    // 600 characters, 1,200 bytes of UTF-8 (+ the JSON around them)
    const err = await rejection(client.request("/probe/inference", { method: "POST", body: { model: "emu-xs", pad: "é".repeat(600) } }));
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect(err.bytes).toBe(1_200 + '{"model":"emu-xs","pad":""}'.length);
    expect(w.sent).toEqual([]);
    // 400 of them (800 bytes) fit
    await client.request("/probe/inference", { method: "POST", body: { model: "emu-xs", pad: "é".repeat(400) } });
    expect(w.sent).toEqual(["POST /probe/inference"]);
    // the count without Node's Buffer agrees with it, surrogate pairs and lone surrogates included
    for (const s of ["", "ascii", "é", "€uro", "😀 pairs 😀", "lone \ud800 high", "lone \udc00 low", "end \ud83d", "\u07ff\u0800\uffff"]) {
      expect(countUtf8(s), JSON.stringify(s)).toBe(Buffer.byteLength(s, "utf8"));
    }
  });

  it("ChatService: an image as a data URL over the limit is refused; nothing is posted to /chat/completions", async () => {
    const w = wire();
    const model = new ChatService({ model: "emu-m", apiKey: "k", baseUrl: emu.url, fetch: w.fetch, maxRetries: 0 });
    const image = `data:image/png;base64,${big}`;
    const err = await rejection(
      model.invoke([
        new HumanMessage({
          content: [
            { type: "text", text: "what is this?" },
            { type: "image_url", image_url: { url: image } },
          ],
        }),
      ]),
    );
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect(err.bytes).toBeGreaterThan(LIMIT);
    expect(w.posts()).toEqual([]);
  });

  it("embeddings: a text over the limit is refused unsent", async () => {
    const w = wire();
    const embeddings = new ServiceEmbeddings({ apiKey: "k", baseUrl: emu.url, fetch: w.fetch });
    const err = await rejection(embeddings.embedQuery(big));
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect(w.posts()).toEqual([]);
  });

  it("a wallet without credit: refused before any 402, so no top-up is signed or paid", async () => {
    const w = wire();
    const payments: unknown[] = [];
    const client = new ServiceClient({
      wallet: new EvmWallet(Wallet.createRandom().privateKey),
      baseUrl: emu.url,
      fetch: w.fetch,
      onPayment: (event) => payments.push(event),
    });
    const err = await rejection(client.request("/probe/inference", { method: "POST", body: probeBody(LIMIT + 1) }));
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect(w.sent).toEqual([]);
    expect(payments).toEqual([]);
  });

  it("with the check off (maxRequestBytes: Infinity), the emulator's 413 is a PayloadTooLargeError with status 413", async () => {
    const w = wire();
    const f = createServiceFetch({ apiKey: "k", baseUrl: emu.url, fetch: w.fetch, maxRequestBytes: Infinity, retry: false });
    const err = await rejection(
      f(`${emu.url}/probe/inference`, { method: "POST", headers: { "content-type": "application/json" }, body: probeBody(LIMIT + 1) }),
    );
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect(err.status).toBe(413);
    expect(err.code).toBe("PAYLOAD_TOO_LARGE");
    expect(err.message).toContain("Request body exceeds the maximum allowed size");
    expect(w.sent).toEqual(["POST /probe/inference"]);
  });
});
