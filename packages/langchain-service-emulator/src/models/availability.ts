/**
 * What the live service refuses per model before inference, from the model's record (live mode; option
 * `modelGates`): an offline model is a 503, a region-restricted one a 403 (no caller of the emulator is in its
 * region), and, as capability gates (`chat.capabilityGates`, counted in the unsupported-feature budget), a
 * `reasoning_effort` outside its `reasoningEffortOptions` (the top-level one wins over `reasoning.effort`) and, on
 * a model that refuses them as OpenAI reasoning models do, `stop`, `seed`, `n` ≠ 1 and non-zero penalties: a 400
 * whose `issues[]` entry reads "<field> is not supported by this model".
 */
import { isLiveMode, type EmulatorOptions } from "../types.js";
import type { CapabilityIssue } from "./capabilities.js";
import { reasoningEffortOptions, type EmulatedModel } from "./catalog.js";
import type { ChatRequest } from "./request.js";

/** Whether offline and region-restricted models are refused (live default). */
export function modelGatesOn(options: Pick<EmulatorOptions, "mode" | "modelGates">): boolean {
  return options.modelGates ?? isLiveMode(options);
}

/** The 503 or 403 a call of `model` gets; undefined when it is served. */
export function availabilityRefusal(model: EmulatedModel): { status: number; body: { error: string } } | undefined {
  if (model.offline)
    return { status: 503, body: { error: `The model ${model.id} is currently offline. Please try again later or choose another model.` } };
  if (model.regionRestrictions) {
    return {
      status: 403,
      body: { error: `The model ${model.id} is not available in your region (served in: ${model.regionRestrictions.join(", ")}).` },
    };
  }
  return undefined;
}

/** The parameter gates `request` fails on `model`; empty when it passes. */
export function parameterIssues(request: ChatRequest, model: EmulatedModel): CapabilityIssue[] {
  const issues: CapabilityIssue[] = [];
  const refuse = (field: string, why = "") =>
    issues.push({ code: "custom", path: field.split("."), message: `${field} is not supported by this model${why}` });
  const options = reasoningEffortOptions(model);
  const top = request.reasoning_effort ?? undefined;
  const nested = request.reasoning?.effort ?? undefined;
  const effort = top ?? nested;
  if (options && effort !== undefined && !options.includes(effort)) {
    refuse(top !== undefined ? "reasoning_effort" : "reasoning.effort", ` (${effort}; it takes ${options.join(", ")})`);
  }
  if (model.refusesSamplingFields) {
    if (request.stop != null) refuse("stop");
    if (request.seed != null) refuse("seed");
    if (request.n != null && request.n !== 1) refuse("n");
    if (request.presence_penalty != null && request.presence_penalty !== 0) refuse("presence_penalty");
    if (request.frequency_penalty != null && request.frequency_penalty !== 0) refuse("frequency_penalty");
  }
  return issues;
}
