/**
 * `character_slug` on a chat request, checked against the caller's character catalog (src/account/
 * character-catalog.ts) before sending: a slug the service answered 404, or one outside a loaded whole list, is a
 * `CharacterNotFoundError` with no request made. A 404 for a slug is remembered, so the next request with it is
 * refused here too (each 404 counts toward the service's error budget).
 */
import { CharacterNotFoundError } from "../http/errors.js";
import { characterCatalog, type CatalogCaller } from "../account/character-catalog.js";
import { parseModelId } from "./model-id.js";

/** The slug a request body names: its model suffix wins over its parameters object, as on the service. */
export function characterSlugOf(body: Record<string, unknown>, parametersName: string, brand?: string): string | undefined {
  const fromSuffix = typeof body.model === "string" ? parseModelId(body.model, brand).suffix.character_slug : undefined;
  const params = body[parametersName] as { character_slug?: unknown } | undefined;
  return fromSuffix ?? (typeof params?.character_slug === "string" ? params.character_slug : undefined);
}

/** Sends `send()` once the body's character (if any) passed the catalog; learns from a 404 for it. */
export async function withCharacterCheck<T>(
  stack: CatalogCaller,
  body: Record<string, unknown>,
  parametersName: string,
  brand: string | undefined,
  send: () => Promise<T>,
): Promise<T> {
  const slug = characterSlugOf(body, parametersName, brand);
  if (slug === undefined) return send();
  const catalog = characterCatalog(stack);
  catalog.check(slug);
  try {
    return await send();
  } catch (err) {
    if (err instanceof CharacterNotFoundError) catalog.forget(slug);
    throw err;
  }
}
