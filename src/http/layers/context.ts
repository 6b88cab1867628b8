/**
 * What every layer of one stack may know besides its own options: where the service is, its brand, who calls
 * (never the secret), the service context whose state it shares, and the fleet store (a `RedisStore`) that shared windows and places are counted in.
 */
import type { LimitStore } from "../shared-limits.js";
import type { AuthProvider } from "./sign-in.js";
import type { ServiceContext } from "../context.js";

export interface LayerContext {
  /** the base URL, `/api/v1` included */
  readonly baseUrl: string;
  /** its origin: credentials, pacing and places apply there only */
  readonly origin: string;
  readonly brand: string;
  /** the credential provider of every attempt (none: anonymous) */
  readonly auth: AuthProvider | undefined;
  /** a label of the caller for limiters and logs; never the secret */
  readonly identity: string;
  /** a fleet store (not the per-process MemoryStore), or none */
  readonly limitStore: LimitStore | undefined;
  /** the guards, limiters, gates and clock this stack shares with the other stacks of its context */
  readonly service: ServiceContext;
}
