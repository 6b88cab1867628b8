import { defineConfig } from "tsup";

export default defineConfig({
  entry: { index: "src/index.ts", cli: "src/cli.ts" },
  format: ["esm", "cjs"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node20",
  splitting: true,
  // the client is a peer: imported by name, never bundled (tsup leaves dependencies and peers external)
  external: ["langchain-service"],
});
