/**
 * The tools paid from a wallet with no API key (a real local chain, real EIP-3009 USDC): each tool's first call
 * gets 402, the stack tops up within the owner's policy, retries, and the tool answers; the wallet's credit comes
 * back as `X-Balance-Remaining` in the artifact; nothing is paid twice (one top-up for all four tools, sharing one
 * stack), and the emulator's ledger holds every charge.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Emulator } from "langchain-service-emulator";
import { createServiceFetch } from "../../src/stack.js";
import type { PaymentEvent } from "../../src/x402/events.js";
import { ImageGenerationTool, TextToSpeechTool, WebScrapeTool, WebSearchTool } from "../../src/tools/index.js";
import { payer, startPaidEmulator, testPolicy, usdcBalance } from "../x402/helpers.js";
import { callTool, decodePng, decodeWav } from "./helpers.js";

let emu: Emulator;
let dir: string;
beforeAll(async () => {
  // a deployment that sends X-Balance-Remaining (the live service does not): the artifacts carry it
  emu = await startPaidEmulator({ x402: { balanceHeader: true } });
  dir = await mkdtemp(join(tmpdir(), "paid-tools-"));
});
afterAll(async () => {
  await emu?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("tools paid by a wallet", () => {
  it("402 -> top-up -> retry, once, then every tool is served from the credit", async () => {
    const wallet = payer(emu, 6);
    const before = await usdcBalance(emu, wallet.address);
    const events: PaymentEvent[] = [];
    const paths: string[] = [];
    const serviceFetch = createServiceFetch({
      baseUrl: emu.url,
      wallet,
      payment: testPolicy(emu, { amountUsd: 5, maxPerTopUpUsd: 5, maxPerPeriodUsd: 5 }),
      onPayment: (e) => events.push(e),
      fetch: (input, init) => {
        paths.push(`${init?.method ?? "GET"} ${new URL(String(input)).pathname.replace("/api/v1", "")}`);
        return globalThis.fetch(input, init);
      },
    });
    const search = new WebSearchTool({ serviceFetch });
    const scrape = new WebScrapeTool({ serviceFetch });
    const image = new ImageGenerationTool({ serviceFetch, outputDir: dir, width: 48, height: 48, model: "emu-image" });
    const speech = new TextToSpeechTool({ serviceFetch, outputDir: dir });

    const found = await callTool(search, "web_search", { query: "USDC stablecoin decimals" });
    expect(found.json.results[0].url).toBe("https://example.org/usdc");
    // the first answer was a 402; the top-up settled on chain; the search was sent again
    expect(paths.slice(0, 4)).toEqual(["POST /augment/search", "POST /x402/top-up", "POST /x402/top-up", "POST /augment/search"]);
    expect(await usdcBalance(emu, wallet.address)).toBe(before - 5_000_000n);
    expect(found.artifact.balanceRemainingUsd).toBeGreaterThan(4.9);
    expect(found.artifact.balanceRemainingUsd).toBeLessThan(5);

    const page = await callTool(scrape, "web_scrape", { url: found.json.results[0].url });
    expect(page.json.content).toContain("USDC");
    const drawn = await callTool(image, "generate_image", { prompt: "a coin made of light" });
    decodePng(await readFile(drawn.json.path));
    const spoken = await callTool(speech, "text_to_speech", { text: "Paid by my own wallet." });
    decodeWav(await readFile(spoken.json.path));
    expect(spoken.artifact.balanceRemainingUsd).toBeLessThan(drawn.artifact.balanceRemainingUsd);

    // one top-up for all of it: nothing paid twice
    expect(events.filter((e) => e.type === "payment.settled")).toHaveLength(1);
    expect(events.filter((e) => e.type === "payment.refused" || e.type === "payment.failed")).toHaveLength(0);
    expect(paths.filter((p) => p === "POST /x402/top-up")).toHaveLength(2);
    expect(await usdcBalance(emu, wallet.address)).toBe(before - 5_000_000n);
    const account = emu.account(wallet.address)!;
    const totals = emu.ledger.totals(account);
    expect(totals.toppedUp).toBe(5);
    expect(account.entries.filter((e) => e.type === "CHARGE").map((e) => e.kind)).toEqual(["web-search", "web-scrape", "image", "speech"]);
    expect(account.usd).toBeCloseTo(5 - totals.charged, 6);
    expect(spoken.artifact.balanceRemainingUsd).toBeCloseTo(account.usd, 6);
  });
});
