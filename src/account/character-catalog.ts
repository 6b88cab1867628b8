/**
 * What this process knows of an account's characters, per service and caller: slugs seen to exist (a list page,
 * `getCharacter`), slugs the service answered 404, and whether a whole unfiltered list was loaded. `ChatService`
 * reads it before sending `service_parameters.character_slug`: a slug answered 404 before, or absent from a
 * loaded whole list, is refused unsent (the service would answer 404, one more failure toward its error budget).
 * Nothing here does I/O; `listCharacters` and `getCharacter` (./characters.ts) and the chat model fill it.
 */
import { CharacterNotFoundError } from "../http/errors.js";
import { LruMap } from "../http/bounded.js";
import { contextKey, stackContext, type ServiceContext } from "../http/context.js";

export class CharacterCatalog {
  readonly #known = new Set<string>();
  readonly #missing = new Set<string>();
  /** a whole list (every page, no filter) was loaded: a slug outside it is unknown */
  #complete = false;

  /** Records slugs that exist; `complete` when they are the whole unfiltered list. */
  learn(slugs: Iterable<string>, complete = false): void {
    for (const slug of slugs) {
      this.#known.add(slug);
      this.#missing.delete(slug);
    }
    if (complete) this.#complete = true;
  }

  /** Records a slug the service answered 404. */
  forget(slug: string): void {
    this.#known.delete(slug);
    this.#missing.add(slug);
  }

  get loaded(): boolean {
    return this.#complete;
  }

  /** `known`, `missing` (answered 404, or outside the loaded whole list), or `unsure` (nothing loaded says). */
  status(slug: string): "known" | "missing" | "unsure" {
    if (this.#known.has(slug)) return "known";
    if (this.#missing.has(slug) || this.#complete) return "missing";
    return "unsure";
  }

  /** Throws `CharacterNotFoundError` (no request made) for a slug known to be missing. */
  check(slug: string): void {
    if (this.status(slug) !== "missing") return;
    const why = this.#missing.has(slug) ? "the service answered 404 for it" : "it is not in the loaded character list";
    throw new CharacterNotFoundError(`unknown character_slug ${JSON.stringify(slug)}: ${why} (see listCharacters / getCharacter)`, {
      slug,
    });
  }
}

/** A stack as a catalog knows it: where, who, and the context it shares. */
export interface CatalogCaller {
  readonly baseUrl: string;
  readonly identity: string;
  readonly context?: ServiceContext;
}

/** the catalogs of a context's callers (its stacks share what one of them learned) */
const CATALOGS = contextKey("character catalogs", () => new LruMap<string, CharacterCatalog>(1_000));

/** The catalog of one caller (`identity`: an API key's label, a wallet) at one service base URL, in its stack's context. */
export function characterCatalog(stack: CatalogCaller): CharacterCatalog {
  const catalogs = stackContext(stack).part(CATALOGS);
  const key = `${stack.baseUrl}|${stack.identity}`;
  let catalog = catalogs.get(key);
  if (!catalog) catalogs.set(key, (catalog = new CharacterCatalog()));
  return catalog;
}
