/**
 * The client-side guard against the service's abuse block (abuse-guard.ts): one guard per credential and service
 * origin, since the service counts failures per caller, not per client object or per option spelling.
 * `AbuseGuard`'s constructor checks the options.
 */
import { AbuseGuard, abuseGuardLayer, type AbuseGuardOptions } from "../abuse-guard.js";
import { SharedRegistry } from "../bounded.js";
import { contextKey } from "../context.js";
import type { FetchLayer } from "../types.js";
import type { LayerContext } from "./context.js";

export interface AbuseGuardLayerOptions {
  /** `false` turns it off; an `AbuseGuard` of the caller's own is used as it is */
  abuseGuard?: Partial<AbuseGuardOptions> | AbuseGuard | false;
}

/**
 * One guard per credential and origin, shared by every live stack of a context on it: held weakly by the
 * context and strongly by each stack, and kept while its failures still count at the service (a client made per
 * request must see them).
 */
const GUARDS = contextKey("abuse guards", () => new SharedRegistry<AbuseGuard>());
/** the shared guards whose clients' differing limits were already reported */
const GUARDS_WARNED = contextKey("abuse guard warnings", () => new WeakSet<AbuseGuard>());

/** undefined: the guard is off */
export function abuseGuard(options: AbuseGuardLayerOptions, ctx: LayerContext): FetchLayer | undefined {
  if (options.abuseGuard === false) return undefined;
  const key = `${ctx.origin}|${ctx.identity}`;
  const shared = ctx.limitStore && { store: ctx.limitStore, label: ctx.brand, key };
  // a caller's own guard is theirs: not kept past the stack
  if (options.abuseGuard instanceof AbuseGuard) return abuseGuardLayer(options.abuseGuard, undefined, undefined, shared);
  // Differing limits of one credential resolve to the strictest, with a warning once.
  const asked = options.abuseGuard ?? {};
  const waitMs = asked.maxWaitMs ?? 0; // each stack's own wait, whatever the others asked
  let created = false;
  const sharedGuards = ctx.service.part(GUARDS);
  const keepGuard = (g: AbuseGuard) => sharedGuards.keep(g, g.rememberUntil());
  const guard = sharedGuards.get(key, () => ((created = true), new AbuseGuard(asked)));
  const guardWarned = ctx.service.part(GUARDS_WARNED);
  if (!created && guard.tighten(asked) && !guardWarned.has(guard)) {
    guardWarned.add(guard);
    console.warn(
      `[${ctx.brand}] two clients of one credential asked for different abuseGuard limits; both now use the strictest ` +
        `(maxFailures ${guard.options.maxFailures}, windowMs ${guard.options.windowMs}), since the service counts failures per caller`,
    );
  }
  // a shared guard is kept past its stacks while its failures count
  return abuseGuardLayer(guard, waitMs, keepGuard, shared);
}
