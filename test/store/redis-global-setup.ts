/**
 * Vitest global setup: says once per run how to enable the Redis store suite when no server can be had, and
 * fails the run instead when `REQUIRE_REDIS=1` (CI installs redis-server and sets it).
 */
import { HOW_TO_ENABLE, REQUIRE_REDIS, redisAvailable } from "./redis-server.js";

export default function setup(): void {
  if (redisAvailable) return;
  if (REQUIRE_REDIS) throw new Error(`REQUIRE_REDIS=1 but no redis-server on PATH and no REDIS_URL: the Redis store suite cannot run`);
  console.warn(HOW_TO_ENABLE);
}
