/**
 * `/models` records (src/models/records.ts, facts.ts) and what is built from them (src/chat/profile.ts): a listing
 * as the live service sends it, altered member by member (wrong types, nulls, huge and negative numbers, cut JSON),
 * reads as records or a ResponseFormatError; the facts, prices and profile of any record that reads are
 * well-typed (finite positive limits, booleans, string lists), never a throw.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChatService } from "../../src/chat/index.js";
import { profileFromRecord } from "../../src/chat/profile.js";
import { ServiceClient } from "../../src/client.js";
import { createServiceContext } from "../../src/http/context.js";
import { ResponseFormatError } from "../../src/http/errors.js";
import { modelFacts } from "../../src/models/facts.js";
import { ModelListSchema, modelPricing, type ServiceModel } from "../../src/models/records.js";
import { jsonValue, nearValid, startLoopback, textMutation, timed, typedOutcome, type Loopback } from "./bounds.js";

/** one record as the live listing has it (notes: service.md, service-live.md) */
const RECORD = {
  id: "m-large",
  object: "model",
  owned_by: "service",
  type: "text",
  created: 1_727_966_436,
  context_length: 131_072,
  model_spec: {
    name: "M Large",
    availableContextTokens: 131_072,
    maxCompletionTokens: 8_192,
    pricing: {
      input: { usd: 0.5, diem: 0.5 },
      output: { usd: 2, diem: 2 },
      cache_input: { usd: 0.05, diem: 0.05 },
      extended: { context_token_threshold: 200_000, input: { usd: 1, diem: 1 } },
    },
    capabilities: {
      supportsFunctionCalling: true,
      supportsReasoning: true,
      supportsWebSearch: true,
      supportsVision: false,
      supportsResponseSchema: true,
      supportsLogProbs: false,
      reasoningEffortOptions: ["low", "medium", "high"],
      maxImages: 10,
    },
    traits: ["default"],
    privacy: "private",
    offline: false,
    beta: false,
    regionRestrictions: ["US"],
    deprecation: { autoRemap: true, removesAt: "2027-01-01T00:00:00Z", replacementModelId: "m-next" },
  },
};
const LIST = { object: "list", data: [RECORD, { ...RECORD, id: "m-small", model_spec: { ...RECORD.model_spec, traits: ["fastest"] } }] };

const listText = fc.oneof(
  { weight: 4, arbitrary: nearValid(LIST).map((v) => JSON.stringify(v) ?? "") },
  { weight: 1, arbitrary: textMutation(JSON.stringify(LIST)) },
  { weight: 1, arbitrary: jsonValue.map((v) => JSON.stringify(v) ?? "") },
);

function checkDerived(record: ServiceModel): void {
  const profile = profileFromRecord(record);
  for (const key of ["maxInputTokens", "maxOutputTokens"] as const) {
    const v = profile[key];
    expect(v === undefined || (typeof v === "number" && Number.isFinite(v) && v > 0)).toBe(true);
  }
  for (const [k, v] of Object.entries(profile)) if (k !== "deprecation" && !k.startsWith("max")) expect(typeof v).toBe("boolean");
  const facts = modelFacts(record);
  for (const key of ["regionRestrictions", "reasoningEffortOptions"] as const) {
    const v = facts[key];
    expect(v === undefined || (Array.isArray(v) && v.every((x) => typeof x === "string"))).toBe(true);
  }
  for (const key of ["offline", "beta"] as const) expect([true, false, undefined]).toContain(facts[key]);
  for (const key of ["maxImages", "maxVideos"] as const) {
    const v = facts[key];
    expect(v === undefined || (Number.isInteger(v) && v > 0)).toBe(true);
  }
  const pricing = modelPricing(record);
  for (const price of [pricing?.input, pricing?.output, pricing?.cacheInput, pricing?.cacheWrite, pricing?.extended?.input]) {
    if (price) expect(Number.isFinite(price.usd) && Number.isFinite(price.diem)).toBe(true);
  }
}

describe("the records schema and what is built from a record", () => {
  it("a near-valid listing parses or fails the schema; every record that parses gives well-typed facts", () => {
    fc.assert(
      fc.property(
        listText,
        timed(1_000, (text) => {
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            return;
          }
          const parsed = ModelListSchema.safeParse(json);
          if (parsed.success) for (const record of parsed.data.data) checkDerived(record);
        }),
      ),
      { numRuns: 400 },
    );
  });
});

describe("over loopback", () => {
  let lb: Loopback;
  beforeAll(async () => {
    lb = await startLoopback();
  });
  afterAll(() => lb.close());

  it("client.models().load() and ChatService.loadProfile(): records and a profile, or a typed error", async () => {
    await fc.assert(
      fc.asyncProperty(listText, fc.constantFrom("m-large", "fastest", "default", "gpt-4o"), async (text, id) => {
        lb.handler = (req, res) => {
          // the compatibility mapping: a near-valid alias table of the same answer's ids
          const body = (req.url ?? "").includes("compatibility_mapping") ? JSON.stringify({ data: { "gpt-4o": "m-small" } }) : text;
          res.writeHead(200, { "content-type": "application/json" });
          res.end(body);
        };
        // a fresh context each run: nothing read before is shared
        const context = createServiceContext();
        const client = new ServiceClient({ baseUrl: lb.url, apiKey: "k", retry: false, pacing: false, abuseGuard: false, context });
        const out = await typedOutcome(() => client.models().load({ force: true }), 2_000);
        if (out.ok) for (const record of out.value.values()) checkDerived(record);
        else expect(out.error).toBeInstanceOf(ResponseFormatError);
        const model = new ChatService({ model: id, apiKey: "k", baseUrl: lb.url, retry: false, abuseGuard: false, pacing: false, context });
        const profile = await typedOutcome(() => model.loadProfile(), 2_000);
        // a listed model's profile, or `{}` for one the (altered) listing does not hold
        if (profile.ok && Object.keys(profile.value).length) expect(profile.value.pdfInputs).toBe(true);
      }),
      { numRuns: 40 },
    );
  });
});
