/**
 * The fleet store: wallet budgets and payee pins in one Redis, so any number of processes paying from one wallet
 * share one budget and one pin per network. Each method is one Lua script, run by Redis as one atomic step (no
 * read-then-write race between processes), and behaves as `MemoryStore` does: the rolling period, several scopes
 * per reservation, candidates in order of preference, dry run, release undoing the pins it set.
 *
 * Keys (all under `prefix`, default `lcs:`, and every one with a TTL, so a Redis serving many fleets keeps
 * nothing it no longer needs):
 *   scope:<scope>  hash   `keep` (the longest period asked, ms) and `pin:<network>` -> payee
 *                         TTL keep + lease; pinTtlMs (default 30 days) from the last payment of a pinning scope
 *   spend:<scope>  zset   `<reservation>|<n>|<usd>` scored by the caller's `now`; older than `keep` is pruned
 *                         TTL keep + lease, renewed by each reservation
 *   res:<id>       string what an uncommitted reservation recorded (to undo it); TTL keep + lease, deleted on commit
 *   leases         zset   uncommitted reservation ids scored by their deadline on Redis's clock; TTL as res:<id>
 *
 * Fail closed: any Redis error, an unreachable server or no answer within `timeoutMs` rejects with a
 * `StoreUnavailableError`, so the payment layer signs nothing (a reservation is made before signing, committed
 * before sending).
 *
 * Leases: a reservation that is neither committed nor released (its process died between reserve and sign) is
 * undone once its lease (`leaseMs`, default 5 min) has passed on Redis's clock, by the next script that runs.
 * That is safe for money because the payment layer sends a signed payment only after `commitSpend` succeeded,
 * and `commitSpend` after the lease fails (and undoes the reservation): every payment that can reach the
 * service is counted, and a reservation that was never committed means nothing was sent. The lease only has to
 * outlast the time from reserve to commit (payment events, signing: seconds); a dead process holds its
 * reservation for at most that long.
 */
import type { Cluster, Redis, RedisOptions } from "ioredis";
import { ConfigurationError, StoreUnavailableError } from "../http/errors.js";
import { capDetail, dryRunDetail, payeeDetail, round6 } from "./details.js";
import type {
  BudgetFigures,
  BudgetReserveRequest,
  LeaseOutcome,
  PaymentStore,
  PendingPaymentRecord,
  SpendOutcome,
  SpendRequest,
  TopUpEnd,
  TopUpState,
} from "./types.js";
import * as limits from "./redis-limits.js";
import * as budgets from "./redis-budgets.js";
import type {
  GuardGrant,
  GuardRelease,
  GuardRequest,
  PaceGrant,
  PaceObservation,
  PaceRequest,
  SlotGrant,
  SlotRequest,
} from "../http/shared-limits.js";

/** An ioredis client (standalone, Sentinel) or cluster. */
export type RedisClient = Redis | Cluster;

export interface RedisStoreSettings {
  /** key prefix (default `lcs:`): give each fleet its own */
  prefix?: string;
  /** how long an uncommitted reservation holds budget, in ms (default 300000) */
  leaseMs?: number;
  /** how long payee pins are remembered after the last payment, in ms (default 30 days; never less than the period) */
  pinTtlMs?: number;
  /** a store call with no answer within this many ms fails closed (default 5000) */
  timeoutMs?: number;
}

export interface RedisStoreOptions extends RedisStoreSettings {
  /** `redis://[[user]:password@]host:port[/db]` or `rediss://` (TLS); the password never appears in errors */
  url: string;
  /** more ioredis options for the client the store creates (TLS, timeouts…; every call stays bounded by timeoutMs) */
  redis?: RedisOptions;
}

const DEFAULTS = { prefix: "lcs:", leaseMs: 300_000, pinTtlMs: 30 * 24 * 60 * 60_000, timeoutMs: 5000 };

// ---- Lua -------------------------------------------------------------------------------------------------
// KEYS[1] is `<prefix>leases`; every other key is built from the same prefix, read back from KEYS[1], so that a
// client's own ioredis `keyPrefix` (applied to declared keys only) applies to all of them. Keys are built in the
// script because a release must find the scopes its reservation touched: one Redis (standalone, replicated or
// Sentinel); on a Redis Cluster, put a hash tag in the prefix (`lcs:{fleet}:`) so that every key is in one slot.
const PRELUDE = `
local LEASES = KEYS[1]
local P = string.sub(LEASES, 1, #LEASES - 6)
local function num(x) return string.format('%.17g', x) end
local function int(x) return string.format('%d', math.ceil(x)) end
local function scopeKey(s) return P .. 'scope:' .. s end
local function spendKey(s) return P .. 'spend:' .. s end
local function resKey(id) return P .. 'res:' .. id end
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function round6(x) return math.floor(x * 1e6 + 0.5) / 1e6 end
-- renews a TTL, never shortens it (PTTL: -1 no TTL, -2 no key)
local function keepFor(key, ms)
  ms = math.min(ms, 315360000000)
  local t = redis.call('PTTL', key)
  if t ~= -2 and t < ms then redis.call('PEXPIRE', key, int(ms)) end
end
-- undoes an uncommitted reservation: its spend records, and the pins it set if they are still its own
local function undo(id)
  local raw = redis.call('GET', resKey(id))
  if raw then
    local r = cjson.decode(raw)
    for i, s in ipairs(r.scopes) do redis.call('ZREM', spendKey(s), r.members[i]) end
    for _, p in ipairs(r.pins) do
      if redis.call('HGET', scopeKey(p[1]), 'pin:' .. p[2]) == p[3] then redis.call('HDEL', scopeKey(p[1]), 'pin:' .. p[2]) end
    end
    redis.call('DEL', resKey(id))
  end
  redis.call('ZREM', LEASES, id)
end
-- leases past their deadline (Redis's clock): their process never committed nor released them
local function reap()
  local dead = redis.call('ZRANGEBYSCORE', LEASES, '-inf', nowMs(), 'LIMIT', 0, 64)
  for _, id in ipairs(dead) do undo(id) end
end
local function spent(scope, periodMs, now)
  local sum = 0
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', spendKey(scope), '(' .. num(now - periodMs), '+inf')) do
    sum = sum + tonumber(string.match(m, '([^|]*)$'))
  end
  return round6(sum)
end
`;

/** ARGV: request JSON, reservation id, leaseMs, pinTtlMs. Returns the outcome as JSON. */
const RESERVE = `${PRELUDE}
reap()
local q = cjson.decode(ARGV[1])
local id, leaseMs, pinTtl = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local now, scopes, candidates = q.now, q.scopes, q.candidates
local keeps = {}
for j, sc in ipairs(scopes) do
  local k = tonumber(redis.call('HGET', scopeKey(sc.key), 'keep') or '0')
  if sc.periodMs > k then
    k = sc.periodMs
    redis.call('HSET', scopeKey(sc.key), 'keep', num(k))
  end
  keeps[j] = k
  keepFor(scopeKey(sc.key), k + leaseMs)
end
-- pins: the first candidate every pinning scope accepts
local index, clash = nil, nil
for i, c in ipairs(candidates) do
  local bad = nil
  for j, sc in ipairs(scopes) do
    if sc.pin then
      local p = redis.call('HGET', scopeKey(sc.key), 'pin:' .. c.network)
      if p and p ~= c.payTo then bad = { j - 1, p } break end
    end
  end
  if not bad then index = i break end
  if not clash then clash = { i - 1, bad[1], bad[2] } end
end
if not index then return cjson.encode({ rule = 'payee', candidate = clash[1], scope = clash[2], pinned = clash[3] }) end
-- budgets: every scope's rolling period
local c = candidates[index]
local usd = tonumber(c.usd)
for j, sc in ipairs(scopes) do
  redis.call('ZREMRANGEBYSCORE', spendKey(sc.key), '-inf', num(now - keeps[j]))
  local s = spent(sc.key, sc.periodMs, now)
  if s + usd > tonumber(sc.capUsd) + 1e-9 then
    return cjson.encode({ rule = 'maxPerPeriod', index = index - 1, scope = j - 1, spent = num(s) })
  end
end
if q.dryRun then return cjson.encode({ rule = 'dryRun', index = index - 1 }) end
-- reserve and pin
local keys, members, pins, longest = {}, {}, {}, 0
for j, sc in ipairs(scopes) do
  local m = id .. '|' .. (j - 1) .. '|' .. c.usd
  redis.call('ZADD', spendKey(sc.key), num(now), m)
  keepFor(spendKey(sc.key), keeps[j] + leaseMs)
  keys[j], members[j] = sc.key, m
  if sc.pin then
    if not redis.call('HGET', scopeKey(sc.key), 'pin:' .. c.network) then
      redis.call('HSET', scopeKey(sc.key), 'pin:' .. c.network, c.payTo)
      pins[#pins + 1] = { sc.key, c.network, c.payTo }
    end
    -- a pin is remembered for pinTtlMs after the last payment to it
    keepFor(scopeKey(sc.key), math.max(keeps[j] + leaseMs, pinTtl))
  end
  if keeps[j] > longest then longest = keeps[j] end
end
-- the undo record lives as long as the records it names
local ttl = math.min(longest + leaseMs, 315360000000)
redis.call('SET', resKey(id), cjson.encode({ scopes = keys, members = members, pins = pins }), 'PX', int(ttl))
redis.call('ZADD', LEASES, num(nowMs() + leaseMs), id)
keepFor(LEASES, ttl)
return cjson.encode({ ok = true, index = index - 1 })
`;

/** ARGV: reservation id. */
const RELEASE = `${PRELUDE}
undo(ARGV[1])
return 1
`;

/**
 * ARGV: reservation id. 1 when committed; 0 when its lease has run out (then it is undone, if it was not yet):
 * the budget is held for exactly the lease, and a payment committed later is not sent.
 */
const COMMIT = `${PRELUDE}
local id = ARGV[1]
local deadline = redis.call('ZSCORE', LEASES, id)
if not deadline or tonumber(deadline) <= nowMs() or redis.call('EXISTS', resKey(id)) == 0 then
  undo(id)
  return 0
end
redis.call('ZREM', LEASES, id)
redis.call('DEL', resKey(id))
return 1
`;

/** ARGV: scope, periodMs, now. The sum as a string (a Lua number reply would be truncated to an integer). */
const SPENT = `${PRELUDE}
reap()
return num(spent(ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])))
`;

/** ARGV: scope. The scope hash, flat. */
const PINS = `${PRELUDE}
reap()
return redis.call('HGETALL', scopeKey(ARGV[1]))
`;

// ---- top-up single flight: one hash per wallet, `topup:<wallet>` ------------------------------------------
//   epoch        completed top-ups
//   fence        the last lease token handed out (only grows; never below Redis's clock in 0.1 ms, see ACQUIRE_LEASE)
//   lease        the holder's token, `leaseUntil` its deadline on Redis's clock (an expired lease is free)
//   pending      a signed payment whose outcome is unknown (JSON), `pendingId`, `pendingUntil` (its expiry, ms)
//   resolved     JSON list of the latest (16) pending ids cleared by END_TOPUP (their outcome is known)
// TTL: a week from the last write, and never less than a pending payment's expiry plus PENDING_GRACE_MS.
const TOPUP = `${PRELUDE}
local GRACE, KEEP = 600000, 604800000
local function topUpKey(w) return P .. 'topup:' .. w end
local function state(k, now)
  local h = redis.call('HMGET', k, 'epoch', 'lease', 'leaseUntil', 'pending', 'pendingUntil')
  local s = { epoch = tonumber(h[1] or '0'), leased = (h[2] ~= false and tonumber(h[3]) > now) }
  if h[4] and tonumber(h[5]) + GRACE > now then s.pending = h[4] end
  return s
end
local function holds(k, token, now)
  return redis.call('HGET', k, 'lease') == token and tonumber(redis.call('HGET', k, 'leaseUntil') or '0') > now
end
`;

/** ARGV: wallet, ttlMs. The state as JSON, with `token` when the lease was taken. */
const ACQUIRE_LEASE = `${TOPUP}
local k, now = topUpKey(ARGV[1]), nowMs()
local s = state(k, now)
if s.leased then return cjson.encode(s) end
-- tokens never repeat, even after this hash was lost (FLUSHDB, a failover that missed it, its TTL): a counter
-- restarted at 1 would hand a lapsed holder's token to the next one. At least Redis's clock in tenths of a ms (14
-- digits, exact in cjson's 14-digit numbers), so a token after a loss is above every token handed out before it,
-- even one handed out in the same millisecond (in whole ms, a lease taken again at once repeated the lost one's).
local t = redis.call('TIME')
local token = math.max(tonumber(redis.call('HGET', k, 'fence') or '0') + 1, tonumber(t[1]) * 10000 + math.floor(tonumber(t[2]) / 100))
redis.call('HSET', k, 'fence', int(token), 'lease', int(token), 'leaseUntil', int(now + tonumber(ARGV[2])))
keepFor(k, KEEP)
s.token = token
s.leased = true
local resolved = redis.call('HGET', k, 'resolved')
if resolved then s.resolved = cjson.decode(resolved) end
return cjson.encode(s)
`;

/** ARGV: wallet, token, ttlMs. 1 when renewed. */
const RENEW_LEASE = `${TOPUP}
local k, now = topUpKey(ARGV[1]), nowMs()
if not holds(k, ARGV[2], now) then return 0 end
redis.call('HSET', k, 'leaseUntil', int(now + tonumber(ARGV[3])))
keepFor(k, KEEP)
return 1
`;

/** ARGV: wallet, token, record id, record JSON, expiresAt. 1 when written under the lease. */
const PUT_PENDING = `${TOPUP}
local k, now = topUpKey(ARGV[1]), nowMs()
if not holds(k, ARGV[2], now) then return 0 end
redis.call('HSET', k, 'pending', ARGV[4], 'pendingId', ARGV[3], 'pendingUntil', ARGV[5])
keepFor(k, math.max(KEEP, tonumber(ARGV[5]) - now + GRACE))
return 1
`;

/** ARGV: wallet, token, pending id to clear ('' for none), '1' when settled. The state after, as JSON. */
const END_TOPUP = `${TOPUP}
local k, now = topUpKey(ARGV[1]), nowMs()
if ARGV[3] ~= '' and redis.call('HGET', k, 'pendingId') == ARGV[3] then
  redis.call('HDEL', k, 'pending', 'pendingId', 'pendingUntil')
  -- remembered (the latest 16), so that a process whose memory still holds it learns its outcome is known
  local list = cjson.decode(redis.call('HGET', k, 'resolved') or '[]')
  list[#list + 1] = ARGV[3]
  while #list > 16 do table.remove(list, 1) end
  redis.call('HSET', k, 'resolved', cjson.encode(list))
end
if ARGV[4] == '1' then redis.call('HINCRBY', k, 'epoch', 1) end
if redis.call('HGET', k, 'lease') == ARGV[2] then redis.call('HDEL', k, 'lease', 'leaseUntil') end
if redis.call('EXISTS', k) == 1 then keepFor(k, KEEP) end
return cjson.encode(state(k, now))
`;

/** ARGV: wallet. The state as JSON. */
const TOPUP_STATE = `${TOPUP}
return cjson.encode(state(topUpKey(ARGV[1]), nowMs()))
`;

/** The scripts as ioredis commands (EVALSHA, falling back to EVAL when the server does not know the script). */
const COMMANDS = {
  lcsReserveSpend: RESERVE,
  lcsReleaseSpend: RELEASE,
  lcsCommitSpend: COMMIT,
  lcsSpentUsd: SPENT,
  lcsPins: PINS,
  lcsAcquireTopUpLease: ACQUIRE_LEASE,
  lcsRenewTopUpLease: RENEW_LEASE,
  lcsPutPendingPayment: PUT_PENDING,
  lcsEndTopUp: END_TOPUP,
  lcsTopUpState: TOPUP_STATE,
} as const;
type Scripted = { [K in keyof typeof COMMANDS]: (leasesKey: string, ...args: (string | number)[]) => Promise<unknown> };

type Reply =
  | { ok: true; index: number }
  | { rule: "payee"; candidate: number; scope: number; pinned: string }
  | { rule: "maxPerPeriod"; index: number; scope: number; spent: string }
  | { rule: "dryRun"; index: number };

function positive(name: string, v: number | undefined): void {
  if (v !== undefined && !(Number.isFinite(v) && v > 0)) throw new ConfigurationError(`RedisStore: ${name} must be a positive number`);
}

function missingModule(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND";
}

export class RedisStore implements PaymentStore {
  readonly prefix: string;
  readonly leaseMs: number;
  readonly pinTtlMs: number;
  readonly timeoutMs: number;
  readonly #leasesKey: string;
  /** the client's promise: created lazily from the URL (ioredis loads on first use), or given */
  #client?: Promise<RedisClient>;
  readonly #url?: string;
  readonly #redisOptions?: RedisOptions;
  /** what must never appear in an error: the password (of the URL or of the ioredis options) */
  readonly #secrets: string[] = [];
  /** the created client's last connection error, for the message of the next failure */
  #lastError?: Error;
  #closed = false;

  constructor(options: RedisStoreOptions);
  /** @internal (use `RedisStore.fromClient`) */
  constructor(options: RedisStoreSettings & { url?: string; redis?: RedisOptions }, client: RedisClient);
  constructor(options: RedisStoreSettings & { url?: string; redis?: RedisOptions }, client?: RedisClient) {
    if (!options || typeof options !== "object")
      throw new ConfigurationError("RedisStore: pass { url } or use RedisStore.fromClient(client)");
    positive("leaseMs", options.leaseMs);
    positive("pinTtlMs", options.pinTtlMs);
    positive("timeoutMs", options.timeoutMs);
    this.prefix = options.prefix ?? DEFAULTS.prefix;
    if (typeof this.prefix !== "string") throw new ConfigurationError("RedisStore: prefix must be a string");
    this.leaseMs = options.leaseMs ?? DEFAULTS.leaseMs;
    this.pinTtlMs = options.pinTtlMs ?? DEFAULTS.pinTtlMs;
    this.timeoutMs = options.timeoutMs ?? DEFAULTS.timeoutMs;
    this.#leasesKey = `${this.prefix}leases`;
    if (client) {
      this.#client = Promise.resolve(RedisStore.#define(client));
      return;
    }
    if (typeof options.url !== "string" || !/^rediss?:\/\//.test(options.url)) {
      throw new ConfigurationError("RedisStore: url must be a redis:// or rediss:// URL (or use RedisStore.fromClient(client))");
    }
    let parsed: URL;
    try {
      parsed = new URL(options.url);
    } catch {
      throw new ConfigurationError("RedisStore: url is not a valid URL");
    }
    if (parsed.password) this.#secrets.push(parsed.password, decodeURIComponent(parsed.password));
    if (options.redis?.password) this.#secrets.push(options.redis.password);
    this.#url = options.url;
    this.#redisOptions = options.redis;
  }

  /** A store on a client you made (its options, TLS, Sentinel or cluster); `close()` leaves it open. */
  static fromClient(client: RedisClient, settings: RedisStoreSettings = {}): RedisStore {
    if (!client || typeof (client as { defineCommand?: unknown }).defineCommand !== "function") {
      throw new ConfigurationError("RedisStore.fromClient: expects an ioredis client (Redis or Cluster)");
    }
    return new RedisStore(settings, client);
  }

  static #define(client: RedisClient): RedisClient {
    for (const [name, lua] of Object.entries(COMMANDS)) client.defineCommand(name, { lua, numberOfKeys: 1 });
    return client;
  }

  #connect(): Promise<RedisClient> {
    return (this.#client ??= (async () => {
      let mod: { Redis?: unknown; default?: unknown };
      try {
        mod = await import("ioredis");
      } catch (err) {
        if (!missingModule(err)) throw err;
        throw new ConfigurationError("RedisStore needs its optional package: npm install ioredis", { cause: err });
      }
      const Client = (mod.Redis ?? mod.default) as unknown as new (url: string, options: RedisOptions) => Redis;
      const client = new Client(this.#url!, {
        // a command waits for a connection through one reconnect at most: a payment is refused, not queued
        maxRetriesPerRequest: 1,
        connectTimeout: this.timeoutMs,
        ...this.#redisOptions,
      });
      // every failure reaches the caller of the store method; without a listener ioredis prints each one
      client.on("error", (err: Error) => (this.#lastError = err));
      return RedisStore.#define(client);
    })());
  }

  /** A message with the password taken out (ioredis's own messages name host and port only). */
  #redact(text: string): string {
    let out = text;
    for (const s of this.#secrets) out = out.split(s).join("***");
    return out;
  }

  /** Runs one script within `timeoutMs`; anything but an answer is a StoreUnavailableError. */
  async #run<T>(operation: string, call: (client: Scripted) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreUnavailableError(`payment store (Redis) ${operation}: the store was closed`, { operation });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new StoreUnavailableError(`payment store (Redis) ${operation}: no answer within ${this.timeoutMs} ms${this.#lastErrorText()}`, {
              operation,
            }),
          ),
        this.timeoutMs,
      );
    });
    try {
      return await Promise.race([this.#connect().then((client) => call(client as unknown as Scripted)), timeout]);
    } catch (err) {
      if (err instanceof StoreUnavailableError || err instanceof ConfigurationError) throw err;
      // the message only, never the error: an ioredis error may carry its command's arguments (AUTH's password)
      const e = err as { name?: string; message?: string; code?: string } | undefined;
      const last = this.#lastError?.message;
      const detail =
        e?.name === "MaxRetriesPerRequestError" && last
          ? `unreachable (${last})`
          : `${e?.name ?? "Error"}: ${e?.message ?? String(err)}${last && last !== e?.message ? ` (last connection error: ${last})` : ""}`;
      throw new StoreUnavailableError(this.#redact(`payment store (Redis) ${operation} failed: ${detail}`), {
        operation,
        code: typeof e?.code === "string" ? e.code : undefined,
      });
    } finally {
      clearTimeout(timer);
    }
  }

  #lastErrorText(): string {
    const e = this.#lastError;
    return e ? this.#redact(` (last connection error: ${e.message})`) : "";
  }

  async reserveSpend(request: SpendRequest): Promise<SpendOutcome> {
    const { scopes, candidates, now, dryRun } = request;
    const id = globalThis.crypto.randomUUID();
    const payload = JSON.stringify({
      now,
      dryRun: dryRun === true,
      // numbers as text where JSON cannot carry them (an infinite cap), or where the exact text is kept (usd)
      scopes: scopes.map((s) => ({
        key: s.key,
        capUsd: Number.isFinite(s.capUsd) ? String(s.capUsd) : "1e999",
        periodMs: s.periodMs,
        pin: s.pin,
      })),
      candidates: candidates.map((c) => ({ network: c.network, payTo: c.payTo, usd: String(c.amountUsd) })),
    });
    let raw: unknown;
    try {
      raw = await this.#run("reserveSpend", (c) => c.lcsReserveSpend(this.#leasesKey, payload, id, this.leaseMs, this.pinTtlMs));
    } catch (err) {
      // the script may still run after we gave up (a slow server, a reconnect): undo it, queued behind it on
      // the same connection; if neither runs, the lease ends it
      if (!dryRun) void this.#run("releaseSpend", (c) => c.lcsReleaseSpend(this.#leasesKey, id)).catch(() => undefined);
      throw err;
    }
    const reply = JSON.parse(String(raw)) as Reply;
    if ("ok" in reply) return { ok: true, index: reply.index, reservation: id };
    if (reply.rule === "payee") {
      return { ok: false, rule: "payee", detail: payeeDetail(candidates[reply.candidate]!, reply.pinned, scopes[reply.scope]!) };
    }
    const candidate = candidates[reply.index]!;
    if (reply.rule === "maxPerPeriod") {
      return {
        ok: false,
        rule: "maxPerPeriod",
        index: reply.index,
        detail: capDetail(candidate, Number(reply.spent), scopes[reply.scope]!),
      };
    }
    return { ok: false, rule: "dryRun", index: reply.index, detail: dryRunDetail(candidate) };
  }

  async releaseSpend(reservation: string): Promise<void> {
    await this.#run("releaseSpend", (c) => c.lcsReleaseSpend(this.#leasesKey, reservation));
  }

  /**
   * Makes a reservation permanent. Rejects (StoreUnavailableError) when its lease ran out first and it was
   * undone: the payment it was for must then not be sent.
   */
  async commitSpend(reservation: string): Promise<void> {
    const committed = await this.#run("commitSpend", (c) => c.lcsCommitSpend(this.#leasesKey, reservation));
    if (Number(committed) !== 1) {
      throw new StoreUnavailableError(
        `payment store (Redis) commitSpend: the budget reservation's ${this.leaseMs} ms lease ran out before the payment was committed; it was not sent`,
        { operation: "commitSpend" },
      );
    }
  }

  async spentUsd(scope: string, periodMs: number, now: number): Promise<number> {
    return round6(Number(await this.#run("spentUsd", (c) => c.lcsSpentUsd(this.#leasesKey, scope, periodMs, now))));
  }

  async pins(scope: string): Promise<Record<string, string>> {
    const flat = (await this.#run("pins", (c) => c.lcsPins(this.#leasesKey, scope))) as string[];
    const out: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) if (flat[i]!.startsWith("pin:")) out[flat[i]!.slice(4)] = flat[i + 1]!;
    return out;
  }

  // ---- top-up single flight (leases and pending payments on Redis's clock; see the TOPUP script) ----

  static #topUpState(raw: unknown): LeaseOutcome {
    const r = JSON.parse(String(raw)) as { epoch: number; leased: boolean; pending?: string; token?: number; resolved?: unknown };
    const state: TopUpState = { epoch: r.epoch, leased: r.leased === true };
    if (typeof r.pending === "string") state.pending = JSON.parse(r.pending) as PendingPaymentRecord;
    if (r.token === undefined) return state;
    const resolved = Array.isArray(r.resolved) ? r.resolved.filter((x): x is string => typeof x === "string") : [];
    return { ...state, token: r.token, ...(resolved.length ? { resolved } : {}) };
  }

  async acquireTopUpLease(wallet: string, ttlMs: number): Promise<LeaseOutcome> {
    return RedisStore.#topUpState(
      await this.#run("acquireTopUpLease", (c) => c.lcsAcquireTopUpLease(this.#leasesKey, wallet, Math.ceil(ttlMs))),
    );
  }

  async renewTopUpLease(wallet: string, token: number, ttlMs: number): Promise<boolean> {
    return Number(await this.#run("renewTopUpLease", (c) => c.lcsRenewTopUpLease(this.#leasesKey, wallet, token, Math.ceil(ttlMs)))) === 1;
  }

  async putPendingPayment(wallet: string, token: number, record: PendingPaymentRecord): Promise<boolean> {
    const json = JSON.stringify(record);
    return (
      Number(
        await this.#run("putPendingPayment", (c) =>
          c.lcsPutPendingPayment(this.#leasesKey, wallet, token, record.id, json, Math.ceil(record.expiresAt)),
        ),
      ) === 1
    );
  }

  async endTopUp(wallet: string, token: number, end: TopUpEnd): Promise<TopUpState> {
    const { token: _t, ...state } = RedisStore.#topUpState(
      await this.#run("endTopUp", (c) => c.lcsEndTopUp(this.#leasesKey, wallet, token, end.clearPending ?? "", end.settled ? "1" : "0")),
    );
    return state;
  }

  async topUpState(wallet: string): Promise<TopUpState> {
    return RedisStore.#topUpState(await this.#run("topUpState", (c) => c.lcsTopUpState(this.#leasesKey, wallet)));
  }

  /** Closes the client this store created (one given to `fromClient` stays open: it is yours). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#url === undefined || !this.#client) return;
    const client = await this.#client.catch(() => undefined);
    if (!client) return;
    // QUIT lets pending replies arrive; a client that is not connected is only stopped reconnecting
    if (client.status === "ready") await client.quit().catch(() => client.disconnect());
    else client.disconnect();
  }

  toJSON() {
    return { store: "redis", prefix: this.prefix, leaseMs: this.leaseMs, pinTtlMs: this.pinTtlMs, timeoutMs: this.timeoutMs };
  }

  // ---- pacing and guard ----
  // The fleet's rate-limit windows and abuse-guard windows (the `LimitStore` of src/http/shared-limits.ts), one
  // Lua script each in redis-limits.ts. A failure here rejects like any store call; the pacing and guard layers
  // then fall back to per-process limits (they do not fail closed: no money moves on them).

  async acquirePace(key: string, request: PaceRequest): Promise<PaceGrant> {
    return this.#run("acquirePace", (c) => limits.acquirePace(c as unknown as RedisClient, this.prefix, key, request));
  }

  async observePace(key: string, observation: PaceObservation): Promise<void> {
    await this.#run("observePace", (c) => limits.observePace(c as unknown as RedisClient, this.prefix, key, observation));
  }

  async acquireGuard(key: string, request: GuardRequest): Promise<GuardGrant> {
    return this.#run("acquireGuard", (c) => limits.acquireGuard(c as unknown as RedisClient, this.prefix, key, request));
  }

  async releaseGuard(key: string, release: GuardRelease): Promise<void> {
    await this.#run("releaseGuard", (c) => limits.releaseGuard(c as unknown as RedisClient, this.prefix, key, release));
  }

  // A caller's requests in flight across the fleet (a wallet's 5, crypto RPC's one at a time): places with leases.
  async acquireSlot(key: string, request: SlotRequest): Promise<SlotGrant> {
    return this.#run("acquireSlot", (c) => limits.acquireSlot(c as unknown as RedisClient, this.prefix, key, request));
  }

  async renewSlot(key: string, renewal: { now: number; id: string; leaseMs: number }): Promise<boolean> {
    return this.#run("renewSlot", (c) => limits.renewSlot(c as unknown as RedisClient, this.prefix, key, renewal));
  }

  async releaseSlot(key: string, id: string): Promise<void> {
    await this.#run("releaseSlot", (c) => limits.releaseSlot(c as unknown as RedisClient, this.prefix, key, id));
  }

  // ---- spend budgets (redis-budgets.ts): a failure rejects, and the budget refuses the request (fails closed) ----

  async budgetReserve(key: string, request: BudgetReserveRequest): Promise<BudgetFigures & { ok: boolean }> {
    return this.#run("budgetReserve", (c) => budgets.budgetReserve(c as unknown as RedisClient, this.prefix, key, request));
  }

  async budgetSettle(key: string, reservation: string, actualNano: number | undefined, ttlMs: number): Promise<BudgetFigures> {
    return this.#run("budgetSettle", (c) =>
      budgets.budgetSettle(c as unknown as RedisClient, this.prefix, key, reservation, actualNano, ttlMs),
    );
  }

  async budgetFigures(key: string): Promise<BudgetFigures> {
    return this.#run("budgetFigures", (c) => budgets.budgetFigures(c as unknown as RedisClient, this.prefix, key));
  }
}
