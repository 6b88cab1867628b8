/**
 * The JSON body of a media or augment request, checked against its published schema (zod; `.strict()` where the
 * published schema is closed): 415 for another content type, 400 DetailedError `{error, details, issues}` for a
 * body that does not conform. Parsed once per request: the route's model resolver and its handler share it.
 */
import { z } from "zod";
import { EmulatorHttpError, type EmulatorRequest } from "../types.js";

const parsedBodies = new WeakMap<EmulatorRequest, unknown>();

export function badRequest(error: string, details: unknown, issues?: unknown[]): EmulatorHttpError {
  return new EmulatorHttpError(400, { error, details, ...(issues ? { issues } : {}) });
}

export function parseBody<T>(req: EmulatorRequest, schema: z.ZodType<T>): T {
  if (parsedBodies.has(req)) return parsedBodies.get(req) as T;
  const type = req.headers["content-type"];
  if (type !== undefined && !/^application\/json\b/i.test(type.trim())) {
    throw new EmulatorHttpError(415, { error: `Invalid request content-type: expected application/json, got ${type.split(";")[0]}` });
  }
  let json: unknown;
  try {
    json = JSON.parse(req.body.toString("utf8"));
  } catch {
    throw badRequest("Invalid request", { _errors: ["Body is not valid JSON"] });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw badRequest("Invalid request", z.formatError(parsed.error), parsed.error.issues);
  parsedBodies.set(req, parsed.data);
  return parsed.data;
}

/** A request id in the published `generate-image-1234567890` style. */
export function requestId(prefix: string): string {
  return `${prefix}-${Date.now()}${Math.floor(Math.random() * 1e6)
    .toString()
    .padStart(6, "0")}`;
}
