/**
 * Legacy `<think>...</think>` blocks in content (models using the think-tag format, when the service did not
 * strip them): split into reasoning and visible content. Written by hand because the stream variant must
 * handle tags cut across chunks, which no kept library does.
 */

const OPEN = "<think>";
const CLOSE = "</think>";

export interface ThinkSplit {
  /** the visible answer, think blocks removed */
  content: string;
  /** the text inside the think blocks, joined */
  reasoning: string;
}

/** Splits a whole text. An unclosed `<think>` counts as reasoning up to the end. */
export function splitThinkTags(text: string): ThinkSplit {
  if (!text.includes(OPEN) && !text.includes(CLOSE)) return { content: text, reasoning: "" };
  const splitter = new ThinkTagSplitter();
  const a = splitter.push(text);
  const b = splitter.flush();
  return { content: a.content + b.content, reasoning: a.reasoning + b.reasoning };
}

/** Length of the longest suffix of `text` that is a proper prefix of `tag` (a tag possibly cut in two). */
function partialTagSuffix(text: string, tag: string): number {
  const max = Math.min(tag.length - 1, text.length);
  for (let n = max; n > 0; n--) {
    if (text.endsWith(tag.slice(0, n))) return n;
  }
  return 0;
}

/** Incremental splitter for streamed content. */
export class ThinkTagSplitter {
  #inThink = false;
  #pending = "";
  /** whether any think tag was seen (so callers can leave plain streams untouched) */
  seen = false;
  #contentStarted = false;

  push(delta: string): ThinkSplit {
    let text = this.#pending + delta;
    this.#pending = "";
    let content = "";
    let reasoning = "";
    while (text.length > 0) {
      const tag = this.#inThink ? CLOSE : OPEN;
      const at = text.indexOf(tag);
      if (at === -1) {
        const keep = partialTagSuffix(text, tag);
        const out = text.slice(0, text.length - keep);
        this.#pending = text.slice(text.length - keep);
        if (this.#inThink) reasoning += out;
        else content += out;
        break;
      }
      if (this.#inThink) reasoning += text.slice(0, at);
      else content += text.slice(0, at);
      this.seen = true;
      this.#inThink = !this.#inThink;
      text = text.slice(at + tag.length);
    }
    // The answer usually starts with a newline after `</think>`: drop leading whitespace of the answer.
    if (this.seen && !this.#contentStarted) {
      content = content.replace(/^\s+/, "");
      if (content) this.#contentStarted = true;
    } else if (content) this.#contentStarted = true;
    return { content, reasoning };
  }

  flush(): ThinkSplit {
    const rest = this.#pending;
    this.#pending = "";
    return this.#inThink ? { content: "", reasoning: rest } : { content: rest, reasoning: "" };
  }
}
