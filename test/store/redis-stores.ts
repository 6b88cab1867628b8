/**
 * What the store contract files share: a redis-server for the file's tests (started when one can run, stopped after
 * the file) and the `RedisStore` clients a test opens on it, all closed after the file.
 */
import { afterAll, beforeAll } from "vitest";
import { RedisStore, type RedisStoreOptions } from "../../src/store/redis.js";
import { redisAvailable, startRedis, type TestRedis } from "./redis-server.js";

export function redisStores() {
  let redis: TestRedis | undefined;
  const stores: RedisStore[] = [];
  beforeAll(async () => {
    if (redisAvailable) redis = await startRedis();
  });
  afterAll(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
    await redis?.stop();
  });
  /** the file's redis-server (its tests run only where `redisAvailable`) */
  const server = (): TestRedis => {
    if (!redis) throw new Error("no redis-server for this file (run its tests only where redisAvailable)");
    return redis;
  };
  /** a client on a fresh prefix, or on `settings.prefix` to share one (as two processes of a fleet do) */
  const store = (settings: Partial<RedisStoreOptions> = {}): RedisStore => {
    const s = new RedisStore({ url: server().url, prefix: server().prefix(), ...settings });
    stores.push(s);
    return s;
  };
  return { server, store };
}
