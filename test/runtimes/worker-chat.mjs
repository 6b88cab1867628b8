/**
 * The scenario's chat steps in workerd for an API-key user who imports only the chat entry,
 * `langchain-service/chat`: the bundle holds no wallet or crypto tool code.
 */
import { runScenario } from "./scenario.mjs";

export default {
  async fetch(request) {
    const lines = [];
    await runScenario(await request.json(), (line) => lines.push(line), {
      "langchain-service/chat": () => import("langchain-service/chat"),
    });
    return new Response(`${lines.join("\n")}\n`, { headers: { "content-type": "application/x-ndjson" } });
  },
};
