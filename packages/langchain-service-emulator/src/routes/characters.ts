/**
 * Characters (Bearer API keys only: a wallet's sign-in is 401, no credentials the discovery 402): GET /characters
 * (`search`, `categories`, `tags`, `modelId` repeated or comma-separated, `isAdult` exclusive, `isPro`,
 * `isWebEnabled`, `sortBy`, `sortOrder`, `limit` 1–100, `offset`; `{object: "list", data}` with no total) and GET
 * /characters/{slug} (a slug or an id; 404 otherwise). The chat route applies a character's system prompt when
 * `character_slug` names one, and answers 404 when it names none (`characterBySlug`).
 */
import { createHash } from "node:crypto";
import { EmulatorHttpError, type Caller, type RouteSpec } from "../types.js";
import { badRequest } from "./strict-body.js";

export interface EmulatedCharacter {
  id: string;
  slug: string;
  name: string;
  description: string | null;
  tags: string[];
  categories: string[];
  featured: boolean;
  adult: boolean;
  webEnabled: boolean;
  pro: boolean;
  modelId: string;
  stats: { averageRating: number; imports: number; ratingCount: number; ratingSum: number; userRating: null };
  createdAt: string;
  /** prepended to a chat that names the character (never listed) */
  systemPrompt: string;
}

function character(
  slug: string,
  name: string,
  description: string | null,
  o: Partial<EmulatedCharacter> & { systemPrompt: string; created: string; imports: number; ratings: number[] },
): EmulatedCharacter {
  const ratingSum = o.ratings.reduce((a, b) => a + b, 0);
  const hex = createHash("sha256").update(slug).digest("hex");
  return {
    id: `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`,
    slug,
    name,
    description,
    tags: o.tags ?? [],
    categories: o.categories ?? [],
    featured: o.featured ?? false,
    adult: o.adult ?? false,
    webEnabled: o.webEnabled ?? false,
    pro: o.pro ?? false,
    modelId: o.modelId ?? "emu-s",
    stats: {
      averageRating: o.ratings.length ? Math.round((ratingSum / o.ratings.length) * 100) / 100 : 0,
      imports: o.imports,
      ratingCount: o.ratings.length,
      ratingSum,
      userRating: null,
    },
    createdAt: o.created,
    systemPrompt: o.systemPrompt,
  };
}

export const CHARACTERS: EmulatedCharacter[] = [
  character("socratic-tutor", "Socratic Tutor", "Answers every question with a better question.", {
    tags: ["Education", "Philosophy"],
    categories: ["education"],
    featured: true,
    imports: 5400,
    ratings: [5, 5, 4, 5],
    created: "2026-02-01T10:00:00.000Z",
    systemPrompt: "You are the Socratic Tutor. Guide the user to the answer by asking short questions.",
  }),
  character("code-coach", "Code Coach", "A patient reviewer for your pull requests.", {
    tags: ["Programming"],
    categories: ["productivity"],
    webEnabled: true,
    modelId: "emu-m",
    imports: 3100,
    ratings: [4, 5, 4],
    created: "2026-03-12T08:30:00.000Z",
    systemPrompt: "You are Code Coach, a patient reviewer. Point out one improvement at a time.",
  }),
  character("noir-detective", "Noir Detective", "Rain, neon and a case that will not close.", {
    tags: ["Roleplay", "Mystery"],
    categories: ["fiction"],
    featured: true,
    imports: 8800,
    ratings: [5, 4, 5, 5, 3],
    created: "2026-01-20T22:15:00.000Z",
    systemPrompt: "You are a hard-boiled detective in a rainy city. Speak in short, world-weary sentences.",
  }),
  character("ship-captain", "Ship Captain", null, {
    tags: ["Roleplay", "Adventure"],
    categories: ["fiction"],
    modelId: "emu-pro",
    pro: true,
    imports: 900,
    ratings: [4],
    created: "2026-05-05T12:00:00.000Z",
    systemPrompt: "You are the captain of a merchant ship in the age of sail.",
  }),
  character("night-owl-poet", "Night Owl Poet", "Writes verse about whatever keeps you up at night.", {
    tags: ["Writing", "Poetry"],
    categories: ["creative"],
    imports: 1200,
    ratings: [],
    created: "2026-06-18T02:00:00.000Z",
    systemPrompt: "You are a poet who answers in four short lines.",
  }),
  character("velvet-muse", "Velvet Muse", "A flirtatious muse for grown-up fiction.", {
    tags: ["Roleplay"],
    categories: ["fiction"],
    adult: true,
    imports: 4300,
    ratings: [4, 4],
    created: "2026-04-01T20:00:00.000Z",
    systemPrompt: "You are a muse for fiction written by adults.",
  }),
];

/** The character a chat's `character_slug` (or an id) names, if any. */
export function characterBySlug(slug: string): EmulatedCharacter | undefined {
  return CHARACTERS.find((c) => c.slug === slug || c.id === slug);
}

function publicRecord(c: EmulatedCharacter, origin: string): Record<string, unknown> {
  const author = createHash("sha256").update(`author:${c.slug}`).digest("base64url").slice(0, 5);
  return {
    id: c.id,
    slug: c.slug,
    name: c.name,
    description: c.description,
    photoUrl: `${origin}/characters/${c.slug}.png`,
    shareUrl: `${origin}/c/${c.slug}`,
    author,
    tags: c.tags,
    featured: c.featured,
    adult: c.adult,
    webEnabled: c.webEnabled,
    modelId: c.modelId,
    stats: c.stats,
    createdAt: c.createdAt,
    updatedAt: c.createdAt,
  };
}

/** Bearer keys only: a wallet's sign-in is refused here. */
function requireKey(caller: Caller): void {
  if (caller.kind !== "apiKey")
    throw new EmulatorHttpError(401, { error: "Authentication failed: this endpoint takes an API key (Bearer), not a wallet sign-in" });
}

const SORTS = ["featured", "highestRating", "highlyRated", "highlyRatedAndRecent", "imports", "mostRecent", "ratingCount"];
const QUERY = ["search", "categories", "tags", "modelId", "isAdult", "isPro", "isWebEnabled", "sortBy", "sortOrder", "limit", "offset"];

function listOf(query: URLSearchParams, name: string): string[] | undefined {
  const values = query
    .getAll(name)
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter(Boolean);
  if (values.length === 0) return undefined;
  if (values.length > 20 || values.some((v) => v.length > (name === "modelId" ? 200 : 100)))
    throw badRequest(`Invalid ${name}`, { _errors: [], [name]: { _errors: ["At most 20 values of at most 100 characters"] } });
  return values;
}

function flag(query: URLSearchParams, name: string): boolean | undefined {
  const v = query.get(name);
  if (v === null) return undefined;
  if (v !== "true" && v !== "false")
    throw badRequest(`Invalid ${name}`, { _errors: [], [name]: { _errors: ['Expected "true" or "false"'] } });
  return v === "true";
}

export const characterRoutes = {
  list: {
    auth: "required",
    handler(req, ctx, caller) {
      requireKey(caller);
      const q = req.query;
      for (const key of q.keys())
        if (!QUERY.includes(key)) throw badRequest("Invalid request", { _errors: [`Unrecognized key: "${key}"`] });
      const search = q.get("search") ?? undefined;
      if (search !== undefined && search.length > 200)
        throw badRequest("search is at most 200 characters", { _errors: [], search: { _errors: ["Too long"] } });
      const limit = q.has("limit") ? Number(q.get("limit")) : 50;
      const offset = q.has("offset") ? Number(q.get("offset")) : 0;
      if (!Number.isInteger(limit) || limit < 1 || limit > 100)
        throw badRequest("limit must be 1 to 100", { _errors: [], limit: { _errors: ["1..100"] } });
      if (!Number.isInteger(offset) || offset < 0)
        throw badRequest("offset must be a non-negative integer", { _errors: [], offset: { _errors: [">= 0"] } });
      const sortBy = q.get("sortBy") ?? undefined;
      if (sortBy !== undefined && !SORTS.includes(sortBy))
        throw badRequest(`Invalid sortBy`, { _errors: [], sortBy: { _errors: [`Expected one of ${SORTS.join(", ")}`] } });
      const sortOrder = q.get("sortOrder") ?? "desc";
      if (sortOrder !== "asc" && sortOrder !== "desc")
        throw badRequest("Invalid sortOrder", { _errors: [], sortOrder: { _errors: ["asc | desc"] } });
      const [categories, tags, models] = [listOf(q, "categories"), listOf(q, "tags"), listOf(q, "modelId")];
      const [adult, pro, web] = [flag(q, "isAdult") === true, flag(q, "isPro"), flag(q, "isWebEnabled")];
      const needle = search?.toLowerCase();
      let found = CHARACTERS.filter((c) => {
        if (c.adult !== adult) return false; // exclusive: only adult, or only the others
        if (pro && !c.pro) return false;
        if (web && !c.webEnabled) return false;
        if (!pro && models && !models.includes(c.modelId)) return false;
        if (categories && !categories.some((x) => c.categories.includes(x))) return false;
        if (tags && !tags.some((x) => c.tags.includes(x))) return false;
        if (needle) {
          const tagTerm = needle.startsWith("#") ? needle.slice(1) : undefined;
          const hay = [c.name, c.description ?? "", ...c.tags].join(" ").toLowerCase();
          if (tagTerm ? !c.tags.some((t) => t.toLowerCase() === tagTerm) : !hay.includes(needle)) return false;
        }
        if (sortBy === "featured" && !c.featured) return false;
        if (sortBy === "highlyRated" && c.stats.ratingCount < 2) return false;
        return true;
      });
      const key: Record<string, (c: EmulatedCharacter) => number> = {
        featured: (c) => c.stats.imports,
        imports: (c) => c.stats.imports,
        highestRating: (c) => c.stats.averageRating,
        highlyRated: (c) => c.stats.averageRating,
        highlyRatedAndRecent: (c) => Date.parse(c.createdAt),
        mostRecent: (c) => Date.parse(c.createdAt),
        ratingCount: (c) => c.stats.ratingCount,
      };
      const by = key[sortBy ?? "imports"]!;
      const sign = sortBy && sortOrder === "asc" ? 1 : -1;
      found = found.sort((a, b) => sign * (by(a) - by(b)) || a.slug.localeCompare(b.slug));
      return {
        status: 200,
        body: { object: "list", data: found.slice(offset, offset + limit).map((c) => publicRecord(c, ctx.publicOrigin)) },
      };
    },
  },
  one: {
    auth: "required",
    handler(req, ctx, caller) {
      requireKey(caller);
      const found = characterBySlug(req.params.slug ?? "");
      if (!found) throw new EmulatorHttpError(404, { error: `Character not found: ${req.params.slug}` });
      return { status: 200, body: { object: "character", data: publicRecord(found, ctx.publicOrigin) } };
    },
  },
} satisfies Record<string, RouteSpec>;
