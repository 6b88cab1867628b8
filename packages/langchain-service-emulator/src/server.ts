/**
 * The emulator's HTTP server: the Hono app (./app.ts, the pipeline and the routes) served by @hono/node-server
 * on 127.0.0.1. Node's own request and response stay reachable to the stages (`c.env.incoming`/`outgoing`): the
 * body limit, streams and socket faults need them.
 */
import { createAdaptorServer, type HttpBindings } from "@hono/node-server";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

export { API_PREFIX, MAX_BODY_BYTES, SEED_MAX_BODY_BYTES, maxBodyBytes, publicUrl } from "./pipeline/edges.js";
export { matchRoute, type RouteMatch } from "./pipeline/gates.js";
export { OVERLOADED_MESSAGE } from "./pipeline/route-stages.js";
export { LIVE_WALLET_CONCURRENCY } from "./pipeline/wallet-flights.js";
export type { PipelineState } from "./pipeline/state.js";
export { EMULATOR_VERSION, pickEncoding } from "./writer.js";

/** What node-server calls per request: the app's `fetch` (once the emulator started). */
export type ServerFetch = (request: Request, env: HttpBindings) => unknown;

/** Starts the server on 127.0.0.1 (port 0: ephemeral). */
export async function listen(fetch: ServerFetch, port = 0): Promise<{ server: Server; port: number }> {
  const server = createAdaptorServer({
    fetch: fetch as Parameters<typeof createAdaptorServer>[0]["fetch"],
    hostname: "127.0.0.1",
    // the client runs in the same process in tests: keep the global Request/Response as they are
    overrideGlobalObjects: false,
    // the body stage reads Node's request itself (and drains a body over the limit)
    autoCleanupIncoming: false,
  }) as Server;
  // keep-alive sockets must not hold close() up
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  return { server, port: (server.address() as AddressInfo).port };
}

export async function closeServer(server: Server): Promise<void> {
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
