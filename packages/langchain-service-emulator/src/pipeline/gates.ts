/**
 * The stages of /api/v1 before a route runs: fault injection, the abuse block, payment headers off the top-up
 * route; and, when no route matches, 404 or 405 with `Allow`.
 */
import { PAYMENT_HEADERS } from "langchain-service";
import { FAULT_BODIES } from "../faults.js";
import type { RateLimiter } from "../rate-limits.js";
import type { EmulatorResponse, Route } from "../types.js";
import { API_PREFIX } from "./edges.js";
import { decide, errorResponse, onward, type Stage, type StageContext } from "./state.js";

/** payment headers are accepted on the top-up route only (elsewhere 400 PAYMENT_HEADER_NOT_ACCEPTED) */
const TOP_UP_PATH = "/x402/top-up";

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * 500/503 before any route runs (nothing is charged), after their latency; a served request's latency comes once
 * it is admitted (./route-stages.ts), like a model's time: it counts while the request is in flight.
 */
export const injectFaults: Stage = async (c, next) => {
  const pass = c.var.pass;
  pass.fault = c.var.state.faults.decide(pass.req.path);
  const { status, latencyMs } = pass.fault;
  if (status === undefined) return onward(next);
  if (latencyMs > 0) await sleep(latencyMs);
  decide(c, { status, body: FAULT_BODIES[status] ?? { error: `HTTP ${status}` } });
};

/** The abuse block's 429; it says when to retry (spec part 7): the end of the block. */
export function abuseBlockAnswer(limiter: RateLimiter, blockedMs: number, identity: string): EmulatorResponse {
  const end = limiter.now() + blockedMs;
  const reset = String(limiter.resetUnit === "ms" ? end : Math.ceil(end / 1000));
  return {
    ...errorResponse(429, limiter.abuseMessage(identity)),
    headers: { "x-ratelimit-reset-requests": reset, "retry-after": String(Math.ceil(blockedMs / 1000)) },
  };
}

/** The abuse block, of the identity claimed: reading a block lets no one cause one (its answers are not failures). */
export const abuseBlock: Stage = async (c, next) => {
  const { limiter } = c.var.state;
  const { identity } = c.var.pass;
  const blockedMs = limiter.blockedFor(identity);
  if (blockedMs <= 0) return onward(next);
  decide(c, abuseBlockAnswer(limiter, blockedMs, identity), { countFailure: false });
};

export const refusePaymentHeaders: Stage = async (c, next) => {
  const { req } = c.var.pass;
  if (req.path === TOP_UP_PATH || !PAYMENT_HEADERS.some((h) => req.headers[h])) return onward(next);
  decide(c, errorResponse(400, "Payment headers are accepted on POST /x402/top-up only", { code: "PAYMENT_HEADER_NOT_ACCEPTED" }));
};

function matchPattern(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split("/").filter(Boolean);
  const got = path.split("/").filter(Boolean);
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const g = got[i]!;
    if (w.startsWith(":")) {
      try {
        params[w.slice(1)] = decodeURIComponent(g);
      } catch {
        return undefined;
      }
    } else if (w !== g) return undefined;
  }
  return params;
}

export interface RouteMatch {
  route: Route;
  params: Record<string, string>;
}

/** The route for `method path`; `allowed` lists the methods of a path that exists under other methods. */
export function matchRoute(routes: Route[], method: string, path: string): RouteMatch | { allowed: string[] } | undefined {
  const allowed: string[] = [];
  for (const route of routes) {
    const params = matchPattern(route.pattern, path);
    if (!params) continue;
    const routeMethod = route.method.toUpperCase();
    // HEAD is GET without the body (the writer leaves the body out)
    if (routeMethod === method || (method === "HEAD" && routeMethod === "GET")) return { route, params };
    allowed.push(route.method.toUpperCase());
  }
  return allowed.length ? { allowed } : undefined;
}

/**
 * No route for this method and path (the router's own miss): 405 with `Allow` when the path exists under other
 * methods, else 404; outside /api/v1 a 404 that counts against no one.
 */
export function notFound(c: StageContext): Response {
  const pass = c.var.pass;
  const { pathname } = pass.req.url;
  if (pathname !== API_PREFIX && !pathname.startsWith(`${API_PREFIX}/`)) {
    c.set("outcome", { response: errorResponse(404, "Not found"), headers: {}, identity: "", countFailure: false });
    return c.body(null);
  }
  const match = matchRoute(c.var.state.routes, pass.req.method, pass.req.path);
  if (match && "allowed" in match) {
    decide(c, { ...errorResponse(405, "Method not allowed"), headers: { allow: [...new Set(match.allowed)].join(", ") } });
  } else decide(c, errorResponse(404, "Not found"));
  return c.body(null);
}
