/**
 * The README's TypeScript blocks, shared by `scripts/check-readme.mjs` (type-check) and `test/readme/` (run).
 * The one hidden prelude declares only what the README's prose says a reader has already got (see its
 * "Configuration" table): the service's `baseUrl` and an `apiKey`. Everything else a block uses must be
 * imported or defined in the block itself.
 */

/** The ```ts / ```typescript blocks: their code and the README line of their first code line (1-based). */
export function extractBlocks(markdown) {
  const blocks = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^\s*(```+|~~~+)\s*(ts|typescript)(\s.*)?$/.exec(lines[i]);
    if (!open) continue;
    const fence = open[1];
    const start = i + 1;
    let end = start;
    while (end < lines.length && !lines[end].trimStart().startsWith(fence)) end++;
    blocks.push({ line: start + 1, code: lines.slice(start, end).join("\n") });
    i = end;
  }
  return blocks;
}

/** For the type-check: the prelude's names, declared (an ambient script, so every block sees them). */
export const DECLARED_PRELUDE = `// What the README's prose assumes a reader has (see "Configuration"), and nothing more.
declare const baseUrl: string; // the service's base URL, including /api/v1
declare const apiKey: string; // an API key of the service
`;

/** For a run: the same names, from the environment the README's own commands use. Kept on one line. */
export const RUN_PRELUDE = "const baseUrl = process.env.SERVICE_BASE_URL!; const apiKey = process.env.SERVICE_API_KEY!;";

/** The workspace's own specifiers (the client's entries and the emulator package), as they map to their source. */
export const PACKAGE_ENTRIES = {
  "langchain-service": "src/index.ts",
  "langchain-service/chat": "src/chat/index.ts",
  "langchain-service-emulator": "packages/langchain-service-emulator/src/index.ts",
  "langchain-service/redis": "src/redis/index.ts",
  "langchain-service/evm": "src/evm/index.ts",
  "langchain-service/solana": "src/solana/index.ts",
  "langchain-service/agents": "src/agents/index.ts",
  "langchain-service/solana-connection": "src/solana-connection/index.ts",
};
