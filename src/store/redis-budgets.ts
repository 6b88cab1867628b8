/**
 * Spend budgets of a fleet in Redis: one Lua script per operation, so "does it fit?" and "reserve it" are one
 * atomic step for any number of processes. Same semantics as `memory-budgets.ts`; the contract tests run both.
 * `RedisStore` delegates here, through its `#run` (bounded wait, typed error).
 *
 * Key (under the store's prefix, declared to Redis so that a client's own `keyPrefix` applies):
 *   budget:<name>  hash  `spent`, `reserved` (nano-dollars, integers: HINCRBY keeps the sums exact) and
 *                        `r:<reservation>` -> its amount; TTL `ttlMs` from the last use
 */
import type { Cluster, Redis } from "ioredis";
import type { BudgetFigures, BudgetReserveRequest } from "./types.js";
import { scriptedWith } from "./redis-limits.js";

type Client = Redis | Cluster;

/** ARGV: limit, amount, reservation, ttlMs. Returns { ok 0|1, spent, reserved }. */
const RESERVE = `
local K = KEYS[1]
local limit, amount, rid, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local spent = tonumber(redis.call('HGET', K, 'spent') or '0')
local reserved = tonumber(redis.call('HGET', K, 'reserved') or '0')
local ok = 0
if spent + reserved + amount <= limit then
  reserved = redis.call('HINCRBY', K, 'reserved', ARGV[2])
  redis.call('HSET', K, 'r:' .. rid, ARGV[2])
  ok = 1
end
redis.call('PEXPIRE', K, ttl)
return { ok, tostring(spent), tostring(reserved) }
`;

/** ARGV: reservation, actual (empty: release), ttlMs. Returns { spent, reserved }. */
const SETTLE = `
local K = KEYS[1]
local rid, actual, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local held = redis.call('HGET', K, 'r:' .. rid)
if held then
  redis.call('HDEL', K, 'r:' .. rid)
  redis.call('HINCRBY', K, 'reserved', '-' .. held)
  if actual ~= '' then redis.call('HINCRBY', K, 'spent', actual) end
end
if redis.call('EXISTS', K) == 1 then redis.call('PEXPIRE', K, ttl) end
return { tostring(redis.call('HGET', K, 'spent') or '0'), tostring(redis.call('HGET', K, 'reserved') or '0') }
`;

const COMMANDS = {
  lcsBudgetReserve: { lua: RESERVE, numberOfKeys: 1 },
  lcsBudgetSettle: { lua: SETTLE, numberOfKeys: 1 },
} as const;
const scripted = (client: Client) => scriptedWith(client, COMMANDS);

const budgetKey = (prefix: string, key: string) => `${prefix}budget:${key}`;
/** nano-dollars travel as integer strings: never in exponent form */
const int = (n: number) => BigInt(Math.round(n)).toString();

export async function budgetReserve(
  client: Client,
  prefix: string,
  key: string,
  r: BudgetReserveRequest,
): Promise<BudgetFigures & { ok: boolean }> {
  const [ok, spent, reserved] = (await scripted(client).lcsBudgetReserve(
    budgetKey(prefix, key),
    int(r.limitNano),
    int(r.amountNano),
    r.reservation,
    Math.ceil(r.ttlMs),
  )) as [number, string, string];
  return { ok: Number(ok) === 1, spentNano: Number(spent), reservedNano: Number(reserved) };
}

export async function budgetSettle(
  client: Client,
  prefix: string,
  key: string,
  reservation: string,
  actualNano: number | undefined,
  ttlMs: number,
): Promise<BudgetFigures> {
  const [spent, reserved] = (await scripted(client).lcsBudgetSettle(
    budgetKey(prefix, key),
    reservation,
    actualNano === undefined ? "" : int(actualNano),
    Math.ceil(ttlMs),
  )) as [string, string];
  return { spentNano: Number(spent), reservedNano: Number(reserved) };
}

export async function budgetFigures(client: Client, prefix: string, key: string): Promise<BudgetFigures> {
  const [spent, reserved] = (await client.hmget(budgetKey(prefix, key), "spent", "reserved")) as [string | null, string | null];
  return { spentNano: Number(spent ?? 0), reservedNano: Number(reserved ?? 0) };
}
