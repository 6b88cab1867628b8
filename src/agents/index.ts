/**
 * `langchain-service/agents`: middleware for langchain's `createAgent`, spend limits inside the loop and payment
 * approval as a pause. Its own entry because it imports `@langchain/langgraph` (an optional peer every
 * `createAgent` user has) statically: the main entry never names it, so a bundle of the main entry never has to resolve it.
 */
export { SPEND_WARNING_EVENT, SPEND_LIMIT_KEY } from "./keys.js";
export {
  spendLimitMiddleware,
  type SpendLimitOptions,
  type SpendLimitMiddleware,
  type SpendExhaustedBehavior,
  type SpendLimitInterrupt,
  type SpendLimitResume,
  type SpendWarning,
} from "./spend-limit.js";
export {
  paymentApprovalMiddleware,
  type PaymentApprovalOptions,
  type PaymentApprovalInterrupt,
  type PaymentApprovalMiddleware,
} from "./payment-approval.js";
