/**
 * What a request carries through the pipeline (./app.ts): the emulator's state, the request as routes read it,
 * and what each stage decided so far. A stage that answers sets the outcome and does not call `next`; the writer
 * (./answer.ts) writes it on the way back out.
 */
import type { HttpBindings } from "@hono/node-server";
import type { Context, MiddlewareHandler, Next } from "hono";
import type { ServedModel } from "../models/catalog.js";
import type { FaultDecision, FaultInjector } from "../faults.js";
import type { Bucket, RateLimiter } from "../rate-limits.js";
import type { Account, Caller, EmulatorContext, EmulatorRequest, EmulatorResponse, Route } from "../types.js";
import type { WrittenOutcome } from "../writer.js";

export interface PipelineState {
  ctx: EmulatorContext;
  routes: Route[];
  limiter: RateLimiter;
  faults: FaultInjector;
}

/** What the pipeline decided, before it is written. */
export interface Outcome extends WrittenOutcome {
  /** who failures are counted against */
  identity: string;
  /** false for the abuse block's own answers (they do not extend the block) */
  countFailure: boolean;
  account?: Account;
  model?: ServedModel;
  /**
   * Runs once the answer is complete on the server's side, before its last byte goes out (so a client never sees
   * the end of an answer while the server still counts the request in flight): a wallet's place among its requests
   * in flight is given back here.
   */
  onWritten?: () => void;
}

/** One request's way through the stages. */
export interface Pass {
  req: EmulatorRequest;
  /** who failures count against: the identity claimed, then the caller's once authenticated */
  identity: string;
  fault: FaultDecision;
  route?: Route;
  caller?: Caller;
  account?: Account;
  /** headers the pipeline adds (balances, model, rate limits) */
  headers: Record<string, string>;
  bucket: Bucket;
  model?: ServedModel;
  /** a chat prompt's tokens, counted in the token window on arrival (the rest when served) */
  arrivalTokens: number;
  /** a route answered with its own rate limit (the crypto RPC cap): the chat limits' headers stay off it */
  ownLimit: boolean;
  onWritten?: () => void;
}

export interface EmulatorEnv {
  Bindings: HttpBindings;
  Variables: { state: PipelineState; pass: Pass; outcome: Outcome | undefined };
}
export type Stage = MiddlewareHandler<EmulatorEnv>;
export type StageContext = Context<EmulatorEnv>;

/** Goes on to the next stage. (Hono's `next()` resolves to the context: a stage must not return it as its answer.) */
export async function onward(next: Next): Promise<void> {
  await next();
}

export function errorResponse(status: number, error: string, extra: Record<string, unknown> = {}): EmulatorResponse {
  return { status, body: { error, ...extra } };
}

/** Answers before a caller is known: no pipeline headers, failures counted against the identity so far. */
export function decide(c: StageContext, response: EmulatorResponse, extra: Partial<Outcome> = {}): void {
  c.set("outcome", { response, headers: {}, identity: c.var.pass.identity, countFailure: true, ...extra });
}

/**
 * Answers once the caller is known: with the caller's rate-limit and error-budget headers (unless a route answered
 * with its own limit, whose `X-RateLimit-*` names clash) and the wallet's place in flight to give back.
 */
export function answer(c: StageContext, response: EmulatorResponse, extra: Partial<Outcome> = {}): void {
  const { limiter } = c.var.state;
  const pass = c.var.pass;
  const { account, headers, identity, bucket } = pass;
  if (account && !pass.ownLimit && !Object.keys(headers).some((h) => h.startsWith("x-ratelimit-"))) {
    Object.assign(headers, limiter.headers(identity, bucket, account.partner));
  }
  if (account && !pass.ownLimit) Object.assign(headers, limiter.budgetHeaders(identity));
  c.set("outcome", { response, headers, identity, countFailure: true, account, model: pass.model, onWritten: pass.onWritten, ...extra });
}
