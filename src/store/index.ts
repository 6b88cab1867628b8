/** The shared state behind budgets, pins, single flight, pacing and guards: the in-process store (the Redis one is `langchain-service/redis`). */
export { MemoryStore, defaultStore } from "./memory.js";
export type { PaymentStore, SpendScope, SpendCandidate, SpendRequest, SpendOutcome } from "./types.js";
