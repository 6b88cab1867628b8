/**
 * One process of an agent fleet (spawned by fleet.test.ts through test/store/processes.ts): it builds the fleet's budget
 * by name on a RedisStore, prints `ready`, waits for `go` on stdin, runs the looping tool agent under
 * `spendLimitMiddleware({ budget })`, and prints one JSON line: its balance reads, its final message, its state's
 * `spend`.
 *
 * Job (JSON in FLEET_JOB): { url, redis, prefix, name, maxUsd }
 */
import { createInterface } from "node:readline";
import { ToolMessage } from "@langchain/core/messages";
import { RedisStore } from "../../src/store/redis.js";
import { SpendBudget } from "../../src/spend/budget.js";
import { spendLimitMiddleware } from "../../src/agents/index.js";
import { QUESTION, RUN, loopingAgent } from "./helpers.js";

const job = JSON.parse(process.env.FLEET_JOB ?? "{}") as { url: string; redis: string; prefix: string; name: string; maxUsd: number };
const store = new RedisStore({ url: job.redis, prefix: job.prefix });
const budget = new SpendBudget({ maxUsd: job.maxUsd, name: job.name, store });
await budget.refresh(); // connected before the start line
const lines = createInterface({ input: process.stdin });
const go = new Promise<void>((resolve) => lines.on("line", (l) => l.trim() === "go" && resolve()));
process.stdout.write("ready\n");
await go;
lines.close();

const agent = loopingAgent({ url: job.url }, [spendLimitMiddleware({ budget })]);
const result = (await agent.invoke({ messages: [QUESTION] }, RUN)) as { messages: ToolMessage[]; spend: unknown };
const reads = result.messages.filter((m) => ToolMessage.isInstance(m) && m.status !== "error").length;
process.stdout.write(`${JSON.stringify({ reads, final: String(result.messages.at(-1)!.content), spend: result.spend })}\n`);
await store.close();
