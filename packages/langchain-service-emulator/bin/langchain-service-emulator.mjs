#!/usr/bin/env node
// `langchain-service-emulator [options]`: runs the local service emulator. Installed, it runs the built CLI
// (dist/); in a checkout without a build, the TypeScript source through tsx with the workspace's tsconfig,
// whose paths name both packages.
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const built = fileURLToPath(new URL("../dist/cli.js", import.meta.url));
let cli;
if (existsSync(built)) {
  cli = await import(pathToFileURL(built).href);
} else {
  const { register } = await import("tsx/esm/api");
  register({ tsconfig: fileURLToPath(new URL("../../../tsconfig.json", import.meta.url)) });
  cli = await import(new URL("../src/cli.ts", import.meta.url).href);
}
await cli.run(process.argv.slice(2));
