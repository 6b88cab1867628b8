/**
 * What the fleet top-up tests share (fleet-topup.test.ts on Redis, http-fleet.test.ts on the HTTP store): the
 * scripted service a fleet pays, and the paying process a fleet is made of.
 */
import { fileURLToPath } from "node:url";
import { authorizationOf, completed, json, offer, paymentRequired, toppedUp, type hostileServers } from "../hostile/server.js";

/** One process of a paying fleet (run with `fleet` / `member` from ./processes.js) and the line it prints. */
export const PAYER = fileURLToPath(new URL("./fleet-payer.ts", import.meta.url));
export type PayerResult = { statuses: (number | string)[]; events: string[] };

/**
 * A service that sells $5 of credit per signed payment and charges a cent per completion: 402 without credit,
 * "nonce already used" for a payment it has seen. `holdTopUps` takes a payment in and never answers (nor settles)
 * it. Started on the file's `hostileServers()`, which closes it after each test.
 */
export function creditServices(hostile: ReturnType<typeof hostileServers>) {
  return async function creditService(opts: { holdTopUps?: boolean } = {}) {
    const state = { credit: 0, nonces: new Set<string>(), signed: [] as string[], holdTopUps: opts.holdTopUps === true };
    let paid!: () => void;
    const firstPayment = new Promise<void>((r) => (paid = r));
    const svc = await hostile((req, res) => {
      const path = req.url.split("?")[0]!;
      if (path.endsWith("/x402/top-up")) {
        const auth = authorizationOf(req);
        if (!auth) return json(res, { x402Version: 2, accepts: [offer()] }, {}, 402);
        state.signed.push(auth.nonce);
        paid();
        if (state.holdTopUps) return; // never settled, never answered
        if (state.nonces.has(auth.nonce))
          return json(res, { error: "PAYMENT_VERIFICATION_FAILED", message: "Payment nonce already used" }, {}, 400);
        state.nonces.add(auth.nonce);
        state.credit += 5;
        return toppedUp(res, 5);
      }
      if (path.endsWith("/chat/completions")) {
        if (state.credit < 0.01) return paymentRequired(res, [offer()]);
        state.credit -= 0.01;
        return completed(res);
      }
      json(res, { success: true, data: { transactions: [] } });
    });
    return { svc, state, firstPayment };
  };
}
