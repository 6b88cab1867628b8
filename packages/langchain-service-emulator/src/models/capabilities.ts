/**
 * The live service's capability gates on chat completions: a request asking a model for something its
 * `model_spec.capabilities` say it lacks is a 400 before any inference, whose `issues[]` entry names the field
 * and the reason. These 400s count against the separate unsupported-feature budget (200 per 30 s, logged as
 * `UNSUPPORTED_FEATURE_REQUESTS`), not against the failed-requests one (../rate-limits.ts).
 *
 * | the request sends | the model needs |
 * |---|---|
 * | `image_url` parts | `supportsVision` |
 * | `input_audio` parts | `supportsAudioInput` |
 * | `video_url` parts | `supportsVideoInput` |
 * | `tools`, `tool_choice`, `parallel_tool_calls: true` | `supportsFunctionCalling` |
 * | `response_format` other than `text` | `supportsResponseSchema` |
 * | `logprobs: true` or any `top_logprobs` | `supportsLogProbs` |
 *
 * The seed contract has no such gates (its engine refuses images on a text model and `json_schema` without
 * schema support, as ordinary 400s).
 */
import type { EmulatedModel, ModelCapabilities } from "./catalog.js";
import type { ChatRequest } from "./request.js";

/** One `issues[]` entry, in zod's shape (the live bodies carry zod issues). */
export interface CapabilityIssue {
  code: "custom";
  path: (string | number)[];
  message: string;
}

const PART_CAPABILITY: Record<string, { flag: keyof ModelCapabilities; what: string }> = {
  image_url: { flag: "supportsVision", what: "image input" },
  input_audio: { flag: "supportsAudioInput", what: "audio input" },
  video_url: { flag: "supportsVideoInput", what: "video input" },
};

/** The gates `request` fails on `model`, in the order of the table above; empty when it passes. */
export function capabilityIssues(request: ChatRequest, model: EmulatedModel): CapabilityIssue[] {
  const caps = model.capabilities;
  const issues: CapabilityIssue[] = [];
  const refuse = (path: (string | number)[], flag: keyof ModelCapabilities, what: string) =>
    issues.push({ code: "custom", path, message: `${what} is not supported by this model (${model.id} lacks ${flag})` });
  request.messages.forEach((message, i) => {
    if (message.role !== "user" || !Array.isArray(message.content)) return;
    message.content.forEach((part, j) => {
      const gate = PART_CAPABILITY[part.type];
      if (gate && !caps[gate.flag]) refuse(["messages", i, "content", j], gate.flag, gate.what);
    });
  });
  if (!caps.supportsFunctionCalling) {
    if (request.tools != null && request.tools.length > 0) refuse(["tools"], "supportsFunctionCalling", "Function calling");
    if (request.tool_choice != null) refuse(["tool_choice"], "supportsFunctionCalling", "tool_choice");
    if (request.parallel_tool_calls === true) refuse(["parallel_tool_calls"], "supportsFunctionCalling", "parallel_tool_calls");
  }
  const format = request.response_format;
  if (format != null && format.type !== "text" && !caps.supportsResponseSchema) {
    refuse(["response_format"], "supportsResponseSchema", `response_format ${format.type}`);
  }
  if (!caps.supportsLogProbs) {
    if (request.logprobs === true) refuse(["logprobs"], "supportsLogProbs", "logprobs");
    if (request.top_logprobs != null) refuse(["top_logprobs"], "supportsLogProbs", "top_logprobs");
  }
  return issues;
}
