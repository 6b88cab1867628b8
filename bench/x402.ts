/**
 * x402 benchmarks against the emulator and its local chain:
 * - round trips and time of a request that hits 402 and pays (4, as the service's own SDK: both read the
 *   requirements from /x402/top-up, the endpoint that checks them, before signing; the SDK's flow is the anchor);
 * - payments made by 50 concurrent 402s of one wallet (goal 1; the SDK pays once per 402, i.e. 50);
 * - cost of a SIWX header per request (anchor: the SDK's own `siwe` + ethers signing);
 * - the service's own SDK, `venice-x402-client`, against the emulator with `brand: "venice"` (a paid chat
 *   request as its docs show it: `new VeniceClient(key)`, `topUp(10)`, `chat(...)`), when it is installed; its
 *   50-request burst under the seed's rules (one payment per 402) and under the live rules (what its users meet).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Wallet } from "ethers";
import { SiweMessage } from "siwe";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import type { FetchLike } from "../src/http/fetch-stack.js";
import { createServiceFetch } from "../src/stack.js";
import { createSiwxHeader, createWalletAuth, X402PaymentController, x402PaymentLayer } from "../src/x402/index.js";
import { EvmWallet } from "../src/evm/index.js";
import { SolanaWallet } from "../src/solana/index.js";
import { median, type BenchRow } from "./types.js";

const CHAT = JSON.stringify({ model: "emu-xs", messages: [{ role: "user", content: "hello" }] });

function policyFor(emu: Emulator) {
  return { allowedAssets: [{ network: "eip155:8453", asset: emu.chain!.usdc.address }], allowedPayees: [emu.chain!.treasury] };
}

function counting(): { fetch: FetchLike; count: () => number } {
  let n = 0;
  return {
    fetch: (input, init) => {
      n++;
      return globalThis.fetch(input, init);
    },
    count: () => n,
  };
}

/** Ours: the 402's own requirements are used. */
async function paidRequest(emu: Emulator, index: number): Promise<{ ms: number; trips: number }> {
  const wallet = new EvmWallet(emu.chain!.accounts[index]!.privateKey);
  const c = counting();
  const f = createServiceFetch({
    baseUrl: emu.url,
    fetch: c.fetch,
    auth: createWalletAuth(wallet),
    paymentLayer: x402PaymentLayer({ wallet, policy: policyFor(emu) }),
    abuseGuard: false,
  });
  const t = performance.now();
  const res = await f(`${emu.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: CHAT });
  await res.arrayBuffer();
  return { ms: performance.now() - t, trips: c.count() };
}

/** The anchor's flow: on 402, ask /x402/top-up for requirements, pay, retry. */
async function anchorPaidRequest(emu: Emulator, index: number): Promise<{ ms: number; trips: number }> {
  const wallet = new EvmWallet(emu.chain!.accounts[index]!.privateKey);
  const c = counting();
  const f = createServiceFetch({ baseUrl: emu.url, fetch: c.fetch, auth: createWalletAuth(wallet), abuseGuard: false });
  const controller = new X402PaymentController({ wallet, policy: policyFor(emu) });
  const init = { method: "POST", headers: { "content-type": "application/json" }, body: CHAT, service: { throwOnError: false } };
  const t = performance.now();
  const first = await f(`${emu.url}/chat/completions`, init);
  await first.arrayBuffer();
  await controller.topUp(f, `${emu.url}/x402/top-up`);
  const res = await f(`${emu.url}/chat/completions`, init);
  await res.arrayBuffer();
  return { ms: performance.now() - t, trips: c.count() };
}

async function concurrent402s(emu: Emulator, index: number, n: number): Promise<{ ms: number; payments: number; answered: number }> {
  const wallet = new EvmWallet(emu.chain!.accounts[index]!.privateKey);
  let payments = 0;
  const f = createServiceFetch({
    baseUrl: emu.url,
    auth: createWalletAuth(wallet),
    paymentLayer: x402PaymentLayer({ wallet, policy: policyFor(emu), onPayment: (e) => void (e.type === "payment.signed" && payments++) }),
    abuseGuard: false,
  });
  const t = performance.now();
  const statuses = await Promise.all(
    Array.from({ length: n }, () =>
      f(`${emu.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: CHAT }).then(async (r) => {
        await r.arrayBuffer();
        return r.status;
      }),
    ),
  );
  return { ms: performance.now() - t, payments, answered: statuses.filter((s) => s === 200).length };
}

const SDK = "venice-x402-client";
const SDK_VERSION = "0.2.0";
/** The anchor is installed beside the benchmarks, on demand: it is not a dependency of this package. */
const ANCHORS = fileURLToPath(new URL("./.anchors/", import.meta.url));

type VeniceSdk = {
  VeniceClient: new (
    key: string,
    options?: Record<string, unknown>,
  ) => {
    chat(body: unknown): Promise<unknown>;
  };
};

async function loadServiceSdk(): Promise<VeniceSdk | string> {
  const entry = join(ANCHORS, "node_modules", SDK, "dist", "index.mjs");
  if (!existsSync(entry)) {
    if (process.env.BENCH_NO_INSTALL) return "not installed (BENCH_NO_INSTALL set)";
    process.stderr.write(`installing ${SDK}@${SDK_VERSION} into bench/.anchors (once; ~3 min)…\n`);
    mkdirSync(ANCHORS, { recursive: true });
    if (!existsSync(join(ANCHORS, "package.json")))
      writeFileSync(join(ANCHORS, "package.json"), '{"name":"bench-anchors","private":true}\n');
    const run = spawnSync("npm", ["install", "--no-save", "--no-package-lock", "--no-audit", "--no-fund", `${SDK}@${SDK_VERSION}`], {
      cwd: ANCHORS,
      stdio: "ignore",
      timeout: 600_000,
    });
    if (run.status !== 0 || !existsSync(entry)) return `could not be installed here (npm exit ${run.status ?? "timeout"})`;
  }
  const sdk = (await import(pathToFileURL(entry).href)) as Partial<VeniceSdk>;
  return sdk.VeniceClient ? (sdk as VeniceSdk) : "installed, but exports no VeniceClient";
}

/** Counts the requests the SDK sends to the service (it calls the global fetch; so does the in-process
 *  emulator's settlement, towards the chain: those are not counted). */
async function countingGlobalFetch<T>(origin: string, run: () => Promise<T>): Promise<{ value: T; requests: number }> {
  const original = globalThis.fetch;
  let requests = 0;
  globalThis.fetch = ((input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (url.startsWith(origin)) requests++;
    return original(input, init);
  }) as typeof fetch;
  try {
    return { value: await run(), requests };
  } finally {
    globalThis.fetch = original;
  }
}

/**
 * The service's own SDK against the emulator (brand venice), with its auto top-up on: a paid request's round
 * trips and time, and the payments made by 50 concurrent requests of one empty wallet.
 */
async function serviceSdkRows(): Promise<BenchRow[]> {
  const sdk = await loadServiceSdk();
  if (typeof sdk === "string") {
    return [{ name: `service SDK ${SDK}`, median_ms: NaN, ratio: NaN, anchor: SDK, note: sdk }];
  }
  const body = { model: "emu-xs", messages: [{ role: "user", content: "hello" }] };
  const rows: BenchRow[] = [];
  // The single paid request on the live-like emulator; the 50-request burst on both: the seed's rules (no
  // in-flight cap) show the SDK's one payment per 402, the live rules (5 in flight per wallet, top-up 10/min)
  // show what its users meet today.
  for (const mode of ["live", "seed"] as const) {
    const emu = await startEmulator({ chain: true, brand: "venice", mode, rateLimits: { abuseMaxFailures: 10_000 } });
    try {
      const client = (index: number) =>
        new sdk.VeniceClient(emu.chain!.accounts[index]!.privateKey, { apiUrl: emu.origin, autoTopUp: { enabled: true, amount: 5 } });
      if (mode === "live") {
        const paid: { ms: number; trips: number }[] = [];
        for (const index of [1, 2, 3]) {
          const venice = client(index);
          const t = performance.now();
          const { requests } = await countingGlobalFetch(emu.origin, () => venice.chat(body));
          paid.push({ ms: performance.now() - t, trips: requests });
        }
        rows.push({
          name: `service SDK ${SDK}@${SDK_VERSION}: a request that hits 402 and pays`,
          median_ms: median(paid.map((p) => p.ms)),
          ratio: 1,
          anchor: "itself (the anchor)",
          note: `${median(paid.map((p) => p.trips))} round trips, run against the emulator (brand venice)`,
        });
      }
      const wallet = emu.chain!.accounts[4]!.address;
      const venice = client(4);
      const t = performance.now();
      const results = await Promise.allSettled(Array.from({ length: 50 }, () => venice.chat(body)));
      const burstMs = performance.now() - t;
      const topUps = emu.ledger.wallet(wallet).entries.filter((e) => e.type === "TOP_UP");
      const ok = results.filter((r) => r.status === "fulfilled").length;
      const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
      const why = failed ? `; first failure: ${String((failed.reason as Error)?.message ?? failed.reason).slice(0, 80)}` : "";
      rows.push({
        name: `service SDK ${SDK}@${SDK_VERSION}: 50 concurrent requests, empty wallet (${mode} rules)`,
        median_ms: burstMs,
        ratio: topUps.length,
        anchor: "payments made (ours: 1)",
        note: `${topUps.length} top-ups, $${topUps.reduce((a, e) => a + e.amount, 0)} paid, ${ok}/50 answered${why}`,
      });
    } catch (err) {
      rows.push({
        name: `service SDK ${SDK} (${mode} rules)`,
        median_ms: NaN,
        ratio: NaN,
        anchor: SDK,
        note: `installed, run failed: ${String((err as Error)?.message ?? err).slice(0, 160)}`,
      });
    } finally {
      await emu.close();
    }
  }
  return rows;
}

export async function benchX402(): Promise<BenchRow[]> {
  const emu = await startEmulator({ chain: true, rateLimits: { abuseMaxFailures: 10_000 } });
  const rows: BenchRow[] = [];
  try {
    await paidRequest(emu, 8); // warm-up: the payment modules load on first use
    const ours = [await paidRequest(emu, 1), await paidRequest(emu, 2), await paidRequest(emu, 3)];
    const anchor = [await anchorPaidRequest(emu, 4), await anchorPaidRequest(emu, 5), await anchorPaidRequest(emu, 6)];
    const oursTrips = median(ours.map((r) => r.trips));
    const anchorTrips = median(anchor.map((r) => r.trips));
    rows.push({
      name: "request that hits 402 and pays: round trips",
      median_ms: median(ours.map((r) => r.ms)),
      ratio: oursTrips / anchorTrips,
      anchor: `service SDK flow: ${anchorTrips} round trips, ${median(anchor.map((r) => r.ms)).toFixed(0)} ms`,
      note: `ours: ${oursTrips} round trips (requirements read from /x402/top-up, never a 402's hint)`,
    });
    const burst = await concurrent402s(emu, 7, 50);
    rows.push({
      name: "50 concurrent 402s, one wallet: payments",
      median_ms: burst.ms,
      ratio: burst.payments / 50,
      anchor: "service SDK: one payment per 402 = 50",
      note: `ours: ${burst.payments} payment(s) (goal 1), ${burst.answered}/50 answered under the live rules (5 in flight per wallet)`,
    });
  } finally {
    await emu.close();
  }

  const key = Wallet.createRandom().privateKey;
  const evm = new EvmWallet(key);
  const sol = SolanaWallet.random();
  const url = "http://127.0.0.1:4000/api/v1/chat/completions";
  const signer = new Wallet(key);
  // the service SDK's way: siwe + ethers, as its docs show
  const sdkHeader = async () => {
    const msg = new SiweMessage({
      domain: "127.0.0.1:4000",
      address: signer.address,
      statement: "Sign in",
      uri: "http://127.0.0.1:4000",
      version: "1",
      chainId: 8453,
      nonce: crypto.randomUUID().replace(/-/g, "").slice(0, 16),
      issuedAt: new Date().toISOString(),
      expirationTime: new Date(Date.now() + 600_000).toISOString(),
    });
    const text = msg.prepareMessage();
    const signature = await signer.signMessage(text);
    return btoa(JSON.stringify({ address: signer.address, message: text, signature, timestamp: Date.now(), chainId: 8453 }));
  };
  // interleaved, after a warm-up, so JIT and CPU noise fall on both sides alike
  for (let i = 0; i < 50; i++) await Promise.all([createSiwxHeader(evm, url), sdkHeader(), createSiwxHeader(sol, url)]);
  const evmT: number[] = [];
  const sdkT: number[] = [];
  const solT: number[] = [];
  for (let i = 0; i < 200; i++) {
    for (const [fn, out] of [
      [() => createSiwxHeader(evm, url), evmT],
      [sdkHeader, sdkT],
      [() => createSiwxHeader(sol, url), solT],
    ] as const) {
      const t = performance.now();
      await fn();
      out.push(performance.now() - t);
    }
  }
  const [evmMs, sdkMs, solMs] = [median(evmT), median(sdkT), median(solT)];
  rows.push({
    name: "SIWX header per request (EVM)",
    median_ms: evmMs,
    ratio: evmMs / sdkMs,
    anchor: `siwe + ethers as the service SDK signs: ${sdkMs.toFixed(3)} ms`,
  });
  rows.push({ name: "SIWX header per request (Solana, Ed25519)", median_ms: solMs, ratio: solMs / sdkMs, anchor: "same EVM anchor" });
  rows.push(...(await serviceSdkRows()));
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await benchX402());
}
