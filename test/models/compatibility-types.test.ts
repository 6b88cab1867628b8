/**
 * `GET /models/compatibility_mapping` is kept per list: the live service answers 400 for `type=all` and
 * `type=code`. `getCompatibilityMapping` refuses those unsent (`ValidationError`), and the shared records of a
 * `code` list never ask for one (a 400 would count toward the caller's abuse block). Against the live emulator.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ServiceClient, ValidationError, createServiceFetch, type FetchLike } from "../../src/index.js";
import { modelRecordsFor } from "../../src/models/records.js";
import { createServiceContext } from "../../src/http/context.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: ["k1"] });
});
afterAll(async () => {
  await emu?.close();
});
// each test its own context: no /models list carried over from another
let context = createServiceContext();
beforeEach(() => {
  context = createServiceContext();
});

function recording() {
  const urls: string[] = [];
  const fetch: FetchLike = async (input, init) => {
    urls.push(String(input instanceof Request ? input.url : input));
    return globalThis.fetch(input, init);
  };
  return { urls, fetch };
}

describe("compatibility mapping list types", () => {
  it("type=all and type=code are refused before sending; a list type is read", async () => {
    const { urls, fetch } = recording();
    const client = new ServiceClient({ context, baseUrl: emu.url, apiKey: "k1", fetch });
    for (const type of ["all", "code"]) {
      const err = await client.getCompatibilityMapping(type).catch((e) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect(err.message).toContain(`type=${type}`);
    }
    expect(urls).toEqual([]);
    expect((await client.getCompatibilityMapping("text")).data["gpt-4o"]).toBe("emu-m");
    expect(urls).toHaveLength(1);
  });

  it("the records of a code list resolve without asking for a mapping", async () => {
    const { urls, fetch } = recording();
    const records = modelRecordsFor(createServiceFetch({ context, baseUrl: emu.url, apiKey: "k1", fetch }), "code");
    expect(await records.compatibilityMapping()).toBeUndefined();
    expect(await records.resolve("gpt-4o")).toBeUndefined();
    expect(urls.filter((u) => u.includes("compatibility_mapping"))).toEqual([]);
  });
});
