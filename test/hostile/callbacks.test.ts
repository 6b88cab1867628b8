/**
 * Payment events reach LangChain callbacks (point 9), in a process that did not load
 * `@langchain/core/callbacks/dispatch` itself: imported from the package's entry, as a user would.
 */
import { RunnableLambda } from "@langchain/core/runnables";
import { describe, expect, it } from "vitest";
import { ChatService, PaymentSpendHandler, ServiceClient } from "../../src/index.js";
import { EvmWallet } from "../../src/evm/index.js";
import { PAYEE_A, authorizationOf, completed, json, offer, paymentRequired, hostileServers, toppedUp } from "./server.js";

const hostile = hostileServers();
const isTopUp = (url: string) => url.split("?")[0]!.endsWith("/x402/top-up");
const quick = { topUp: { topUpTimeoutMs: 400, maxResends: 1, resendDelayMs: 10 }, retry: false as const, pacing: false as const };

describe("9. payment events reach LangChain callbacks", () => {
  function paysOnce() {
    let paid = false;
    return (req: { url: string }, res: Parameters<typeof json>[0]) => {
      if (isTopUp(req.url)) {
        if (!authorizationOf(req as never)) return json(res, { x402Version: 2, accepts: [offer()] }, {}, 402);
        paid = true;
        return toppedUp(res, 5);
      }
      return paid ? completed(res) : paymentRequired(res, [offer()]);
    };
  }

  it("model.invoke(x, { callbacks: [PaymentSpendHandler] }) sees the run's first payment", async () => {
    const svc = await hostile(paysOnce());
    const model = new ChatService({
      model: "m",
      baseUrl: svc.url,
      wallet: EvmWallet.random(),
      payment: { allowedPayees: [PAYEE_A] },
      ...quick,
    });
    const handler = new PaymentSpendHandler();
    const msg = await model.invoke("hi", { callbacks: [handler] });
    expect(msg.content).toBe("ok");
    expect(handler.payments).toBe(1);
    expect(handler.totalUsd).toBe(5);
    expect(handler.events.map((e) => e.type)).toEqual(["payment.requested", "payment.signed", "payment.settled"]);
  });

  it("streaming, and inside a chain: the handler sees the payment", async () => {
    const svc = await hostile(paysOnce());
    svc.script = ((inner) => (req: any, res: any) => {
      if (!isTopUp(req.url) && svc.to("/x402/top-up").some((r) => authorizationOf(r))) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(
          `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: { content: "ok" }, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`,
        );
        return;
      }
      inner(req, res);
    })(paysOnce());
    const model = new ChatService({
      model: "m",
      baseUrl: svc.url,
      wallet: EvmWallet.random(),
      payment: { allowedPayees: [PAYEE_A] },
      ...quick,
    });
    const handler = new PaymentSpendHandler();
    const chain = RunnableLambda.from((x: string) => x).pipe(model);
    let text = "";
    for await (const c of await chain.stream("hi", { callbacks: [handler] })) text += c.content;
    expect(text).toBe("ok");
    expect(handler.payments).toBe(1);
  });

  it("a ServiceClient top-up inside a runnable: the run's handler sees it", async () => {
    const svc = await hostile((req, res) =>
      authorizationOf(req) ? toppedUp(res, 5) : json(res, { x402Version: 2, accepts: [offer()] }, {}, 402),
    );
    const client = new ServiceClient({ baseUrl: svc.url, wallet: EvmWallet.random(), payment: { allowedPayees: [PAYEE_A] }, ...quick });
    const handler = new PaymentSpendHandler();
    await RunnableLambda.from(async () => (await client.topUp(5)).amountUsd).invoke(null, { callbacks: [handler] });
    expect(handler.payments).toBe(1);
    expect(handler.totalUsd).toBe(5);
  });
});
