/**
 * Every call ends (issue 35), the matrix that matrix-*.test.ts run (the entries in two files, one per worker): each public async entry point (entries.ts), at each stage where it can wait, is ended
 * by the caller's `signal` and by the stack's `totalTimeout`, within 100 ms plus a turn of the event loop, with the
 * package's typed error (TimeoutError for a deadline, AbortError for an abort), and leaves nothing held: its place
 * in flight, its budget reservation. Real HTTP on loopback, one scripted server per cell (cells run concurrently).
 *
 * The stages, and how a cell reaches one (the server counts the entry's own requests, so a cell also proves it
 * waited where it says):
 * - gate: another request of the wallet holds its one place in flight; the call queues (none of its requests sent)
 * - pacing: another call of the same model is out learning the rate window; the call waits its turn (none sent)
 * - headers: the server never answers (one sent)
 * - body: the server sends the headers and part of the body, then stalls (one sent)
 * - signing: the wallet's signer never answers (a remote signer, a wallet awaiting its user: none sent)
 * - top-up (drives): its request draws a 402 and the top-up endpoint stalls
 * - top-up (waits): another request of the wallet drives a top-up that stalls; the call waits on it
 * - backoff: a 503, then a long retry backoff
 */
import type { ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, type expect, it } from "vitest";
import { AbortError, ServiceError, TimeoutError } from "../../src/http/errors.js";
import { json, startFixtureServer, type FixtureServer, type RecordedRequest } from "../chat/fixture-server.js";
import { facesOf, PAYEE, type Entry, type Faces } from "./entries.js";

/** the caller's deadline in each cell: time to reach its stage on a loaded machine, where the cell proves it did */
const DEADLINE_MS = 300;
/** the bound past the deadline, plus one turn of the event loop (see run()) */
const MARGIN_MS = 100;

type Stage = "gate" | "pacing" | "headers" | "body" | "signing" | "top-up (drives)" | "top-up (waits)" | "backoff";
const STAGES: Stage[] = ["gate", "pacing", "headers", "body", "signing", "top-up (drives)", "top-up (waits)", "backoff"];

/** Where a stage cannot hold an entry, and why (the cell is left out, with its reason in the table below). */
function notApplicable(entry: Entry, stage: Stage, how: "signal" | "totalTimeout"): string | undefined {
  if (entry.plainFetch && how === "totalTimeout") return "withX402 wraps the caller's fetch: its deadline is the caller's signal";
  if (entry.topUp && stage === "top-up (drives)") return "the explicit top-up is the top-up: its stalls are the headers and body stages";
  if (entry.plainFetch && (stage === "gate" || stage === "pacing" || stage === "backoff"))
    return "withX402 wraps a plain fetch: no in-flight gate, pacing or retry loop";
  if (entry.public && (stage === "gate" || stage === "signing" || stage === "pacing"))
    return "a public request is sent without the wallet's sign-in, its place or its pacing";
  if (entry.read && stage === "top-up (waits)") return "a read is never held back for credit (it waits for no top-up)";
  return undefined;
}

const OFFER = {
  x402Version: 2,
  error: "payment required",
  accepts: [
    {
      scheme: "exact",
      network: "eip155:8453",
      amount: "5000000",
      asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
      payTo: PAYEE,
      maxTimeoutSeconds: 300,
      extra: { name: "USD Coin", version: "2" },
    },
  ],
};

/**
 * Requests that are not the entry's own: the network list, the model lists a budget prices a request by, the
 * warm-up and the requests that hold a place.
 */
function support(req: RecordedRequest, entry: Entry): boolean {
  if (req.url.includes("/crypto/rpc/networks") && !entry.public) return true;
  if (/\/models(\/compatibility_mapping)?\?type=/.test(req.url)) return true;
  return /\/(warm|hold|drive)$/.test(req.url);
}

function stall(res: ServerResponse, entry: Entry): void {
  if (entry.body === "sse") {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(
      `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: "He" } }] })}\n\n`,
    );
  } else if (entry.body === "audio") {
    res.writeHead(200, { "content-type": "audio/mpeg" });
    res.write(Buffer.alloc(64, 1));
  } else {
    res.writeHead(200, { "content-type": "application/json" });
    res.write(entry.public ? '{"networks": ["base-' : '{"id": "x", "data": [');
  }
}

interface Cell {
  server: FixtureServer;
  faces: Faces;
  /** the entry's own requests that reached the server */
  sent(): number;
  /** ends what the cell started to hold a place (the holder, the driver) */
  release(): void;
}

/** (each concurrent cell asserts with its own test's `expect`) */
type Expect = typeof expect;

async function setUp(entry: Entry, stage: Stage, deadline: number | undefined, expect: Expect): Promise<Cell> {
  let holdSigning = false;
  let released = false;
  const stalledTopUps: ServerResponse[] = [];
  const unconfigured = (res: ServerResponse) => json(res, { error: "x402 is not configured", code: "X402_NOT_CONFIGURED" }, {}, 503);
  const server = await startFixtureServer();
  const own: RecordedRequest[] = [];
  server.script = (req, res) => {
    if (process.env.MATRIX_DEBUG) console.log(Date.now() % 100000, req.method, req.url);
    if (req.url.includes("/crypto/rpc/networks") && (!entry.public || stage === "top-up (waits)"))
      return json(res, { networks: ["base-mainnet"] });
    if (req.url.includes("/models/compatibility_mapping?type=")) return json(res, { object: "list", data: {} });
    if (req.url.includes("/models?type=")) return json(res, { object: "list", data: [] });
    if (req.url.endsWith("/warm")) return json(res, {});
    if (req.url.endsWith("/hold")) return; // never answered: it keeps its place
    if (req.url.endsWith("/drive")) return json(res, OFFER, {}, 402);
    const topUpRoute = req.url.endsWith("/x402/top-up");
    if (topUpRoute && (released || !entry.topUp || stage === "top-up (waits)"))
      return released ? unconfigured(res) : void stalledTopUps.push(res); // it stalls
    if (!support(req, entry)) own.push(req);
    if (stage === "body") return stall(res, entry);
    if (stage === "backoff") return json(res, { error: "Service unavailable" }, {}, 503);
    if (stage === "top-up (drives)") return json(res, OFFER, {}, 402);
    // gate, pacing, headers, signing, waits: the entry's own request is never answered (none should come but the holder's)
  };
  const faces = facesOf({
    url: server.url,
    totalTimeout: deadline,
    holdSigning: () => holdSigning,
    perWallet: stage === "gate" ? 1 : 5,
    cryptoRpcInFlight: stage === "pacing" ? 5 : 1,
    retryDelayMs: stage === "backoff" ? 60_000 : 10,
  });
  const holders = new AbortController();
  const long = { totalTimeout: 60_000 };
  const url = (path: string) => faces.client.fetch.url(path);
  // the wallet's credit known good, so that nothing waits on it but where the stage says
  // (in a pacing bucket of its own: what it teaches the limiter is not what the stage needs)
  if (!entry.plainFetch) await (await faces.client.fetch(url("/warm"), { method: "POST", body: "{}", service: { model: "warm" } })).text();
  else await (await faces.plain(url("/warm"), { method: "POST", body: "{}" })).text();
  let holderSent = 0;
  if (stage === "gate") {
    void faces.client.fetch(url("/hold"), { method: "POST", body: "{}", signal: holders.signal, service: long }).catch(() => undefined);
  } else if (stage === "pacing") {
    // the same entry of the same caller, out first (with no deadline of its own): until its answer tells the
    // window, the next call of its model waits
    const holder = facesOf({
      url: server.url,
      holdSigning: () => false,
      context: faces.context,
      wallet: faces.wallet,
      cryptoRpcInFlight: 5,
    });
    void entry.call(holder, holders.signal).catch(() => undefined);
    holderSent = 1;
  } else if (stage === "top-up (waits)") {
    const drive = entry.plainFetch ? faces.plain : faces.client.fetch;
    void drive(url("/drive"), { method: "POST", body: "{}", signal: holders.signal, service: long }).catch(() => undefined);
  } else if (stage === "signing") {
    holdSigning = true;
  }
  // what was sent before the call under test (the pacing holder's own request) is not the call's
  await expect.poll(() => own.length, { timeout: 2_000, interval: 5 }).toBe(holderSent);
  if (stage === "top-up (waits)") await expect.poll(() => stalledTopUps.length, { timeout: 2_000, interval: 5 }).toBe(1);
  const before = own.length;
  return {
    server,
    faces,
    sent: () => own.length - before,
    release: () => {
      holders.abort();
      holdSigning = false;
      // the stalled top-up ends (nothing was signed): the wallet's requests no longer wait on it
      released = true;
      for (const res of stalledTopUps.splice(0)) unconfigured(res);
    },
  };
}

/** How many of the entry's own requests a stage lets reach the server, when the call is held where it says. */
function expectedSent(stage: Stage, entry: Entry): (n: number) => boolean {
  switch (stage) {
    case "gate":
    case "pacing":
    case "signing":
      return (n) => n === 0;
    case "top-up (waits)":
      return (n) => n === 0;
    case "headers":
    case "body":
    case "top-up (drives)":
      return (n) => n >= 1;
    case "backoff":
      return (n) => n >= 1;
    default:
      return () => entry !== undefined;
  }
}

interface Outcome {
  err: unknown;
  /** ms from the deadline to the call's end */
  late: number;
  /** the longest turn of the event loop seen while the call ran (how late a 10 ms timer fired, at worst) */
  turn: number;
  /** the caller's signal's reason (a stream's end may be that reason itself) */
  reason: unknown;
}

/**
 * Runs the call to its end, measuring the event loop's turns meanwhile: "within 100 ms plus one turn of the event
 * loop" then reads as `late < 100 + turn`. A loaded machine (a busy CI) lengthens the turns and the bound with them.
 */
async function run(entry: Entry, cell: Cell, how: "signal" | "totalTimeout"): Promise<Outcome> {
  const started = performance.now();
  let turn = 0;
  let last = started;
  const monitor = setInterval(() => {
    const now = performance.now();
    turn = Math.max(turn, now - last - 10);
    last = now;
  }, 10);
  let err: unknown;
  const signal = how === "signal" ? AbortSignal.timeout(DEADLINE_MS) : undefined;
  try {
    await entry.call(cell.faces, signal);
  } catch (e) {
    err = e;
  } finally {
    clearInterval(monitor);
  }
  const late = performance.now() - started - DEADLINE_MS;
  return { err, late, turn, reason: signal?.reason };
}

/**
 * Three cells of a file at a time (each holds a server, a stack and a signer busy for about half a second): more
 * would only lengthen the turns of the event loop that every cell is measured against.
 */
const slots = {
  free: 3,
  waiting: [] as (() => void)[],
  async take(): Promise<() => void> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    };
  },
};

export function defineMatrix(entries: Entry[]): void {
  // Every entry once, against a server that refuses everything at once: the code each entry loads on its first
  // call (the chat model's, the tools', the wallet's sign-in) is loaded before any cell's clock runs.
  beforeAll(async () => {
    const server = await startFixtureServer((req, res) =>
      req.url.includes("/crypto/rpc/networks") ? json(res, { networks: ["base-mainnet"] }) : json(res, { error: "no" }, {}, 400),
    );
    try {
      const faces = facesOf({ url: server.url, holdSigning: () => false, retryDelayMs: 10 });
      for (const entry of entries) await entry.call(faces, AbortSignal.timeout(5_000)).catch(() => undefined);
    } finally {
      await server.close();
    }
  });

  const rows: string[] = [];
  afterAll(() => {
    if (process.env.MATRIX_TABLE) console.log(rows.sort().join("\n"));
  });

  describe.concurrent("every call ends: entry point x stage x (signal | totalTimeout)", () => {
    for (const entry of entries) {
      for (const stage of STAGES) {
        for (const how of ["signal", "totalTimeout"] as const) {
          if (how === "signal" && entry.takesSignal === false) continue;
          const why = notApplicable(entry, stage, how);
          if (why) {
            rows.push(`${entry.name} | ${stage} | n/a: ${why}`);
            continue;
          }
          // retried: on a loaded machine a cell may not reach its stage before its deadline, or end a turn late; a
          // call that ignores its signal hangs or overruns on every try
          it(`${entry.name} | ${stage} | ${how}`, { timeout: 30_000, retry: 2 }, async ({ expect }) => {
            const free = await slots.take();
            const cell = await setUp(entry, stage, how === "totalTimeout" ? DEADLINE_MS : undefined, expect).catch((err) => {
              free();
              throw err;
            });
            try {
              const { err, late, turn, reason } = await run(entry, cell, how);
              rows.push(`${entry.name} | ${stage} | ${how} | ${Math.round(late)} ms late`);
              // what LangChain core raises for a stream (and fetch for withX402) at the caller's abort is the signal's
              // own reason; every other end is the package's typed error
              const ownReason = how === "signal" && (entry.body === "sse" || entry.plainFetch) && err === reason;
              if (!ownReason) {
                expect(err, "the call did not fail").toBeInstanceOf(ServiceError);
                // a deadline is a TimeoutError (AbortSignal.timeout's, or totalTimeout's); a job runner's is its
                // JobCancelledError, an AbortError naming the job it leaves running
                expect(err instanceof TimeoutError || err instanceof AbortError, `${(err as Error).name}: ${(err as Error).message}`).toBe(
                  true,
                );
              }
              expect(
                late,
                `ended ${Math.round(late)} ms after its deadline (longest turn of the loop: ${Math.round(turn)} ms)`,
              ).toBeLessThan(MARGIN_MS + turn);
              const sent = cell.sent();
              expect(expectedSent(stage, entry)(sent), `the call sent ${sent} request(s) at stage ${stage}`).toBe(true);
              // nothing held: once the holders end, the wallet's place is free and no reservation is left
              cell.release();
              const after = await cell.faces.client.fetch(cell.faces.client.fetch.url("/warm"), {
                method: "POST",
                body: "{}",
                signal: AbortSignal.timeout(2_000),
                service: { totalTimeout: 2_000, model: "warm" },
              });
              expect(after.status).toBe(200);
              await after.text();
              await expect.poll(() => cell.faces.budget.reservedUsd, { timeout: 1_000 }).toBe(0);
            } finally {
              cell.release();
              await cell.server.close();
              free();
            }
          });
        }
      }
    }
  });
}
