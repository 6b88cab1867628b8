/**
 * The scenario in Cloudflare workerd: a module worker whose fetch handler takes the config as the request's JSON
 * body and answers the scenario's lines (bundled by esbuild for workers, run by miniflare).
 */
import { runScenario } from "./scenario.mjs";

export default {
  async fetch(request) {
    const lines = [];
    await runScenario(await request.json(), (line) => lines.push(line), {
      "langchain-service": () => import("langchain-service"),
      "langchain-service/evm": () => import("langchain-service/evm"),
      "langchain-service/solana": () => import("langchain-service/solana"),
    });
    return new Response(`${lines.join("\n")}\n`, { headers: { "content-type": "application/x-ndjson" } });
  },
};
