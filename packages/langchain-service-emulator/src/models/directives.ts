/**
 * Test directives (`[[emu:...]]`), written anywhere in the last user message and removed from the text the model
 * "sees" (the list is in ./engine.ts).
 */
import type { InBandErrorKind } from "./chat-behaviour.js";
import type { PlannedCall } from "./planner.js";
import { InvalidRequest } from "./request.js";

/** upper bound of `[[emu:tokens=N]]` */
export const MAX_DIRECTIVE_TOKENS = 5_000_000;

export interface Directives {
  tokens?: number;
  /** any `[[emu:error]]` directive */
  error: boolean;
  /** which in-band error it asks for (`[[emu:error]]`: `upstream_error`) */
  errorKind?: InBandErrorKind;
  /** `[[emu:refuse]]` */
  refuse: boolean;
  tools: PlannedCall[];
  /** the text without directives, trimmed */
  text: string;
}

const TOOL_DIRECTIVE_RE = /\[\[emu:tool=([\w.-]+)\s*(\{[\s\S]*?\})?\s*\]\]/g;
const TOKENS_DIRECTIVE_RE = /\[\[emu:tokens=(\d+)\]\]/g;
const ERROR_DIRECTIVE_RE = /\[\[emu:error(?:=(upstream_error|model_overloaded|content_filter|e2ee_attestation_stale|api_error))?\]\]/g;
const REFUSE_DIRECTIVE_RE = /\[\[emu:refuse\]\]/g;

export function parseDirectives(text: string): Directives {
  const tools: PlannedCall[] = [];
  for (const m of text.matchAll(TOOL_DIRECTIVE_RE)) {
    let args: unknown = {};
    if (m[2]) {
      try {
        args = JSON.parse(m[2]);
      } catch {
        throw new InvalidRequest("Invalid [[emu:tool]] directive", { messages: `arguments of ${m[1]} are not JSON: ${m[2]}` });
      }
    }
    tools.push({ name: m[1] ?? "", arguments: args });
  }
  let tokens: number | undefined;
  for (const m of text.matchAll(TOKENS_DIRECTIVE_RE)) tokens = Number(m[1]);
  if (tokens !== undefined && tokens > MAX_DIRECTIVE_TOKENS) {
    throw new InvalidRequest("Invalid [[emu:tokens]] directive", { messages: `at most ${MAX_DIRECTIVE_TOKENS} tokens` });
  }
  let errorKind: InBandErrorKind | undefined;
  for (const m of text.matchAll(ERROR_DIRECTIVE_RE)) errorKind = (m[1] as InBandErrorKind | undefined) ?? "upstream_error";
  const refuse = REFUSE_DIRECTIVE_RE.test(text);
  REFUSE_DIRECTIVE_RE.lastIndex = 0;
  const stripped = text
    .replace(TOOL_DIRECTIVE_RE, "")
    .replace(TOKENS_DIRECTIVE_RE, "")
    .replace(ERROR_DIRECTIVE_RE, "")
    .replace(REFUSE_DIRECTIVE_RE, "")
    .replace(/[ \t]{2,}/g, " ")
    .trim();
  return {
    ...(tokens !== undefined ? { tokens } : {}),
    error: errorKind !== undefined,
    ...(errorKind ? { errorKind } : {}),
    refuse,
    tools,
    text: stripped,
  };
}
