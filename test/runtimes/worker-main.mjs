/**
 * The scenario's chat steps in workerd for an API-key user who imports the main entry alone, `langchain-service`
 * (no wallet entry): what must run without nodejs_compat. The wallets' Solana peers pick their Node build under
 * the `workerd` condition (`@solana/kit` 5 maps it to `index.node.mjs`, which imports `events`), so a worker that
 * pays needs nodejs_compat; ./worker.mjs runs that one.
 */
import { runScenario } from "./scenario.mjs";

export default {
  async fetch(request) {
    const lines = [];
    await runScenario(await request.json(), (line) => lines.push(line), { "langchain-service": () => import("langchain-service") });
    return new Response(`${lines.join("\n")}\n`, { headers: { "content-type": "application/x-ndjson" } });
  },
};
