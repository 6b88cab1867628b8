/**
 * Web-search citations: with `enableWebCitations` the model cites sources inline, as `^n^` / `^i,j^` (the live
 * service) or `[REF]n[/REF]` (the seed contract); both are read. `n` points into
 * `response_metadata.web_search_citations`.
 */
import type { WebSearchCitation } from "./service-parameters.js";

export interface CitationReference {
  /** the marker as written, e.g. `^1^`, `^1,3^` or `[REF]1[/REF]` */
  marker: string;
  /** offset of the marker in the text */
  start: number;
  end: number;
  /** the numbers inside the marker */
  numbers: number[];
  /** the citations they point to (numbers that point nowhere are left out) */
  citations: WebSearchCitation[];
}

export interface MappedCitations {
  /** the text with every marker replaced by `format(...)` (default `[n]`) */
  text: string;
  references: CitationReference[];
  /** the citations referenced at least once, in order of first reference, without duplicates */
  cited: WebSearchCitation[];
  /** numbers that did not match a citation */
  unresolved: number[];
}

export interface MapCitationsOptions {
  /** whether `n` counts from 0 or from 1 (default 1: `^1^` / `[REF]1[/REF]` is the first citation) */
  indexBase?: 0 | 1;
  /** how a marker is written in `text`; default `[n]` (`[1][2]` for several) */
  format?: (ref: CitationReference) => string;
}

const MARKER = /\[REF\]\s*(\d+(?:\s*,\s*\d+)*)\s*\[\/REF\]|\^(\d+(?:\s*,\s*\d+)*)\^/g;

/** Maps `^n^`, `^i,j^` (live) and `[REF]n[/REF]` (seed) markers in `text` to the citations of the response. */
export function mapCitations(
  text: string,
  citations: readonly WebSearchCitation[] | undefined,
  options: MapCitationsOptions = {},
): MappedCitations {
  const base = options.indexBase ?? 1;
  const list = citations ?? [];
  const references: CitationReference[] = [];
  const cited: WebSearchCitation[] = [];
  const unresolved: number[] = [];
  const format = options.format ?? ((ref: CitationReference) => ref.numbers.map((n) => `[${n}]`).join(""));
  const out = text.replace(MARKER, (marker: string, a: string | undefined, b: string | undefined, offset: number) => {
    const numbers = (a ?? b ?? "").split(",").map((s) => Number(s.trim()));
    const refCitations: WebSearchCitation[] = [];
    for (const n of numbers) {
      const citation = list[n - base];
      if (!citation) {
        unresolved.push(n);
        continue;
      }
      refCitations.push(citation);
      if (!cited.includes(citation)) cited.push(citation);
    }
    const ref: CitationReference = { marker, start: offset, end: offset + marker.length, numbers, citations: refCitations };
    references.push(ref);
    return format(ref);
  });
  return { text: out, references, cited, unresolved };
}
