/**
 * What every parser property checks: an answer is a value or one of the package's typed errors (a `ServiceError`),
 * never a raw `TypeError`/`RangeError`/`SyntaxError`, and it comes within a bound per run. Also the near-valid
 * mutations shared by the parser families (JSON values altered at one path, text cut or spliced).
 */
import fc from "fast-check";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ServiceError } from "../../src/http/errors.js";

/** The outcome of one run: its value, or the typed error it ended in. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: ServiceError };

/** Fails the run when `fn` throws anything but a ServiceError, or takes longer than `ms`. */
export async function typedOutcome<T>(fn: () => T | Promise<T>, ms = 2_000): Promise<Outcome<T>> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new BoundExceeded(`no answer within ${ms} ms`)), ms);
  });
  try {
    const value = await Promise.race([Promise.resolve().then(fn), late]);
    return { ok: true, value };
  } catch (error) {
    if (error instanceof ServiceError) return { ok: false, error };
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** The synchronous twin, for pure parsers: a value, or a ServiceError; anything else propagates. */
export function typedSync<T>(fn: () => T): Outcome<T> {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    if (error instanceof ServiceError) return { ok: false, error };
    throw error;
  }
}

/** A run that went past its time bound (a hang is a failure, not a stuck suite). */
export class BoundExceeded extends Error {
  override name = "BoundExceeded";
}

/** Every run under `ms` of wall time, measured around the property's predicate. */
export function timed<A extends unknown[]>(ms: number, predicate: (...args: A) => void): (...args: A) => void {
  return (...args: A) => {
    const start = performance.now();
    predicate(...args);
    const took = performance.now() - start;
    if (took > ms) throw new BoundExceeded(`run took ${took.toFixed(1)} ms (bound ${ms})`);
  };
}

/** JSON values of bounded size, with the odd numbers and strings a server might send. */
export const jsonValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.constantFrom(0, -1, 1e21, -1e308, 1e308, 2 ** 53 + 1, 0.1),
    fc.string({ maxLength: 12 }),
    fc.constantFrom("", "NaN", "Infinity", "-1", "1e999", "0x10", " 12 ", "__proto__", "null", "[DONE]"),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie("value"), { maxKeys: 4 }),
  ),
})).value;

/** Replaces, drops or retypes the member at one path of a JSON value (a near-valid variant of a good example). */
export function mutateAt(value: unknown, path: number[], replacement: unknown, drop: boolean): unknown {
  if (path.length === 0 || value === null || typeof value !== "object") return drop ? undefined : replacement;
  const [head, ...rest] = path;
  if (Array.isArray(value)) {
    if (value.length === 0) return drop ? value : [replacement];
    const i = head! % value.length;
    const out = [...value];
    if (rest.length === 0 && drop) out.splice(i, 1);
    else out[i] = mutateAt(value[i], rest, replacement, drop);
    return out;
  }
  const keys = Object.keys(value);
  if (keys.length === 0) return drop ? value : { x: replacement };
  const key = keys[head! % keys.length]!;
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  if (rest.length === 0 && drop) delete out[key];
  else out[key] = mutateAt(out[key], rest, replacement, drop);
  return out;
}

/** Near-valid variants of `example`: one to three members replaced (odd values, wrong types), dropped, or kept. */
export function nearValid(example: unknown): fc.Arbitrary<unknown> {
  const edit = fc.record({
    path: fc.array(fc.nat(50), { minLength: 1, maxLength: 5 }),
    replacement: jsonValue,
    drop: fc.boolean(),
  });
  return fc.array(edit, { minLength: 0, maxLength: 3 }).map((edits) => {
    let out = structuredClone(example);
    for (const e of edits) out = mutateAt(out, e.path, e.replacement, e.drop);
    return out;
  });
}

/** Text edits of a serialized example: cut at a point, a span deleted, or a string spliced in. */
export function textMutation(text: string): fc.Arbitrary<string> {
  const at = fc.nat(Math.max(0, text.length));
  return fc.oneof(
    fc.constant(text),
    at.map((i) => text.slice(0, i)),
    fc.tuple(at, at).map(([a, b]) => text.slice(0, Math.min(a, b)) + text.slice(Math.max(a, b))),
    fc
      .tuple(at, fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom("\uFEFF", "\r\n", "\u0000", '"', "}", "]", ",", "é", "\uD83D")))
      .map(([i, s]) => text.slice(0, i) + s + text.slice(i)),
  );
}

/** A loopback HTTP server whose handler tests swap per run (real sockets, no mocks). */
export interface Loopback {
  url: string;
  handler: (req: IncomingMessage & { body: string }, res: ServerResponse) => void | Promise<void>;
  hits: number;
  close(): Promise<void>;
}

export async function startLoopback(): Promise<Loopback> {
  const state: Loopback = {
    url: "",
    hits: 0,
    handler: (_req, res) => {
      res.writeHead(500);
      res.end();
    },
    close: async () => {},
  };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    state.hits++;
    try {
      await state.handler(Object.assign(req, { body: Buffer.concat(chunks).toString("utf8") }), res);
    } catch {
      res.destroy();
    }
  });
  // each run answers and closes: no keep-alive sockets left between runs
  server.keepAliveTimeout = 1;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  state.url = `http://127.0.0.1:${port}/api/v1`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

/** Writes `body` in the given pieces (byte boundaries chosen by the property), each flushed separately. */
export async function writeInPieces(res: ServerResponse, body: Uint8Array, cuts: number[]): Promise<void> {
  const points = [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b);
  let from = 0;
  for (const p of [...points, body.length]) {
    if (p <= from) continue;
    if (!res.write(body.subarray(from, p))) await new Promise((r) => res.once("drain", r));
    await new Promise((r) => setImmediate(r));
    from = p;
  }
  res.end();
}

/** Splits bytes at the given points into a ReadableStream, one chunk per piece (a read per piece). */
export function streamOf(body: Uint8Array, cuts: number[]): ReadableStream<Uint8Array> {
  const points = [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b);
  const pieces: Uint8Array[] = [];
  let from = 0;
  for (const p of [...points, body.length]) {
    if (p <= from) continue;
    pieces.push(body.slice(from, p));
    from = p;
  }
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = pieces.shift();
      if (next) controller.enqueue(next);
      else controller.close();
    },
  });
}
