/**
 * What the web, image and speech tools share: the connection (one fetch stack, given as a `ServiceClient`, a
 * `serviceFetch`, or the same options as `ChatService`), the split between the model's mistakes (answered as
 * `{"error": {...}}` text it can act on) and the system's failures (thrown), and output files.
 */
import type { ToolParams } from "@langchain/core/tools";
import { ServiceClient, type ServiceClientOptions } from "../client.js";
import { sharedStackOf } from "../stack.js";
import { ConfigurationError, ValidationError } from "../http/errors.js";
import type { ServiceResponseHeaders } from "../http/headers.js";
import { bytesToHex, randomBytes } from "../runtime/bytes.js";
import { nodeFiles, nodePath } from "../runtime/node.js";
import { errorContent, guard as guardTool, type ToolResult } from "./results.js";

export { ToolInputError, errorContent, type ToolResult } from "./results.js";

/**
 * Connection options of every tool: an existing `client` (its stack is shared), or a `serviceFetch`, or the
 * options `ChatService` takes (`apiKey`, `baseUrl`, `wallet`, `payment`, `store`, `retry`, ...), from which a stack
 * is built. Share one stack between the chat model and the tools to share one budget, one pacing, one guard.
 */
export interface ServiceToolConnection extends ServiceClientOptions {
  client?: ServiceClient;
  /** LangChain tool params (callbacks, tags, verbose, ...) */
  toolParams?: ToolParams;
}

export function clientOf(options: ServiceToolConnection | undefined): ServiceClient {
  if (options?.client !== undefined) {
    if (!(options.client instanceof ServiceClient)) throw new ConfigurationError("client must be a ServiceClient");
    sharedStackOf(options); // a different serviceFetch or context beside the client would be ignored: refused
    return options.client;
  }
  const { toolParams: _params, client: _client, ...connection } = options ?? {};
  return new ServiceClient(connection);
}

/**
 * Runs a tool body: the model's mistakes (see results.ts), a tool's own (`modelsMistake`), and a 403 from the
 * service (a page it will not scrape), go back to the model as `{error}` text; the rest is thrown to the caller.
 */
export function guard(body: () => Promise<ToolResult>, modelsMistake?: (err: unknown) => ToolResult | undefined): Promise<ToolResult> {
  return guardTool(
    body,
    (err) =>
      modelsMistake?.(err) ??
      ((err as { status?: number })?.status === 403 ? errorContent("FORBIDDEN", (err as Error).message) : undefined),
  );
}

/**
 * Checks an owner's `outputDir` option (ConfigurationError) and returns it absolute (where the runtime has
 * `node:path`; elsewhere writing a file fails with a ConfigurationError when it is tried).
 */
export function outputDirOption(dir: unknown): string | undefined {
  if (dir === undefined) return undefined;
  if (typeof dir !== "string" || dir.trim() === "" || dir.includes("\0"))
    throw new ConfigurationError("outputDir must be a non-empty directory path");
  return nodePath()?.resolve(dir) ?? dir;
}

/**
 * Writes `bytes` to a new file in `dir` (created if needed) named by the tool, never by the model:
 * `<prefix>-<UTC time>-<random>.<ext>`, opened with `wx` (never overwrites, never follows a planted symlink at
 * that name), and checked to lie inside `dir` once written. Returns the absolute path.
 */
export async function writeOutputFile(dir: string, prefix: string, ext: string, bytes: Uint8Array): Promise<string> {
  if (!/^[a-z0-9-]{1,20}$/.test(prefix) || !/^[a-z0-9]{1,5}$/.test(ext)) throw new ValidationError("bad output file name parts");
  const {
    fs: { mkdir, open, realpath },
    path: { isAbsolute, join, relative },
  } = nodeFiles("outputDir");
  await mkdir(dir, { recursive: true });
  const stamp = new Date()
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  const path = join(dir, `${prefix}-${stamp}-${bytesToHex(randomBytes(4))}.${ext}`);
  const file = await open(path, "wx", 0o644);
  try {
    await file.writeFile(bytes);
  } finally {
    await file.close();
  }
  const [realDir, realFile] = await Promise.all([realpath(dir), realpath(path)]);
  const rel = relative(realDir, realFile);
  if (rel.startsWith("..") || isAbsolute(rel)) throw new ConfigurationError(`refusing to write outside outputDir (${dir})`);
  return path;
}

export { awaitShared } from "../http/shared-wait.js";

/** `X-Balance-Remaining` (wallet callers) of a response, for the artifact. */
export function balanceOf(headers: ServiceResponseHeaders | undefined): { balanceRemainingUsd?: number } {
  const v = headers?.balance?.remainingUsd;
  return typeof v === "number" ? { balanceRemainingUsd: v } : {};
}
