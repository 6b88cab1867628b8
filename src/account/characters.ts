/**
 * The service's public characters (personas: a system prompt and a suggested model), applied to a chat with
 * `serviceParameters.characterSlug`: `GET /characters` (search, filters, sort; pages of at most 100 with no total,
 * walked here until a short page) and `GET /characters/{slug}`. Bearer-only routes: a wallet client is refused
 * before any request. What they answer fills the caller's character catalog (./character-catalog.ts), which
 * `ChatService` checks a slug against before sending.
 */
import { z } from "zod";
import { CharacterNotFoundError, ValidationError } from "../http/errors.js";
import { checkArgs, parseWith, type ServiceApi } from "../api/request.js";
import { requireApiKey } from "./bearer-only.js";
import { characterCatalog } from "./character-catalog.js";

export const CHARACTER_SORTS = [
  "featured",
  "highestRating",
  "highlyRated",
  "highlyRatedAndRecent",
  "imports",
  "mostRecent",
  "ratingCount",
] as const;

const characterSchema = z
  .object({
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    description: z.string().nullable().optional(),
    photoUrl: z.string().nullable().optional(),
    shareUrl: z.string().nullable().optional(),
    author: z.string().optional(),
    tags: z.array(z.string()).default([]),
    featured: z.boolean().optional(),
    adult: z.boolean().optional(),
    webEnabled: z.boolean().optional(),
    modelId: z.string().nullable().optional(),
    stats: z
      .object({
        averageRating: z.number(),
        imports: z.number(),
        ratingCount: z.number(),
        ratingSum: z.number().optional(),
        userRating: z.number().nullable().optional(),
      })
      .partial()
      .passthrough()
      .optional(),
    createdAt: z.string().optional(),
    updatedAt: z.string().optional(),
  })
  .passthrough();
export type Character = z.infer<typeof characterSchema>;

const listSchema = z.object({ object: z.string().optional(), data: z.array(characterSchema) }).passthrough();
const oneSchema = z.object({ object: z.string().optional(), data: characterSchema }).passthrough();

export interface ListCharactersOptions {
  /** substring of name, description or tag (≤ 200 characters); `#Tag` matches a tag exactly */
  search?: string;
  categories?: string[];
  tags?: string[];
  /** the model a character was built for */
  modelId?: string[];
  /** exclusive: true lists only adult characters, otherwise only the others */
  isAdult?: boolean;
  isPro?: boolean;
  isWebEnabled?: boolean;
  sortBy?: (typeof CHARACTER_SORTS)[number];
  sortOrder?: "asc" | "desc";
  /** one page of at most this many (1–100) at `offset`; without it every page is walked */
  limit?: number;
  offset?: number;
  /** when walking: at most this many pages of 100 (default 20) */
  maxPages?: number;
  signal?: AbortSignal;
}

const list = z.array(z.string().min(1).max(100)).max(20, "at most 20 values");
const listArgs = z
  .object({
    search: z.string().max(200, "search is at most 200 characters").optional(),
    categories: list.optional(),
    tags: list.optional(),
    modelId: z.array(z.string().min(1).max(200)).max(20).optional(),
    isAdult: z.boolean().optional(),
    isPro: z.boolean().optional(),
    isWebEnabled: z.boolean().optional(),
    sortBy: z.enum(CHARACTER_SORTS).optional(),
    sortOrder: z.enum(["asc", "desc"]).optional(),
    limit: z.number().int().min(1, "limit is 1 to 100").max(100, "limit is 1 to 100").optional(),
    offset: z.number().int().min(0).optional(),
    maxPages: z.number().int().positive().optional(),
    signal: z.instanceof(AbortSignal).optional(),
  })
  .strict();

const PAGE = 100;

/**
 * GET /characters: the characters that match, every page (or one page with `limit`). A whole walk with no filter
 * (the non-adult list) is remembered as the account's list: `ChatService` then refuses a slug outside it unsent.
 */
export async function listCharacters(client: ServiceApi, options: ListCharactersOptions = {}): Promise<Character[]> {
  requireApiKey(client, "listCharacters", "/characters");
  const o = checkArgs(listArgs, options, "character list options");
  const query: Record<string, string | number | undefined> = {
    search: o.search,
    categories: o.categories?.join(","),
    tags: o.tags?.join(","),
    modelId: o.modelId?.join(","),
    isAdult: o.isAdult === undefined ? undefined : String(o.isAdult),
    isPro: o.isPro === undefined ? undefined : String(o.isPro),
    isWebEnabled: o.isWebEnabled === undefined ? undefined : String(o.isWebEnabled),
    sortBy: o.sortBy,
    sortOrder: o.sortOrder,
  };
  const catalog = characterCatalog(client.fetch);
  const page = async (limit: number, offset: number) => {
    const res = await client.request("/characters", { query: { ...query, limit, offset }, signal: o.signal });
    return parseWith(listSchema, res.data, "/characters", res.headers).data;
  };
  if (o.limit !== undefined) {
    const one = await page(o.limit, o.offset ?? 0);
    catalog.learn(one.map((c) => c.slug));
    return one;
  }
  const all: Character[] = [];
  const maxPages = o.maxPages ?? 20;
  let whole = false;
  for (let i = 0; i < maxPages; i++) {
    const got = await page(PAGE, (o.offset ?? 0) + i * PAGE);
    all.push(...got);
    if (got.length < PAGE) {
      whole = true;
      break;
    }
  }
  const unfiltered =
    !o.search &&
    !o.categories &&
    !o.tags &&
    !o.modelId &&
    !o.isAdult &&
    !o.isPro &&
    !o.isWebEnabled &&
    !o.offset &&
    (!o.sortBy || !["featured", "highlyRated", "highlyRatedAndRecent"].includes(o.sortBy));
  catalog.learn(
    all.map((c) => c.slug),
    whole && unfiltered,
  );
  return all;
}

/** GET /characters/{slug} (a slug or the character's id): one character; `CharacterNotFoundError` on 404. */
export async function getCharacter(client: ServiceApi, slug: string, options: { signal?: AbortSignal } = {}): Promise<Character> {
  requireApiKey(client, "getCharacter", "/characters");
  if (typeof slug !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$/.test(slug))
    throw new ValidationError(`not a character slug: ${JSON.stringify(slug)}`);
  const catalog = characterCatalog(client.fetch);
  try {
    const res = await client.request(`/characters/${encodeURIComponent(slug)}`, { signal: options.signal });
    const character = parseWith(oneSchema, res.data, "/characters/{slug}", res.headers).data;
    catalog.learn([character.slug]);
    return character;
  } catch (err) {
    if ((err as { status?: number }).status !== 404) throw err;
    catalog.forget(slug);
    const e = err as CharacterNotFoundError;
    throw new CharacterNotFoundError(e.message, {
      status: 404,
      body: e.body,
      headers: e.headers,
      code: e.code,
      requestId: e.requestId,
      slug,
      cause: err,
    });
  }
}
