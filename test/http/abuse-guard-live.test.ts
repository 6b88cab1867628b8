/**
 * The abuse guard against a service that tells its error budget (the emulator's live mode, its default), over
 * loopback: such a service counts only non-429 4xx toward its block (5xx never count), so once it has told the
 * budget an outage's 5xx no longer make the client refuse to send, while 4xx still do. The seed's rule, where every
 * non-success answer counts, is held in test/load/faults.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ChatService } from "../../src/chat/index.js";
import { AbuseBlockError, ModelNotFoundError, PayloadTooLargeError, ServerError } from "../../src/http/errors.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({
    apiKeys: [
      { key: "outage-key", usd: 100 },
      { key: "typo-key", usd: 100 },
      { key: "big-key", usd: 100 },
    ],
    maxBodyBytes: 4096, // a small limit, so that 413s are cheap to draw
    rateLimits: { tiers: { XS: { requests: 1_000_000, tokens: 1_000_000_000 } } },
  });
});
afterAll(async () => {
  await emu?.close();
});

const chat = (key: string, model = "emu-xs") =>
  new ChatService({ model, apiKey: key, baseUrl: emu.url, retry: false, abuseGuard: { maxFailures: 20, windowMs: 30_000 } });

describe("a service that tells its error budget", () => {
  it("30 5xx of an outage in a row: every call still reaches it, none refused by the client, and after it the next is served", async () => {
    const model = chat("outage-key");
    expect((await model.invoke("before")).content).toBeTruthy(); // its answer tells the budget
    emu.setFaults({ errorRate: 1, statuses: [503], paths: ["/chat/completions"] });
    const errors: unknown[] = [];
    try {
      for (let i = 0; i < 30; i++) errors.push(await model.invoke(`outage ${i}`).catch((e: unknown) => e));
    } finally {
      emu.setFaults({});
    }
    expect(errors.filter((e) => e instanceof AbuseBlockError)).toEqual([]);
    expect(errors.every((e) => e instanceof ServerError)).toBe(true);
    expect((await model.invoke("after")).content).toBeTruthy();
  });

  it("413s do not count (the service refuses them before counting): 25 in a row, all sent", async () => {
    const model = new ChatService({
      model: "emu-xs",
      apiKey: "big-key",
      baseUrl: emu.url,
      retry: false,
      maxRequestBytes: Infinity,
      abuseGuard: { maxFailures: 20, windowMs: 30_000 },
    });
    await model.invoke("tell the budget");
    const big = "x".repeat(8_000);
    const errors: unknown[] = [];
    for (let i = 0; i < 25; i++) errors.push(await model.invoke(big).catch((e: unknown) => e));
    expect(errors.every((e) => e instanceof PayloadTooLargeError)).toBe(true);
    expect((await model.invoke("and after them")).content).toBeTruthy();
  });

  it("4xx still count: the 21st call for an unknown model is refused by the client, unsent", async () => {
    const known = chat("typo-key");
    await known.invoke("tell the budget");
    const typo = chat("typo-key", "emu-no-such-model");
    const errors: unknown[] = [];
    for (let i = 0; i < 21; i++) errors.push(await typo.invoke(`typo ${i}`).catch((e: unknown) => e));
    expect(errors.slice(0, 20).every((e) => e instanceof ModelNotFoundError)).toBe(true);
    expect(errors[20]).toBeInstanceOf(AbuseBlockError);
    expect((errors[20] as AbuseBlockError).source).toBe("client");
  });
});
