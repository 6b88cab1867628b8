/** One row of the benchmark table. `ratio` is against the row's anchor (1.0 = the anchor itself). */
export interface BenchRow {
  name: string;
  median_ms: number;
  ratio: number;
  anchor?: string;
  note?: string;
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
