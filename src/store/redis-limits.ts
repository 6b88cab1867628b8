/**
 * Pacing windows and abuse-guard windows of a fleet in Redis: one Lua script per operation, so that "is there
 * room?" and "take it" are one atomic step for any number of processes (a read-then-write from the client would
 * let four processes each see the last free place and all take it). Same semantics as `memory-limits.ts`; the
 * contract tests run both. `RedisStore` delegates here, through its `#run` (bounded wait, typed error).
 *
 * Keys (under the store's prefix, declared to Redis so that a client's own `keyPrefix` applies; every one with a
 * TTL, renewed by use, so a key nobody uses goes away):
 *   pace:<service>|<caller>|<model>  hash  rl ru rr (requests: limit, used by the fleet in the window, reset ms;
 *                                          rr 0: the window reset and its new end is not known yet), tl tu tr
 *                                          (the same for tokens), probe (a probe holds until), unmetered, pause
 *                                          (a 429 holds every send until); TTL ttlMs (2 min) from the last use,
 *                                          longer while a pause runs; ro (when the window rolled)
 *   paceflight:<same>                zset  the fleet's sends in flight (send id) scored by when granted: a window
 *                                          that rolls starts with them counted (they may land in it); TTL
 *                                          flightMs (30 s) + 1 s from the last grant
 *   fail:<origin>|<caller>           zset  failures (send id) scored by time; TTL window + 1 s from the last one
 *   flight:<origin>|<caller>         zset  sends in flight (send id) scored by their lease's end; TTL lease + 1 s
 * Each operation's two keys are used together: on a Redis Cluster put a hash tag in the prefix (`lcs:{fleet}:`), as
 * for the payment keys.
 *
 * Times are the callers' clocks (ms since epoch): the reset instants come from the service's headers, which every
 * caller already reads against its own clock; a fleet on several machines needs them in sync (NTP) anyway.
 */
import type { Cluster, Redis } from "ioredis";
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

type Client = Redis | Cluster;

const PACE_PRELUDE = `
local K, FL = KEYS[1], KEYS[2]
local function num(x) return string.format('%.17g', x) end
local v = redis.call('HMGET', K, 'rl', 'ru', 'rr', 'tl', 'tu', 'tr', 'probe', 'unmetered', 'pause', 'ro')
local rl, ru, rr = tonumber(v[1] or nil), tonumber(v[2] or nil) or 0, tonumber(v[3] or nil) or 0
local tl, tu, tr = tonumber(v[4] or nil), tonumber(v[5] or nil) or 0, tonumber(v[6] or nil) or 0
local probe, unmetered, pause = tonumber(v[7] or nil) or 0, v[8] == '1', tonumber(v[9] or nil) or 0
local ro = tonumber(v[10] or nil) or 0
-- a window is over margin ms after its reset: the next send opens a new one, whose reset an answer will tell;
-- it starts with the sends still in flight counted (they may land in it)
local function roll(now, margin, flightMs)
  if rr > 0 and now >= rr + margin then
    redis.call('ZREMRANGEBYSCORE', FL, '-inf', num(now - flightMs))
    ru = redis.call('ZCARD', FL); rr = 0; ro = now
  end
  if tr > 0 and now >= tr + margin then tu = 0; tr = 0 end
end
local function save(now, ttl)
  redis.call('HSET', K, 'ru', num(ru), 'rr', num(rr), 'tu', num(tu), 'tr', num(tr), 'probe', num(probe), 'pause', num(pause),
    'unmetered', unmetered and '1' or '0', 'ro', num(ro))
  if rl then redis.call('HSET', K, 'rl', num(rl)) end
  if tl then redis.call('HSET', K, 'tl', num(tl)) end
  redis.call('PEXPIRE', K, math.ceil(math.max(ttl, pause - now + 1000)))
end
`;

/** ARGV: now, tokens, marginMs, probeMs, ttlMs, id, flightMs. Returns { granted 0|1, waitMs (-1: until an answer) }. */
const ACQUIRE_PACE = `${PACE_PRELUDE}
local now, tokens, margin, probeMs, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local id, flightMs = ARGV[6], tonumber(ARGV[7])
if now < pause then return { 0, math.ceil(pause - now) } end
if unmetered then return { 1, 0 } end
if not rl then
  -- no limit known: one send (the probe) goes to learn it; the others wait for its answer
  if probe > now then return { 0, -1 } end
  probe = now + probeMs
  save(now, ttl)
  return { 1, 0 }
end
roll(now, margin, flightMs)
local wait = 0
if ru >= rl then
  if rr > 0 then wait = math.ceil(rr + margin - now) else wait = -1 end
end
-- a send without an estimate still needs a token (none left: it waits too); a request larger than a whole
-- token window can never fit: it goes rather than waits forever
local need = math.max(tokens, 1)
if tl and need <= tl and tu + need > tl then
  local w = -1
  if tr > 0 then w = math.ceil(tr + margin - now) end
  if w < 0 or wait < 0 then wait = -1 else wait = math.max(wait, w) end
end
if wait == 0 then
  ru = ru + 1; tu = tu + tokens
  redis.call('ZADD', FL, num(now), id)
  redis.call('PEXPIRE', FL, math.ceil(flightMs + 1000))
end
save(now, ttl)
if wait == 0 then return { 1, 0 } end
return { 0, wait }
`;

/** ARGV: the observation as JSON. */
const OBSERVE_PACE = `${PACE_PRELUDE}
local o = cjson.decode(ARGV[1])
local now = o.now
roll(now, o.marginMs, o.flightMs)
probe = 0
local grantedAt = nil
if o.id then
  grantedAt = tonumber(redis.call('ZSCORE', FL, o.id) or nil)
  redis.call('ZREM', FL, o.id)
end
if o.pauseUntil and o.pauseUntil > pause then pause = o.pauseUntil end
local r = o.requests
-- carried into this window at its roll, but counted by the service in the one before: its place is free
if r and grantedAt and grantedAt < ro and (r.resetAt <= now or (rr > 0 and r.resetAt < rr)) then ru = math.max(0, ru - 1) end
if r then
  unmetered = false
  rl = r.limit
  -- an answer of a window already over tells nothing about the current one; one of a later window moves on
  if r.resetAt > now and (rr == 0 or r.resetAt >= rr) then
    rr = r.resetAt
    -- the service's count can only be above ours (other callers on the key, or sends before the store knew)
    ru = math.max(ru, r.limit - r.remaining)
  end
elseif o.unmetered and not rl then
  unmetered = true
end
local t = o.tokens
if t then
  tl = t.limit
  local resetAt = t.resetAt
  -- the seed's reset-tokens is whole seconds from now: within a second after the requests' exact reset, it is
  -- that one; a live one (Unix ms) is exact and its own window's
  local slack = 1000
  if t.exact then slack = 0 end
  if slack > 0 and rr > 0 and resetAt - rr >= 0 and resetAt - rr <= slack then resetAt = rr end
  if resetAt > now then
    if tr == 0 or resetAt > tr + slack then tr = resetAt end
    if math.abs(resetAt - tr) <= slack then tu = math.max(tu, t.limit - t.remaining) end
  end
end
save(now, o.ttlMs)
return 1
`;

/**
 * KEYS: fail, flight. ARGV: now, id, maxFailures, windowMs, leaseMs. Returns { granted 0|1, waitMs, failures }.
 * A place is granted while failures + sends in flight stay below maxFailures: even if every send in flight
 * fails, the fleet stays within the service's allowance.
 */
const ACQUIRE_GUARD = `
local F, I = KEYS[1], KEYS[2]
local now, id, max, windowMs, leaseMs = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', F, '-inf', string.format('%.17g', now - windowMs))
redis.call('ZREMRANGEBYSCORE', I, '-inf', string.format('%.17g', now))
local f, n = redis.call('ZCARD', F), redis.call('ZCARD', I)
if f + n < max then
  redis.call('ZADD', I, string.format('%.17g', now + leaseMs), id)
  local t = redis.call('PTTL', I)
  if t < leaseMs + 1000 then redis.call('PEXPIRE', I, math.ceil(leaseMs + 1000)) end
  return { 1, 0, f }
end
-- room frees when a send in flight ends
if f < max then return { 0, 25, f } end
-- the failure that must age out for one more send to be safe
local freeing = tonumber(redis.call('ZRANGE', F, f - max, f - max, 'WITHSCORES')[2])
return { 0, math.max(1, math.ceil(freeing + windowMs - now + 1)), f }
`;

/** KEYS: fail, flight. ARGV: now, id, failed (1|0), windowMs. */
const RELEASE_GUARD = `
local F, I = KEYS[1], KEYS[2]
redis.call('ZREM', I, ARGV[2])
if ARGV[3] == '1' then
  redis.call('ZADD', F, ARGV[1], ARGV[2])
  redis.call('PEXPIRE', F, math.ceil(tonumber(ARGV[4]) + 1000))
end
return 1
`;

/**
 * KEYS: slots. ARGV: now, id, limit, leaseMs. Returns { granted 0|1, held }. Requests in flight of one caller (a
 * wallet's 5, crypto RPC's one at a time): a sorted set of ids scored by their lease's end; lapsed ones are dropped
 * first (a process that died holding a place frees it when its lease ends).
 */
const ACQUIRE_SLOT = `
local S = KEYS[1]
local now, id, limit, leaseMs = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', S, '-inf', string.format('%.17g', now))
local n = redis.call('ZCARD', S)
if n >= limit then return { 0, n } end
redis.call('ZADD', S, string.format('%.17g', now + leaseMs), id)
local t = redis.call('PTTL', S)
if t < leaseMs + 1000 then redis.call('PEXPIRE', S, math.ceil(leaseMs + 1000)) end
return { 1, n + 1 }
`;

/** KEYS: slots. ARGV: now, id, leaseMs. Extends a place still held (XX: never re-adds a lapsed one). */
const RENEW_SLOT = `
local S = KEYS[1]
local now, id, leaseMs = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local score = redis.call('ZSCORE', S, id)
if not score or tonumber(score) <= now then return 0 end
redis.call('ZADD', S, 'XX', string.format('%.17g', now + leaseMs), id)
local t = redis.call('PTTL', S)
if t < leaseMs + 1000 then redis.call('PEXPIRE', S, math.ceil(leaseMs + 1000)) end
return 1
`;

const COMMANDS = {
  lcsAcquireSlot: { lua: ACQUIRE_SLOT, numberOfKeys: 1 },
  lcsRenewSlot: { lua: RENEW_SLOT, numberOfKeys: 1 },
  lcsAcquirePace: { lua: ACQUIRE_PACE, numberOfKeys: 2 },
  lcsObservePace: { lua: OBSERVE_PACE, numberOfKeys: 2 },
  lcsAcquireGuard: { lua: ACQUIRE_GUARD, numberOfKeys: 2 },
  lcsReleaseGuard: { lua: RELEASE_GUARD, numberOfKeys: 2 },
} as const;
/** Lua scripts by command name, as ioredis `defineCommand` takes them. */
export type ScriptSet = Record<string, { lua: string; numberOfKeys: number }>;
export type Scripted<C extends ScriptSet> = { [K in keyof C]: (...args: (string | number)[]) => Promise<unknown> };

const defined = new WeakMap<object, WeakSet<ScriptSet>>();
/** A set of scripts as ioredis commands (EVALSHA, EVAL when the server does not know them yet), defined once per client. */
export function scriptedWith<C extends ScriptSet>(client: Client, commands: C): Scripted<C> {
  let sets = defined.get(client);
  if (!sets) defined.set(client, (sets = new WeakSet()));
  if (!sets.has(commands)) {
    for (const [name, def] of Object.entries(commands)) client.defineCommand(name, def);
    sets.add(commands);
  }
  return client as unknown as Scripted<C>;
}

const scripted = (client: Client) => scriptedWith(client, COMMANDS);

const paceKeys = (prefix: string, key: string) => [`${prefix}pace:${key}`, `${prefix}paceflight:${key}`] as const;
const guardKeys = (prefix: string, key: string) => [`${prefix}fail:${key}`, `${prefix}flight:${key}`] as const;

export async function acquirePace(client: Client, prefix: string, key: string, r: PaceRequest): Promise<PaceGrant> {
  const [granted, waitMs] = (await scripted(client).lcsAcquirePace(
    ...paceKeys(prefix, key),
    r.now,
    r.tokens,
    r.marginMs,
    r.probeMs,
    r.ttlMs,
    r.id,
    r.flightMs,
  )) as [number, number];
  return { granted: granted === 1, waitMs: Number(waitMs) };
}

export async function observePace(client: Client, prefix: string, key: string, o: PaceObservation): Promise<void> {
  await scripted(client).lcsObservePace(...paceKeys(prefix, key), JSON.stringify(o));
}

export async function acquireGuard(client: Client, prefix: string, key: string, r: GuardRequest): Promise<GuardGrant> {
  const [fail, flight] = guardKeys(prefix, key);
  const [granted, waitMs, failures] = (await scripted(client).lcsAcquireGuard(
    fail,
    flight,
    r.now,
    r.id,
    r.maxFailures,
    r.windowMs,
    r.leaseMs,
  )) as [number, number, number];
  return { granted: granted === 1, waitMs: Number(waitMs), failures: Number(failures) };
}

export async function releaseGuard(client: Client, prefix: string, key: string, r: GuardRelease): Promise<void> {
  const [fail, flight] = guardKeys(prefix, key);
  await scripted(client).lcsReleaseGuard(fail, flight, r.now, r.id, r.failed ? 1 : 0, r.windowMs);
}

const slotKey = (prefix: string, key: string) => `${prefix}slots:${key}`;

export async function acquireSlot(client: Client, prefix: string, key: string, r: SlotRequest): Promise<SlotGrant> {
  const [granted, held] = (await scripted(client).lcsAcquireSlot(slotKey(prefix, key), r.now, r.id, r.limit, r.leaseMs)) as [
    number,
    number,
  ];
  return { granted: granted === 1, held: Number(held) };
}

export async function renewSlot(
  client: Client,
  prefix: string,
  key: string,
  r: { now: number; id: string; leaseMs: number },
): Promise<boolean> {
  return (await scripted(client).lcsRenewSlot(slotKey(prefix, key), r.now, r.id, r.leaseMs)) === 1;
}

export async function releaseSlot(client: Client, prefix: string, key: string, id: string): Promise<void> {
  await client.zrem(slotKey(prefix, key), id);
}
