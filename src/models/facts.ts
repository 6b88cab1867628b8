/**
 * The members of a `/models` record that say whether and how a model can be called today, parsed with zod:
 * `offline`, `beta`, `privacy`, `regionRestrictions`, `deprecation { autoRemap, date, startsAt, removesAt,
 * replacementModelId }`, the capabilities' `reasoningEffortOptions`, `maxImages` / `maxVideos`, and the prices'
 * `cache_write` and `extended` tier. The seed's records have none of them: each is optional, and a member whose
 * value has another shape reads as absent (one odd member must not make the whole list unreadable).
 */
import { z } from "zod";

/** `reasoning_effort` / `reasoning.effort` values the service knows (a model takes the ones it lists). */
export const REASONING_EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh", "max"] as const;
export type ReasoningEffortOption = (typeof REASONING_EFFORTS)[number];

/** `model_spec.deprecation`: when the model leaves the listing, and what replaces it. */
export const ModelDeprecationSchema = z
  .object({
    autoRemap: z.boolean().optional().catch(undefined),
    date: z.string().optional().catch(undefined),
    startsAt: z.string().optional().catch(undefined),
    removesAt: z.string().optional().catch(undefined),
    replacementModelId: z.string().min(1).optional().catch(undefined),
  })
  .passthrough();
export type ModelDeprecation = z.infer<typeof ModelDeprecationSchema>;

/** The new `model_spec` members (merged into the record schema of ./records.ts). */
export const modelSpecFacts = {
  privacy: z.string().optional().catch(undefined),
  offline: z.boolean().optional().catch(undefined),
  beta: z.boolean().optional().catch(undefined),
  betaModel: z.boolean().optional().catch(undefined),
  regionRestrictions: z.array(z.string()).optional().catch(undefined),
  deprecation: ModelDeprecationSchema.optional().catch(undefined),
};

const count = z.number().int().positive().optional().catch(undefined);

/** `model_spec.capabilities`: the flags as published (kept as they are), with the members read here typed. */
export const ModelCapabilitiesSchema = z
  .object({
    reasoningEffortOptions: z.array(z.enum(REASONING_EFFORTS)).optional().catch(undefined),
    maxImages: count,
    maxVideos: count,
  })
  .catchall(z.unknown());

/** What the service says of one model's availability and bounds; members it does not state are left out. */
export interface ModelFacts {
  offline?: boolean;
  beta?: boolean;
  privacy?: string;
  /** country codes the model is served in: a 403 outside them */
  regionRestrictions?: string[];
  deprecation?: ModelDeprecation;
  /** the `reasoning_effort` values the model takes (a 400 for any other) */
  reasoningEffortOptions?: ReasoningEffortOption[];
  maxImages?: number;
  maxVideos?: number;
  /** the record's `context_length` */
  contextLength?: number;
}

/** The shape of a record these facts are read from (./records.ts's `ServiceModel`). */
interface RecordLike {
  context_length?: number;
  model_spec?: {
    privacy?: string;
    offline?: boolean;
    beta?: boolean;
    regionRestrictions?: string[];
    deprecation?: ModelDeprecation;
    capabilities?: { reasoningEffortOptions?: ReasoningEffortOption[]; maxImages?: number; maxVideos?: number; [key: string]: unknown };
    // `maxImages` / `maxVideos` are read in the capabilities and, where a record has them there, in the spec
    [key: string]: unknown;
  };
}

const NONE: ModelFacts = Object.freeze({});
/** `maxImages` / `maxVideos` where a record has them in the spec itself (built once: a zod schema costs to make) */
const specCounts = z.object({ maxImages: count, maxVideos: count }).catch({});
/** Each record's facts, read once: every chat request reads them before it is sent. */
const factsOf = new WeakMap<RecordLike, ModelFacts>();

/** The facts of one record (undefined record: none). Read once per record, and frozen. */
export function modelFacts(record: RecordLike | undefined): ModelFacts {
  if (!record) return NONE;
  let facts = factsOf.get(record);
  if (!facts) factsOf.set(record, (facts = Object.freeze(readFacts(record))));
  return facts;
}

function readFacts(record: RecordLike): ModelFacts {
  const spec = record.model_spec;
  if (!spec) return record.context_length !== undefined ? { contextLength: record.context_length } : {};
  const caps = spec.capabilities ?? {};
  const top = specCounts.parse(spec);
  const out: ModelFacts = {
    offline: spec.offline,
    beta: spec.beta,
    privacy: spec.privacy,
    regionRestrictions: spec.regionRestrictions,
    deprecation: spec.deprecation,
    reasoningEffortOptions: caps.reasoningEffortOptions,
    maxImages: caps.maxImages ?? top.maxImages,
    maxVideos: caps.maxVideos ?? top.maxVideos,
    contextLength: record.context_length,
  };
  for (const key of Object.keys(out) as (keyof ModelFacts)[]) if (out[key] === undefined) delete out[key];
  return out;
}
