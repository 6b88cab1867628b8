export { MemoryStore, defaultStore } from "./memory.js";
export type { PaymentStore, SpendScope, SpendCandidate, SpendRequest, SpendOutcome } from "./types.js";
