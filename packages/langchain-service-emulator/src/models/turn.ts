/**
 * The turn as the model reads it: the last user message's directives and question, the tool results since it,
 * and the tool calls this turn makes (directives first, else the planner, ./planner.ts).
 */
import type { InBandErrorKind } from "./chat-behaviour.js";
import { parseDirectives, type Directives } from "./directives.js";
import { callSignature, planToolCalls, type PlannedCall, type ToolChoice, type ToolSpec } from "./planner.js";
import type { ChatRequest } from "./request.js";
import { toolCallsOf, type SeenMessage } from "./seen-messages.js";

export interface Turn {
  directives: Directives;
  /** `[[emu:refuse]]`, or a provider's block without a stream */
  refused: boolean;
  /** the in-band error the stream fails with */
  failure: InBandErrorKind | undefined;
  question: string;
  /** the last message is a tool result */
  afterToolResults: boolean;
  alreadyCalled: PlannedCall[];
  toolResults: { name: string; content: string }[];
}

export function readTurn(request: ChatRequest, seen: SeenMessage[]): Turn {
  const messages = request.messages;
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === "user") {
      lastUser = i;
      break;
    }
  }
  const directives = parseDirectives(lastUser >= 0 ? seen[lastUser]!.text : "");
  // a provider's block mid-stream is an in-band error; without a stream it is the refusal itself
  const stream = request.stream === true;
  const refused = directives.refuse || (directives.errorKind === "content_filter" && !stream);
  const failure = directives.errorKind === "content_filter" && !stream ? undefined : directives.errorKind;
  const question = lastUser >= 0 ? directives.text : (seen[seen.length - 1]?.text ?? "").trim();
  const afterToolResults = messages[messages.length - 1]?.role === "tool";
  const alreadyCalled: PlannedCall[] = [];
  const toolNames = new Map<string, string>();
  const toolResults: { name: string; content: string }[] = [];
  messages.forEach((message, i) => {
    if (i <= lastUser) return;
    for (const c of toolCallsOf(message)) {
      alreadyCalled.push({ name: c.name, arguments: c.arguments });
      toolNames.set(c.id, c.name);
    }
    if (message.role === "tool") {
      toolResults.push({ name: toolNames.get(message.tool_call_id) ?? message.name ?? "the tool", content: seen[i]!.text });
    }
  });
  return { directives, refused, failure, question, afterToolResults, alreadyCalled, toolResults };
}

function resolveToolChoice(raw: ChatRequest["tool_choice"]): ToolChoice {
  if (raw === null || raw === undefined) return "auto";
  if (typeof raw === "string") return raw === "any" ? "required" : raw;
  return { name: raw.function.name };
}

/** The tool calls of this turn: directives not yet answered, else the planner's when tools are offered. */
export function planTurnCalls(request: ChatRequest, turn: Turn, functionTools: ToolSpec[]): PlannedCall[] {
  const { directives, question, alreadyCalled } = turn;
  const toolChoice = resolveToolChoice(request.tool_choice);
  const parallel = request.parallel_tool_calls ?? true;
  const seenCalls = new Set(alreadyCalled.map(callSignature));
  let calls: PlannedCall[] = directives.tools.filter((c) => !seenCalls.has(callSignature(c)));
  if (calls.length === 0 && functionTools.length > 0 && toolChoice !== "none") {
    calls = planToolCalls({ tools: functionTools, toolChoice, parallel, userText: question, alreadyCalled });
  }
  if (!parallel) calls = calls.slice(0, 1);
  return calls;
}
