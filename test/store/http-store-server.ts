/**
 * The server side of `http-store.ts`, run as its own process (`node --import tsx`), shaped like Durable Objects:
 * each call goes to one object, named by the namespace and the key the call routes by, and each object holds
 * only its own state (a MemoryStore of its own) and runs its calls one at a time, in arrival order. Routing
 * (docs/store.md, "A Durable Object store"):
 *   - reserveSpend, releaseSpend, commitSpend, spentUsd, pins -> one object per namespace: a reservation spans
 *     several scopes (wallet and policy) and release/commit name only the reservation;
 *   - the top-up lease methods -> one object per wallet;
 *   - budgets -> one per budget key; pacing, guard and slots -> one per limit key.
 * Prints `listening <port>` once it listens on loopback; exits on SIGTERM or when stdin closes.
 */
import { createServer } from "node:http";
import { MemoryStore } from "../../src/store/memory.js";

const PAYMENTS = new Set(["reserveSpend", "releaseSpend", "commitSpend", "spentUsd", "pins"]);
const TOP_UPS = new Set(["acquireTopUpLease", "renewTopUpLease", "putPendingPayment", "endTopUp", "topUpState"]);
const BUDGETS = new Set(["budgetReserve", "budgetSettle", "budgetFigures"]);
const LIMITS = new Set(["acquirePace", "observePace", "acquireGuard", "releaseGuard", "acquireSlot", "renewSlot", "releaseSlot"]);

function objectName(method: string, ns: string, args: unknown[]): string | undefined {
  if (PAYMENTS.has(method)) return `${ns}#payments`;
  if (TOP_UPS.has(method)) return `${ns}#topup:${String(args[0])}`;
  if (BUDGETS.has(method)) return `${ns}#budget:${String(args[0])}`;
  if (LIMITS.has(method)) return `${ns}#limits:${String(args[0])}`;
  return undefined;
}

interface Obj {
  store: MemoryStore;
  /** the tail of this object's queue: each call starts when the one before it has ended */
  tail: Promise<unknown>;
}
const objects = new Map<string, Obj>();

function run(name: string, method: string, args: unknown[]): Promise<unknown> {
  let obj = objects.get(name);
  if (!obj) objects.set(name, (obj = { store: new MemoryStore(), tail: Promise.resolve() }));
  const store = obj.store as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
  // JSON has no undefined: budgetSettle's absent actual cost (a release) travels as null
  if (method === "budgetSettle" && args[2] === null) args[2] = undefined;
  const next = obj.tail.then(() => store[method]!(...args));
  obj.tail = next.catch(() => undefined);
  return next;
}

const server = createServer((req, res) => {
  let body = "";
  req.on("data", (d: Buffer) => (body += d.toString()));
  req.on("end", () => {
    const answer = (status: number, payload: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(payload));
    };
    const method = (req.url ?? "/").slice(1);
    let parsed: { ns?: unknown; args?: unknown };
    try {
      parsed = JSON.parse(body) as typeof parsed;
    } catch {
      return answer(400, { error: "not JSON" });
    }
    const args = Array.isArray(parsed.args) ? parsed.args : [];
    const name = req.method === "POST" && typeof parsed.ns === "string" ? objectName(method, parsed.ns, args) : undefined;
    if (!name) return answer(404, { error: `no such method: ${method}` });
    run(name, method, args).then(
      (value) => answer(200, { value: value ?? null }),
      (err: Error) => answer(500, { error: `${err.name}: ${err.message}` }),
    );
  });
});

server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === "object" && address ? address.port : 0}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.stdin.on("end", stop);
process.stdin.resume();
