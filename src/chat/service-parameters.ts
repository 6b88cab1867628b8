/**
 * `service_parameters` (spec part 2.2): camelCase in TypeScript, validated with zod, snake_case on the wire
 * under the brand's name (`brandNames(brand).parameters`). Unknown keys are rejected here rather than
 * silently dropped by the service, so a typo is an error before any request.
 */
import { z } from "zod";
import { brandNames } from "../config.js";
import { ValidationError } from "../http/errors.js";

export const WebSearchModeSchema = z.enum(["off", "on", "auto"]);
export type WebSearchMode = z.infer<typeof WebSearchModeSchema>;

export const ServiceParametersSchema = z
  .strictObject({
    /** slug (public id) of a public character */
    characterSlug: z.string().min(1).optional(),
    /** remove `<think></think>` blocks from the response (legacy think-tag models) */
    stripThinkingResponse: z.boolean().optional(),
    /** disable thinking on supported reasoning models */
    disableThinking: z.boolean().optional(),
    /** web search: `off` | `on` | `auto` (a string enum, not a boolean) */
    enableWebSearch: WebSearchModeSchema.optional(),
    /** scrape up to 5 URLs found in the user message */
    enableWebScraping: z.boolean().optional(),
    /** a third-party provider's native search on supported models */
    enableXSearch: z.boolean().optional(),
    /** ask the model to cite sources inline: `^n^` / `^i,j^` (live), `[REF]n[/REF]` (seed); read them with `mapCitations` */
    enableWebCitations: z.boolean().optional(),
    /** experimental: search results in the stream (live: a chunk at its end; seed: its first chunk), once */
    includeSearchResultsInStream: z.boolean().optional(),
    /**
     * search results as a synthetic tool call (live: `web_search_call`, seed: `<brand>_web_search_documents`); surfaced
     * as `response_metadata.web_search_documents` (`webSearchDocuments(msg)`), never as a tool call to run
     */
    returnSearchResultsAsDocuments: z.boolean().optional(),
    /** include the service's default system prompts (default true) */
    includeServiceSystemPrompt: z.boolean().optional(),
    /** end-to-end encryption on E2EE-capable models (default true) */
    enableE2ee: z.boolean().optional(),
  })
  .describe("service_parameters");

export type ServiceParameters = z.infer<typeof ServiceParametersSchema>;
export type ServiceParameterKey = keyof ServiceParameters;

/** camelCase member -> wire name; `includeServiceSystemPrompt` carries the brand. */
export function serviceParameterWireName(key: ServiceParameterKey, brand?: string): string {
  if (key === "includeServiceSystemPrompt") return brandNames(brand).includeSystemPrompt;
  if (key === "enableE2ee") return "enable_e2ee";
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** All members, in the order of part 2.2 (plus `enableE2ee` from the published description). */
export const SERVICE_PARAMETER_KEYS = Object.keys(ServiceParametersSchema.shape) as ServiceParameterKey[];

function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((i) => {
      const path = i.path.length ? i.path.join(".") : "(root)";
      return `${path}: ${i.message}`;
    })
    .join("; ");
}

/** Validates (throws `ValidationError` naming the member) and returns the parsed camelCase object. */
export function validateServiceParameters(input: unknown, label = "serviceParameters"): ServiceParameters {
  const result = ServiceParametersSchema.safeParse(input ?? {});
  if (!result.success) {
    throw new ValidationError(`invalid ${label}: ${formatIssues(result.error.issues)}`, {
      issues: result.error.issues,
    });
  }
  return result.data;
}

/** camelCase -> the wire object (snake_case, brand applied). Undefined members are left out. */
export function toWireServiceParameters(params: ServiceParameters, brand?: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of SERVICE_PARAMETER_KEYS) {
    const value = params[key];
    if (value !== undefined) out[serviceParameterWireName(key, brand)] = value;
  }
  return out;
}

/** Echoed `service_parameters` of a response (wire names kept as sent by the service). */
export interface ServiceParametersEcho {
  enable_e2ee?: boolean;
  enable_web_search?: WebSearchMode;
  enable_web_citations?: boolean;
  enable_web_scraping?: boolean;
  include_search_results_in_stream?: boolean;
  return_search_results_as_documents?: boolean;
  strip_thinking_response?: boolean;
  disable_thinking?: boolean;
  character_slug?: string;
  web_search_citations?: WebSearchCitation[];
  [key: string]: unknown;
}

export interface WebSearchCitation {
  title: string;
  url: string;
  content?: string;
  date?: string;
  [key: string]: unknown;
}
