/**
 * The checks a chat request passes before it is sent, from the model's `/models` record (src/models/facts.ts),
 * beside the capability checks of ./profile.ts:
 * - a model whose record says `offline` is refused (`ModelOfflineError`): the service would answer 503;
 * - a `reasoning_effort` (or `reasoning.effort`; the top-level one wins, as at the service) outside the record's
 *   `reasoningEffortOptions` is refused (`UnsupportedCapabilityError`, field named): the service's 400 counts
 *   toward the caller's unsupported-feature budget;
 * - `stop`, `seed`, `n` ≠ 1 or a non-zero penalty, once the service refused that field for the model (its 400
 *   "<field> is not supported by this model", an `UnsupportedParameterError`), is refused unsent thereafter;
 * - a deprecated model (`deprecation { removesAt, replacementModelId }`) is reported once per context, and
 *   replaced by its `replacementModelId` only when the caller asked (`followDeprecation`).
 */
import { UnsupportedCapabilityError } from "../http/errors.js";
import { LruMap } from "../http/bounded.js";
import { contextKey, type ServiceContext } from "../http/context.js";
import { ModelOfflineError, UnsupportedParameterError } from "../http/model-errors.js";
import { modelFacts, type ModelDeprecation } from "../models/facts.js";
import type { ModelRecords, ServiceModel } from "../models/records.js";

/**
 * Models whose deprecation was already reported in a context (by record or by response header). Capped: no
 * process serves anywhere near 256 deprecated models; a forgotten one only warns again.
 */
const DEPRECATION_WARNED = contextKey("deprecation warnings", () => new LruMap<string, true>(256));

/** Warns once per model id and context: `[brand] model X is deprecated…`. */
export function warnDeprecatedOnce(context: ServiceContext, brand: string, id: string, detail: string): void {
  const warned = context.part(DEPRECATION_WARNED);
  if (warned.has(id)) return;
  warned.set(id, true);
  console.warn(`[${brand}] model ${id} is deprecated${detail}`);
}

function deprecationDetail(dep: ModelDeprecation, followed: boolean): string {
  const when = dep.removesAt ?? dep.date;
  const parts = [when ? ` (removed from the listing at ${when})` : ""];
  if (dep.replacementModelId)
    parts.push(
      followed
        ? `; sending ${dep.replacementModelId}, its replacement, instead (followDeprecation)`
        : `; its replacement is ${dep.replacementModelId} (set followDeprecation to use it)`,
    );
  return parts.join("");
}

/** Parameters the service refused per deployment and model ("<baseUrl>\n<model>" -> fields), per context; learned from its 400s. */
const REFUSED_PARAMETERS = contextKey("refused parameters", () => new LruMap<string, Set<string>>(1024));

/** Whether `body` sends `field` in a way a model that refuses it would refuse. */
function sends(body: Record<string, unknown>, field: string): boolean {
  const value = body[field];
  if (value === undefined || value === null) return false;
  if (field === "n") return value !== 1;
  if (field === "presence_penalty" || field === "frequency_penalty") return value !== 0;
  return true;
}

/** Remembers a parameter the service refused for `model` (an `UnsupportedParameterError`); other errors pass. */
export function learnRefusal(context: ServiceContext, err: unknown, records: ModelRecords, model: string): void {
  if (!(err instanceof UnsupportedParameterError) || err.field.includes("reasoning")) return;
  const refusedParameters = context.part(REFUSED_PARAMETERS);
  const key = `${records.baseUrl}\n${model}`;
  const fields = refusedParameters.get(key) ?? new Set<string>();
  fields.add(err.field);
  refusedParameters.set(key, fields);
}

/** The model a request goes to: the configured one, or its replacement when deprecated and the caller follows. */
export function modelToSend(
  context: ServiceContext,
  records: ModelRecords,
  model: string,
  follow: boolean,
  brand: string,
): { model: string; deprecation?: ModelDeprecation } {
  const deprecation = modelFacts(records.get(model)).deprecation;
  if (!deprecation) return { model };
  const replacement = follow ? deprecation.replacementModelId : undefined;
  warnDeprecatedOnce(context, brand, model, deprecationDetail(deprecation, replacement !== undefined));
  return { model: replacement ?? model, deprecation };
}

/** `body` with `model` in place of the configured id (a feature suffix, `id:key=value`, is kept). */
export function withModel(body: Record<string, unknown>, from: string, to: string): Record<string, unknown> {
  if (from === to || typeof body.model !== "string") return body;
  const suffix = body.model.startsWith(`${from}:`) ? body.model.slice(from.length) : "";
  return { ...body, model: `${to}${suffix}` };
}

/**
 * Refuses, before anything is sent, what the record of `model` (or the service's earlier answers) say it will
 * refuse: offline, an effort it does not take, a parameter it refused before.
 */
export function checkModelRecord(
  context: ServiceContext,
  body: Record<string, unknown>,
  record: ServiceModel | undefined,
  records: ModelRecords,
  model: string,
): void {
  const facts = modelFacts(record);
  if (facts.offline === true) {
    throw new ModelOfflineError(`model ${model} is offline (its /models record says so); nothing was sent: choose another model`, {
      model,
    });
  }
  const top = body.reasoning_effort;
  const nested = (body.reasoning as { effort?: unknown } | undefined | null)?.effort;
  const effort = top ?? nested;
  const options = facts.reasoningEffortOptions;
  if (options && effort !== undefined && effort !== null && !(options as unknown[]).includes(effort)) {
    const field = top !== undefined && top !== null ? "reasoning_effort" : "reasoning.effort";
    throw new UnsupportedCapabilityError(
      `model ${model} takes reasoning efforts ${options.join(", ")}, not ${String(effort)} (${field}); nothing was sent`,
      { capability: "reasoningEffortOptions", model, field },
    );
  }
  for (const field of context.part(REFUSED_PARAMETERS).get(`${records.baseUrl}\n${model}`) ?? []) {
    if (!sends(body, field)) continue;
    throw new UnsupportedCapabilityError(`model ${model} does not take ${field} (the service refused it before); nothing was sent`, {
      capability: "parameters",
      model,
      field,
    });
  }
}
