/**
 * The emulator's HTTP app (Hono): the middleware list is the pipeline every request takes, top to bottom,
 *
 *   state -> log -> failure counting -> writer (headers, compression, faults on the way out) -> CORS preflight
 *   -> body (413) -> [/api/v1: fault injection -> abuse block -> payment headers on top-up only]
 *   -> route match -> auth -> wallet requests in flight -> latency and balances
 *   -> [inference: model, Pro-only, balance] -> request/token rate limit -> [overload] -> handler
 *
 * (the outer three act on the way back out, in reverse: the writer writes what a stage decided, then failures
 * are counted, then the log line). Routes are registered in one place, in the order of the API
 * (./routes/index.ts: `get(path, spec)`, `post(path, spec)`).
 */
import { Hono } from "hono";
import {
  answerPreflight,
  API_PREFIX,
  countFailures,
  internalError,
  logRequest,
  publicUrl,
  readRequest,
  withState,
  writeAnswer,
} from "./pipeline/edges.js";
import { abuseBlock, injectFaults, notFound, refusePaymentHeaders } from "./pipeline/gates.js";
import {
  admit,
  authenticate,
  bindRoute,
  handle,
  holdWalletPlace,
  inferenceModel,
  limitRate,
  refuseOverloaded,
} from "./pipeline/route-stages.js";
import type { EmulatorEnv, PipelineState } from "./pipeline/state.js";
import { mountApiRoutes } from "./routes/index.js";
import type { Route, RouteSpec } from "./types.js";

/** The stages of a matched route, after `bindRoute`. */
const ROUTE_STAGES = [authenticate, holdWalletPlace, admit, inferenceModel, limitRate, refuseOverloaded, handle];

/** The router's path: the request line's path only (./pipeline/edges.ts `publicUrl`), without a trailing slash. */
function routerPath(request: Request, options?: { env?: EmulatorEnv["Bindings"] }): string {
  const path = publicUrl(options?.env?.incoming.url ?? new URL(request.url).pathname, "http://127.0.0.1").pathname;
  return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
}

export type EmulatorApp = Hono<EmulatorEnv>;

/**
 * The app over the started emulator's context: the pipeline, then the routes (the built-in table of
 * ./routes/index.ts, then `more`: x402's and the `routes` option's), each a method and path under /api/v1.
 */
export function createApp(base: Omit<PipelineState, "routes">, more: Route[] = []): EmulatorApp {
  const state: PipelineState = { ...base, routes: [] };
  const app = new Hono<EmulatorEnv>({ getPath: routerPath });
  app.use(withState(state), logRequest, countFailures, writeAnswer, answerPreflight, readRequest);
  app.use(`${API_PREFIX}/*`, injectFaults, abuseBlock, refusePaymentHeaders);
  const on = (method: string) => (path: string, spec: RouteSpec) => {
    const route: Route = { method, pattern: path, ...spec };
    state.routes.push(route);
    app.on(method, `${API_PREFIX}${path}`, bindRoute(route), ...ROUTE_STAGES);
  };
  mountApiRoutes({ get: on("GET"), post: on("POST") });
  for (const route of more) on(route.method.toUpperCase())(route.pattern, route);
  app.notFound(notFound);
  app.onError(internalError);
  return app;
}

/** `METHOD /api/v1/path` of every route the app serves, in the order it matches them. */
export function routeTable(app: EmulatorApp): string[] {
  const seen = new Set<string>();
  for (const r of app.routes) if (r.method !== "ALL") seen.add(`${r.method} ${r.path}`);
  return [...seen];
}
