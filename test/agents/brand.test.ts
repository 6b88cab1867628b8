/**
 * The middleware objects are built in the shape `createMiddleware` makes, without calling it, so that the main
 * entry loads where `langchain` is not installed. That shape rests on langchain's public `MIDDLEWARE_BRAND`: if
 * langchain ever changes it, this fails before any agent silently ignores the middleware.
 */
import { describe, expect, it } from "vitest";
import { MIDDLEWARE_BRAND, createAgent } from "langchain";
import { paymentApprovalMiddleware, spendLimitMiddleware } from "../../src/agents/index.js";
import { ChatService } from "../../src/index.js";

describe("agent middleware carries langchain's own brand", () => {
  it("spendLimitMiddleware and paymentApprovalMiddleware are branded as createMiddleware's objects are", () => {
    const spend = spendLimitMiddleware({ maxUsd: 1 }) as unknown as Record<symbol, unknown>;
    const approval = paymentApprovalMiddleware() as unknown as Record<symbol, unknown>;
    expect(spend[MIDDLEWARE_BRAND]).toBe(true);
    expect(approval[MIDDLEWARE_BRAND]).toBe(true);
  });

  it("createAgent takes them", () => {
    const model = new ChatService({ model: "emu-s", apiKey: "k", baseUrl: "http://127.0.0.1:9/api/v1" });
    expect(() => createAgent({ model, tools: [], middleware: [spendLimitMiddleware({ maxUsd: 1 })] })).not.toThrow();
  });
});
