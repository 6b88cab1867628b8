/**
 * `langchain-service/redis`: the fleet store. Pass one `RedisStore` as the `store` option of every face (chat
 * model, client, `withX402`) in every process, and they share one budget and one payee pin per wallet.
 * Needs the optional peer `ioredis` (loaded on first use; `RedisStore.fromClient` takes a client you made).
 */
export { RedisStore, type RedisClient, type RedisStoreOptions, type RedisStoreSettings } from "../store/redis.js";
export { StoreUnavailableError } from "../http/errors.js";
export type { PaymentStore, SpendCandidate, SpendOutcome, SpendRequest, SpendScope } from "../store/types.js";
// the pacing and abuse-guard windows a fleet store holds (RedisStore implements it; so may a store of your own)
export type { LimitStore } from "../http/shared-limits.js";
