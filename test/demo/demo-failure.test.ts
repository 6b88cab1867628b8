/**
 * A run that fails is a failed run: the demo prints its summary and then throws the error, so `npm run demo`
 * exits non-zero instead of answering nothing with success.
 */
import { startEmulator } from "langchain-service-emulator";
import { afterEach, describe, expect, it } from "vitest";
import { main } from "../../examples/demo.js";

const ENV = ["SERVICE_BASE_URL", "SERVICE_API_KEY", "SERVICE_MODEL", "WALLET_PRIVATE_KEY"] as const;
const saved: Partial<Record<(typeof ENV)[number], string | undefined>> = {};
let close: (() => Promise<void>) | undefined;

afterEach(async () => {
  for (const name of ENV) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
  await close?.();
});

describe("npm run demo, when the agent's run fails", () => {
  it("throws the run's error after the summary (a model the service does not have)", async () => {
    const emu = await startEmulator({ apiKeys: ["demo-key"], chain: false });
    close = () => emu.close();
    for (const name of ENV) saved[name] = process.env[name];
    delete process.env.WALLET_PRIVATE_KEY;
    process.env.SERVICE_BASE_URL = emu.url;
    process.env.SERVICE_API_KEY = "demo-key";
    process.env.SERVICE_MODEL = "no-such-model";
    const lines: string[] = [];
    await expect(main({ log: (l) => lines.push(l), write: () => {} })).rejects.toThrow(/no-such-model/);
    expect(lines.join("\n")).toContain("Summary");
  });
});
