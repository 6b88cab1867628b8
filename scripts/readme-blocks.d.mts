export interface ReadmeBlock {
  /** README line of the block's first code line (1-based) */
  line: number;
  code: string;
}
export function extractBlocks(markdown: string): ReadmeBlock[];
export const DECLARED_PRELUDE: string;
export const RUN_PRELUDE: string;
export const PACKAGE_ENTRIES: Record<string, string>;
