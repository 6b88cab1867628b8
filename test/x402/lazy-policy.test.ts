/**
 * A wallet's payment policy is checked as the payment layer is made (lazily, with the x402 code): a bad one is a
 * ConfigurationError on the first request, and never an unhandled rejection before it (the money model's seed 1).
 */
import { afterEach, expect, it } from "vitest";
import { ConfigurationError, ServiceClient } from "../../src/index.js";
import { EvmWallet } from "../../src/evm/index.js";

const seen: unknown[] = [];
const onUnhandled = (reason: unknown) => seen.push(reason);
afterEach(() => {
  process.off("unhandledRejection", onUnhandled);
});

it("a bad policy is refused on the first request, with no unhandled rejection before it", async () => {
  process.on("unhandledRejection", onUnhandled);
  const client = new ServiceClient({ baseUrl: "http://127.0.0.1:9/api/v1", wallet: EvmWallet.random(), payment: { maxPerTopUpUsd: -1 } });
  await new Promise((r) => setTimeout(r, 50));
  expect(seen).toEqual([]);
  await expect(client.request("/chat/completions", { body: {} })).rejects.toBeInstanceOf(ConfigurationError);
});
