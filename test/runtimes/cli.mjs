/**
 * The scenario as a command (Node, Bun, Deno): its config is the JSON in SCENARIO_CONFIG (the emulator URL, keys
 * and chain facts; an env variable keeps the keys out of the process list), one JSON line per step on stdout.
 */
import { runScenario } from "./scenario.mjs";

const raw = globalThis.Deno ? globalThis.Deno.env.get("SCENARIO_CONFIG") : globalThis.process.env.SCENARIO_CONFIG;
if (!raw) throw new Error("SCENARIO_CONFIG (JSON) is not set");
const config = JSON.parse(raw);
// `injectedKeys`: the EVM wallets are an EIP-1193 provider over these keys (./eip1193.mjs), as in a page
if (config.injectedKeys) {
  const { injectedProvider } = await import("./eip1193.mjs");
  config.evmProvider = injectedProvider(config.injectedKeys, config.chain.chainId);
  delete config.injectedKeys;
}
const entries = {
  "langchain-service": () => import("langchain-service"),
  "langchain-service/evm": () => import("langchain-service/evm"),
  "langchain-service/solana": () => import("langchain-service/solana"),
};
// where each name resolved: the built package, never src/
await runScenario(
  config,
  (line) => console.log(line),
  entries,
  (name) => import.meta.resolve(name),
);
