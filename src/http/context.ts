/**
 * The state a stack shares with the other stacks of its context, instead of with the whole process: the abuse
 * guards, rate limiters and in-flight gates of each caller, the service's clock, and what the floors above attach
 * (wallet states, `/models` lists, warn-once sets). Stacks of one context on one credential share one guard, one
 * window and one gate, as the service counts per caller; stacks of two contexts share nothing, so a test (or a
 * tenant that wants its own) builds its own context and needs no reset hook. Every stack built without one gets
 * the process's default context.
 *
 * The parts are made on first use through a `ContextKey` that the module owning the part holds, so this file
 * imports none of them (src/http imports nothing above it, and nothing here imports back).
 */
import { ServiceClock } from "./clock.js";
import { ConfigurationError } from "./errors.js";

/** Names one part of a context and makes it: held by the module that owns the part. */
export interface ContextKey<T> {
  readonly name: string;
  readonly create: () => T;
}

/** A key for one part of every context (`name` is for reading, the key object is what is looked up). */
export function contextKey<T>(name: string, create: () => T): ContextKey<T> {
  return Object.freeze({ name, create });
}

export interface ServiceContextOptions {
  /** the service's clock as seen from here (default: a new one) */
  clock?: ServiceClock;
}

export class ServiceContext {
  /** the service's clock of each origin: the transport teaches it, wallet sign-ins and job deadlines read it */
  readonly clock: ServiceClock;
  readonly #parts = new Map<ContextKey<unknown>, unknown>();

  constructor(options: ServiceContextOptions = {}) {
    if (options.clock !== undefined && !(options.clock instanceof ServiceClock))
      throw new ConfigurationError("clock must be a ServiceClock");
    this.clock = options.clock ?? new ServiceClock();
  }

  /** The part `key` names, made on first use and kept as long as this context. */
  part<T>(key: ContextKey<T>): T {
    if (this.#parts.has(key)) return this.#parts.get(key) as T;
    const value = key.create();
    this.#parts.set(key, value);
    return value;
  }

  /** the names of the parts made so far (for logs and tests) */
  get parts(): string[] {
    return [...this.#parts.keys()].map((k) => k.name);
  }

  toJSON(): { parts: string[] } {
    return { parts: this.parts };
  }
}

/** A context of its own: stacks given it share state with each other only. */
export function createServiceContext(options: ServiceContextOptions = {}): ServiceContext {
  return new ServiceContext(options);
}

let processContext: ServiceContext | undefined;

/** The process's context: every stack built without a `context` of its own shares it. */
export function defaultServiceContext(): ServiceContext {
  return (processContext ??= new ServiceContext());
}

/** The context a built stack shares (a hand-made stack, without one, shares the process's). */
export function stackContext(stack: { readonly context?: ServiceContext }): ServiceContext {
  return stack.context ?? defaultServiceContext();
}

/** `context` checked, or the process's: a `ConfigurationError` for anything else, before any request. */
export function contextOf(context: unknown): ServiceContext {
  if (context === undefined) return defaultServiceContext();
  if (!(context instanceof ServiceContext)) throw new ConfigurationError("context must be a ServiceContext (createServiceContext())");
  return context;
}
