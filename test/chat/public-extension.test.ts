/**
 * `ChatService` is a plain LangChain chat model: it implements `_generate`, `_streamResponseChunks`,
 * `invocationParams` and the other documented hooks, overrides none of the public run methods, and no source file
 * reaches into core's internals (its async-context singleton, the config splitting of `Runnable`, its `_`-prefixed
 * members). So callbacks,
 * tracing and caching take core's own path: a handler that core's configure hook adds (what tracers do) sees every
 * call, the one right after a call without handlers too. Against the emulator over loopback.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { registerConfigureHook, setContextVariable } from "@langchain/core/context";
import { InMemoryCache } from "@langchain/core/caches";
import { ChatService } from "../../src/chat/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));
const CORE = fileURLToPath(new URL("../../node_modules/@langchain/core/dist/", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : /\.m?ts$/.test(name) ? [path] : [];
  });
}

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: [{ key: "k", usd: 100 }] });
});
afterAll(async () => {
  await emu?.close();
});

const model = (fields: Partial<ConstructorParameters<typeof ChatService>[0]> = {}) =>
  new ChatService({ model: "emu-m", apiKey: "k", baseUrl: emu.url, maxTokens: 32, ...fields });

describe("ChatService on LangChain's public extension points", () => {
  it("overrides none of the public run methods of Runnable and BaseChatModel", () => {
    const own = Object.getOwnPropertyNames(ChatService.prototype);
    for (const method of [
      "invoke",
      "stream",
      "batch",
      "transform",
      "streamEvents",
      "_streamIterator",
      "generate",
      "generatePrompt",
      "_generateUncached",
    ]) {
      expect(own, method).not.toContain(method);
    }
    for (const hook of ["_generate", "_streamResponseChunks", "invocationParams", "_llmType", "getLsParams"])
      expect(own, hook).toContain(hook);
  });

  it("no source file imports core's internals (the config splitting of Runnable, running code in a config)", () => {
    const internal = /_separateRunnableConfigFromCallOptions|pickRunnableConfigKeys|raceWithSignal|runWithConfig/;
    const offenders = sources(SRC).filter((file) => internal.test(readFileSync(file, "utf8")));
    expect(offenders.map((f) => relative(SRC, f))).toEqual([]);
  });

  it("no source file uses an `_`-prefixed member of core's classes (`_updateId`...) beyond the hooks it implements", () => {
    // core's underscore members, from its type declarations; the ones src defines itself are the hooks core calls
    const declared = /^\s*(?:(?:protected|public|static|readonly|abstract|override|async)\s+)*(_[A-Za-z]\w*)\??\s*[(<:]/gm;
    const names = (files: string[]) =>
      new Set(files.flatMap((file) => [...readFileSync(file, "utf8").matchAll(declared)].map((m) => m[1]!)));
    const core = names(sources(CORE).filter((file) => file.endsWith(".d.ts")));
    expect(core).toContain("_updateId");
    const hooks = names(sources(SRC));
    const used = sources(SRC).flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(/\.\s*(_[A-Za-z]\w*)/g)]
        .map((m) => m[1]!)
        .filter((name) => core.has(name) && !hooks.has(name))
        .map((name) => `${relative(SRC, file)}: ${name}`),
    );
    expect(used).toEqual([]);
  });

  it("the async-context singleton is read in one place, only as LangChain's own helpers read it", () => {
    // src/runtime/run-context.ts reads the run's config (`getRunnableConfig()`, as `dispatchCustomEvent` and
    // LangGraph's `getConfig()` do) and installs AsyncLocalStorage where the runtime has it (as
    // `@langchain/langgraph/setup/async_local_storage` does); nothing else touches the singleton
    const users = sources(SRC).filter((file) =>
      /@langchain\/core\/singletons|AsyncLocalStorageProviderSingleton/.test(readFileSync(file, "utf8")),
    );
    expect(users.map((f) => relative(SRC, f))).toEqual(["runtime/run-context.ts"]);
    const text = readFileSync(join(SRC, "runtime/run-context.ts"), "utf8");
    const calls = [...text.matchAll(/AsyncLocalStorageProviderSingleton\.(\w+)/g)].map((m) => m[1]);
    expect([...new Set(calls)].sort()).toEqual(["getRunnableConfig", "initializeGlobalInstance"]);
  });

  it("a handler added by core's configure hook (as a tracer is) sees the call right after one without handlers, invoked and streamed", async () => {
    const m = model();
    await m.invoke("hello"); // no handler anywhere: nothing to see
    const seen: string[] = [];
    class Seer extends BaseCallbackHandler {
      name = "seer";
      override handleChatModelStart() {
        seen.push("start");
      }
      override handleLLMEnd() {
        seen.push("end");
      }
    }
    registerConfigureHook({ contextVar: "service_test_seer" });
    setContextVariable("service_test_seer", new Seer());
    await m.invoke("hello again");
    expect(seen).toEqual(["start", "end"]);
    for await (const _ of await m.stream("and a stream")) void _;
    expect(seen).toEqual(["start", "end", "start", "end"]);
    setContextVariable("service_test_seer", undefined);
  });

  it("caching takes core's path: the second identical call is answered from the cache, sending nothing", async () => {
    const m = model({ cache: new InMemoryCache() });
    const first = await m.invoke("cache me [[emu:tokens=5]]");
    expect(first.usage_metadata?.total_tokens).toBeGreaterThan(0); // read now: core zeroes the cached message's usage in place
    const second = await m.invoke("cache me [[emu:tokens=5]]");
    expect(second.content).toBe(first.content);
    expect(second.usage_metadata?.total_tokens).toBe(0); // core's mark of an answer read from the cache
  });
});
