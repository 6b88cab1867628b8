import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const at = (path: string) => fileURLToPath(new URL(path, import.meta.url));

const TESTS = ["test/**/*.test.ts", "src/**/*.test.ts"];
/**
 * Files that run in a process of their own: those that spawn processes for most of their time (README blocks, the
 * runtimes, fleets), measure the heap (a shared process holds other files' garbage), and the suites of others that
 * nobody has checked in a shared process yet. Every other file shares its worker's process with the files before
 * it, on fresh modules of the client and the emulator (test/setup/fresh-modules.ts): the libraries under
 * node_modules (LangChain, ethers, viem, ...) load once per worker instead of once per file (2-4 s a file).
 */
const OWN_PROCESS = [
  "test/readme/readme.test.ts",
  "test/runtimes/runtimes.test.ts",
  "test/examples/fleet.test.ts",
  "test/store/{fleet,fleet-topup,http-fleet,limits-fleet,wallet-fleet}.test.ts",
  "test/edges/memory.test.ts",
  "test/load/memory.test.ts",
  "test/{fuzz,money,signals}/**/*.test.ts",
];

/** The longest files, started first: vitest orders by the last run's durations, or by size when it has none (a fresh clone). */
const LONGEST_FIRST = ["test/readme/readme.test.ts", "test/edges/memory.test.ts", "test/store/limits-fleet.test.ts"];
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const i = LONGEST_FIRST.findIndex((path) => f.moduleId.endsWith(path));
      return i === -1 ? LONGEST_FIRST.length : i;
    };
    return (await super.sort(files))
      .map((f, i) => ({ f, i }))
      .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
      .map(({ f }) => f);
  }
}

export default defineConfig({
  resolve: {
    // both workspace packages by name, from source (as tsconfig's paths): tests need no build
    alias: [
      { find: /^langchain-service-emulator$/, replacement: at("./packages/langchain-service-emulator/src/index.ts") },
      { find: /^langchain-service$/, replacement: at("./src/index.ts") },
      { find: /^langchain-service\/chat$/, replacement: at("./src/chat/index.ts") },
      { find: /^langchain-service\/redis$/, replacement: at("./src/redis/index.ts") },
    ],
  },
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: integration files start servers and local chains; keep parallelism modest.
    maxWorkers: 2,
    pool: "forks",
    // one line when the Redis store suite cannot run (or a failure under REQUIRE_REDIS=1)
    globalSetup: ["test/store/redis-global-setup.ts"],
    sequence: { sequencer: LongestFirst },
    // projects run in the order of their names: the long own-process files first, the shared ones fill in after
    projects: [
      { extends: true, test: { name: "1-own-process", include: OWN_PROCESS, isolate: true } },
      {
        extends: true,
        test: {
          name: "2-shared-process",
          include: TESTS,
          exclude: OWN_PROCESS,
          isolate: false,
          setupFiles: ["test/setup/fresh-modules.ts"],
        },
      },
    ],
  },
});
