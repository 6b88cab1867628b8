/**
 * `paymentApprovalMiddleware`: the question `PaymentPolicy({ approve })` asks before each signature, asked
 * through the agent run's own `interrupt()`. A graph with a checkpointer pauses at the payment, with the offer
 * exactly as it would be signed; a person answers with `new Command({ resume: true | false })`.
 *
 *   const approval = paymentApprovalMiddleware();
 *   const policy = new PaymentPolicy({ ..., approve: approval.approve });
 *   createAgent({ model, tools, middleware: [approval], checkpointer });
 *
 * `approve` pauses only inside a model or tool call of a run this middleware is in (it marks the run's
 * `configurable`); anywhere else it refuses: deny by default. A refusal ends the run with a final message (or is
 * answered to the model as a tool message, when a tool's payment was refused), or is the `PaymentPolicyError`
 * itself with `onRefused: "error"`.
 */
import type { AgentMiddleware, WrapModelCallHook, WrapToolCallHook } from "langchain";
import { AIMessage, ToolMessage } from "@langchain/core/messages";
import { interrupt } from "@langchain/langgraph";
import { ConfigurationError, PaymentPolicyError } from "../http/errors.js";
import type { PaymentApprovalRequest } from "../x402/policy.js";
import { runConfigurable, withRunConfigurable } from "./run-budget.js";

/** What `interrupt()` carries at a payment: the offer, as it would be signed. Resume with true or false. */
export interface PaymentApprovalInterrupt extends PaymentApprovalRequest {
  type: "payment_approval";
}

export interface PaymentApprovalOptions {
  /** a refused payment: "end" the run with a final message (default), or "error" (the PaymentPolicyError) */
  onRefused?: "end" | "error";
}

export type PaymentApprovalMiddleware = AgentMiddleware & {
  /** give this to `PaymentPolicy({ approve })` */
  approve: (request: PaymentApprovalRequest) => Promise<boolean>;
};

/** the `configurable` key that marks a call of a run this middleware is in */
const MARK = "__service_payment_approval";

const refusedByApproval = (err: unknown): err is PaymentPolicyError => err instanceof PaymentPolicyError && err.rule === "approval";

export function paymentApprovalMiddleware(options: PaymentApprovalOptions = {}): PaymentApprovalMiddleware {
  if (!options || typeof options !== "object") throw new ConfigurationError("paymentApprovalMiddleware takes an options object");
  if (options.onRefused !== undefined && options.onRefused !== "end" && options.onRefused !== "error") {
    throw new ConfigurationError('paymentApprovalMiddleware.onRefused must be "end" or "error"');
  }
  const token = Symbol("payment approval");
  const ending = options.onRefused !== "error";

  const approve = async (request: PaymentApprovalRequest): Promise<boolean> => {
    if (runConfigurable()?.[MARK] !== token) return false;
    const answer = interrupt<PaymentApprovalInterrupt, unknown>({ type: "payment_approval", ...request });
    return answer === true || (answer as { approve?: unknown } | null)?.approve === true;
  };

  return {
    // the shape `createMiddleware` makes (langchain's MIDDLEWARE_BRAND); see spend-limit.ts
    [Symbol.for("AgentMiddleware")]: true,
    name: "PaymentApprovalMiddleware",
    approve,

    wrapModelCall: (async (request, handler) => {
      try {
        return await withRunConfigurable("PaymentApprovalMiddleware.mark", { [MARK]: token }, () => handler(request));
      } catch (err) {
        if (!ending || !refusedByApproval(err)) throw err;
        return new AIMessage({
          content: `Stopped: a payment was not approved, so nothing was paid and nothing more was sent. (${err.message})`,
          additional_kwargs: { payment_approval: { approved: false } },
        });
      }
    }) satisfies WrapModelCallHook<undefined>,

    wrapToolCall: (async (request, handler) => {
      try {
        return await withRunConfigurable("PaymentApprovalMiddleware.mark", { [MARK]: token }, () => handler(request));
      } catch (err) {
        if (!ending || !refusedByApproval(err)) throw err;
        return new ToolMessage({
          content: `Not run: its payment was not approved; nothing was paid. Go on without ${request.toolCall.name}.`,
          tool_call_id: request.toolCall.id ?? "",
          name: request.toolCall.name,
          status: "error",
          additional_kwargs: { payment_approval: { approved: false } },
        });
      }
    }) satisfies WrapToolCallHook<undefined>,
  } as unknown as PaymentApprovalMiddleware;
}
