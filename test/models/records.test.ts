/**
 * The shared `/models` records (src/models/records.ts) against the emulator over loopback: one read per base URL
 * and list type for every object in the process, whatever its credentials (sent without any), the whole record
 * with its prices, single flight, a caller's abort ending only its own wait, and a failed read not kept.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startEmulator, MODELS, type Emulator } from "langchain-service-emulator";
import {
  AbortError,
  NotFoundError,
  ResponseFormatError,
  ServiceClient,
  modelPricing,
  createServiceFetch,
  type FetchLike,
} from "../../src/index.js";
import { modelRecordsFor } from "../../src/models/records.js";
import { EvmWallet } from "../../src/evm/index.js";
import { startFixtureServer, type FixtureServer } from "../chat/fixture-server.js";
import { createServiceContext } from "../../src/http/context.js";

/** A base fetch recording the GETs of `/models` that reach the wire, with their credential headers. */
function recording() {
  const reads: { url: string; authorization: string | null; siwx: string | null }[] = [];
  const fetchFn: FetchLike = async (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    if (url.includes("/models")) {
      const headers = new Headers(init?.headers);
      reads.push({
        url,
        authorization: headers.get("authorization"),
        siwx: headers.get("sign-in-with-x") ?? headers.get("x-sign-in-with-x"),
      });
    }
    return fetch(input, init);
  };
  return { fetch: fetchFn, reads };
}

let emu: Emulator;
let fx: FixtureServer;
beforeAll(async () => {
  [emu, fx] = await Promise.all([startEmulator({ apiKeys: ["k1", "k2"] }), startFixtureServer()]);
});
afterAll(async () => {
  await Promise.all([emu?.close(), fx?.close()]);
});
// each test its own context: no /models list carried over from another
let context = createServiceContext();
beforeEach(() => {
  context = createServiceContext();
});

describe("the shared /models records", () => {
  it("are read once per base URL and list for every client, key or wallet, and without credentials", async () => {
    const { fetch: base, reads } = recording();
    const clients = [
      new ServiceClient({ context, baseUrl: emu.url, apiKey: "k1", fetch: base }),
      new ServiceClient({ context, baseUrl: emu.url, apiKey: "k2", fetch: base }),
      new ServiceClient({ context, baseUrl: emu.url, wallet: EvmWallet.random(), fetch: base }),
    ];
    await Promise.all(clients.map((c) => c.models().load()));
    await Promise.all(clients.map((c) => c.models().load()));
    expect(reads).toHaveLength(1);
    expect(reads[0]!.url).toMatch(/\/models\?type=text$/);
    expect(reads[0]!.authorization).toBeNull();
    expect(reads[0]!.siwx).toBeNull();
    // every handle sees the records, synchronously
    for (const c of clients) expect(c.models().get("emu-s")?.id).toBe("emu-s");
    expect(
      clients[2]!
        .models()
        .list()
        .map((m) => m.id),
    ).toEqual(MODELS.map((m) => m.id));

    // another list type is another read; a forced load reads again
    await clients[0]!.models("embedding").load();
    await clients[0]!.models().load({ force: true });
    expect(reads.map((r) => new URL(r.url).searchParams.get("type"))).toEqual(["text", "embedding", "text"]);
  });

  it("hold the whole record, prices included, for budgets to reserve from", async () => {
    const client = new ServiceClient({ context, baseUrl: emu.url, apiKey: "k1" });
    const records = client.models();
    expect(records.loaded).toBe(false);
    expect(records.get("emu-l")).toBeUndefined();
    await records.load();
    const l = MODELS.find((m) => m.id === "emu-l")!;
    expect(records.get("emu-l")?.model_spec?.availableContextTokens).toBe(l.contextTokens);
    expect(records.pricing("emu-l")).toEqual({
      input: { usd: l.pricing.input, diem: l.pricing.input },
      output: { usd: l.pricing.output, diem: l.pricing.output },
      cacheInput: { usd: l.pricing.cache_input, diem: l.pricing.cache_input },
    });
    expect(modelPricing(records.get("emu-basic"))?.cacheInput).toBeUndefined();
    expect(records.pricing("no-such-model")).toBeUndefined();
  });

  it("concurrent loads share one request; a caller's abort ends only its own wait", async () => {
    const { fetch: base, reads } = recording();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow: FetchLike = async (input, init) => {
      await gate;
      return base(input, init);
    };
    const records = modelRecordsFor(createServiceFetch({ context, baseUrl: emu.url, apiKey: "k1", fetch: slow }));
    const controller = new AbortController();
    const aborted = records.load({ signal: controller.signal });
    const other = records.load();
    controller.abort();
    await expect(aborted).rejects.toBeInstanceOf(AbortError);
    release();
    expect((await other).has("emu-xs")).toBe(true);
    expect(reads).toHaveLength(1);
  });

  it("a failed read is typed, not kept (asked again when loaded again), and not retried in the background right away", async () => {
    const { fetch: base } = recording();
    let status = 404;
    const failing: FetchLike = async (input, init) => {
      const url = String(input);
      if (url.includes("/models")) {
        return new Response(JSON.stringify({ error: "Not found" }), { status, headers: { "content-type": "application/json" } });
      }
      return base(input, init);
    };
    let sent = 0;
    const counted: FetchLike = async (input, init) => {
      if (String(input).includes("/models")) sent++;
      return failing(input, init);
    };
    const records = modelRecordsFor(createServiceFetch({ context, baseUrl: fx.url, apiKey: "k1", fetch: counted, retry: false }));
    await expect(records.load()).rejects.toBeInstanceOf(NotFoundError);
    records.refreshInBackground(); // just failed: not asked again from the background
    await new Promise((r) => setTimeout(r, 20));
    expect(sent).toBe(1);
    status = 200; // a 200 whose body is not a list is a typed format error
    await expect(records.load()).rejects.toBeInstanceOf(ResponseFormatError);
    expect(sent).toBe(2);
  });
});
