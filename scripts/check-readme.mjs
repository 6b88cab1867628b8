#!/usr/bin/env node
/**
 * Type-checks every ```ts block of README.md as its own ES module, strict (the project's own compiler options:
 * `strict`, `noUncheckedIndexedAccess`, NodeNext), against the package's source: `langchain-service`,
 * `langchain-service/chat` and `langchain-service-emulator` map to their `src/…/index.ts`; every other import
 * (`@langchain/core/messages`, `langchain`, `zod`…) resolves from node_modules as in a user's project.
 * A block's errors are reported at their README line. Part of `npm test` and `.ci/run`.
 *
 * The one hidden prelude (DECLARED_PRELUDE in ./readme-blocks.mjs) declares only what the README's prose says a
 * reader has already got: the service's `baseUrl` and an `apiKey`. Everything else must be in the block.
 *
 *   node scripts/check-readme.mjs [README.md]   (npm run check:readme: the root's and the emulator package's)
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { DECLARED_PRELUDE, PACKAGE_ENTRIES, extractBlocks } from "./readme-blocks.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const README = resolve(process.argv[2] ?? join(ROOT, "README.md"));
// inside the checkout, so that imports resolve from its node_modules as they would in a user's project
const WORK = join(ROOT, "node_modules", ".cache", "check-readme");

const blocks = extractBlocks(readFileSync(README, "utf8"));
if (blocks.length === 0) {
  console.error(`check-readme: no TypeScript blocks in ${relative(ROOT, README)}`);
  process.exit(1);
}

rmSync(WORK, { recursive: true, force: true });
mkdirSync(WORK, { recursive: true });
writeFileSync(join(WORK, "prelude.d.ts"), DECLARED_PRELUDE);
const files = new Map();
for (const block of blocks) {
  const file = join(WORK, `readme-line-${block.line}.mts`);
  // `export {}` keeps a block without imports a module (its own scope, top-level await allowed)
  writeFileSync(file, `${block.code}\nexport {};\n`);
  files.set(file, block);
}

const rootConfig = ts.readConfigFile(join(ROOT, "tsconfig.json"), ts.sys.readFile);
if (rootConfig.error) throw new Error(ts.flattenDiagnosticMessageText(rootConfig.error.messageText, "\n"));
const toRoot = (p) => relative(WORK, join(ROOT, p)).split("\\").join("/");
const config = {
  compilerOptions: {
    ...rootConfig.config.compilerOptions,
    strict: true,
    noEmit: true,
    paths: Object.fromEntries(Object.entries(PACKAGE_ENTRIES).map(([specifier, file]) => [specifier, [toRoot(file)]])),
  },
  files: ["prelude.d.ts", ...[...files.keys()].map((f) => relative(WORK, f))],
};
writeFileSync(join(WORK, "tsconfig.json"), `${JSON.stringify(config, null, 2)}\n`);

const parsed = ts.getParsedCommandLineOfConfigFile(
  join(WORK, "tsconfig.json"),
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
);
if (!parsed || parsed.errors.length) {
  for (const d of parsed?.errors ?? []) console.error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
  process.exit(1);
}
const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options });
// only the blocks (and the prelude) are checked: src itself is `npm run typecheck`'s, and checking the blocks
// alone makes the checker visit only what they use
const diagnostics = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()];
for (const source of program.getSourceFiles()) {
  if (!files.has(resolve(source.fileName)) && resolve(source.fileName) !== join(WORK, "prelude.d.ts")) continue;
  diagnostics.push(...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source));
}

let errors = 0;
for (const d of diagnostics) {
  const message = ts.flattenDiagnosticMessageText(d.messageText, "\n  ");
  const block = d.file && files.get(resolve(d.file.fileName));
  if (d.file && block && d.start !== undefined) {
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
    console.error(`${relative(process.cwd(), README)}:${block.line + line}:${character + 1} - error TS${d.code}: ${message}`);
  } else if (d.file && d.start !== undefined) {
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
    console.error(`${relative(process.cwd(), d.file.fileName)}:${line + 1}:${character + 1} - error TS${d.code}: ${message}`);
  } else {
    console.error(`error TS${d.code}: ${message}`);
  }
  errors++;
}
if (errors) {
  console.error(`check-readme: ${errors} error(s) in ${blocks.length} TypeScript blocks of ${relative(ROOT, README)}`);
  process.exit(1);
}
console.log(`check-readme: ${blocks.length} TypeScript blocks of ${relative(ROOT, README)} type-check (strict, against src/)`);
