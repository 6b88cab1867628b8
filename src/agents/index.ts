/** Agent middleware for langchain's `createAgent`: spend limits inside the loop, payment approval as a pause. */
export {
  spendLimitMiddleware,
  SPEND_WARNING_EVENT,
  SPEND_LIMIT_KEY,
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
