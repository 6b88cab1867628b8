#!/usr/bin/env node
// The package's command line. `emulator` runs the local service emulator: the built one (dist/) when the
// package is installed, else the TypeScript source through tsx (in a checkout).
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const USAGE = `Usage: langchain-service <command> [options]

Commands:
  emulator    run the local service emulator (see: langchain-service emulator --help)
`;

const [command, ...rest] = process.argv.slice(2);

if (command === undefined || command === "--help" || command === "-h" || command === "help") {
  process.stdout.write(USAGE);
  process.exit(command === undefined ? 2 : 0);
}

if (command !== "emulator") {
  process.stderr.write(`unknown command: ${command}\n\n${USAGE}`);
  process.exit(2);
}

const built = fileURLToPath(new URL("../dist/emulator/cli.js", import.meta.url));
let cli;
if (existsSync(built)) {
  cli = await import(pathToFileURL(built).href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  cli = await import(new URL("../src/emulator/cli.ts", import.meta.url).href);
}
await cli.run(rest);
