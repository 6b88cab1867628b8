/**
 * Node's file system, reached only when a Node-only feature is used (a tool that reads or writes local files,
 * a media upload given as a path). Not an `import`: `process.getBuiltinModule` (Node 20.16+, Bun, Deno,
 * workerd with nodejs_compat) is a call that bundlers do not follow, so a bundle for a browser or a worker
 * holds no `node:` module and importing the package there loads none.
 */
import { ConfigurationError } from "../http/errors.js";

type Fs = typeof import("node:fs");
type FsPromises = typeof import("node:fs/promises");
type Path = typeof import("node:path");

type GetBuiltin = (id: string) => unknown;
const getBuiltin = (): GetBuiltin | undefined =>
  (globalThis as { process?: { getBuiltinModule?: GetBuiltin } }).process?.getBuiltinModule?.bind(globalThis.process);

/** `node:path`, when this runtime has it (for resolving an owner's directory option at construction). */
export function nodePath(): Path | undefined {
  return getBuiltin()?.("node:path") as Path | undefined;
}

export interface NodeFiles {
  fs: FsPromises;
  constants: Fs["constants"];
  path: Path;
}

/** Node's `fs/promises`, `fs.constants` and `path`; a ConfigurationError naming `feature` where there are none. */
export function nodeFiles(feature: string): NodeFiles {
  const get = getBuiltin();
  const fs = get?.("node:fs/promises") as FsPromises | undefined;
  const sync = get?.("node:fs") as Fs | undefined;
  const path = get?.("node:path") as Path | undefined;
  if (!fs || !sync || !path) {
    throw new ConfigurationError(
      `${feature} reads or writes local files, which needs Node 20.16+ (or Bun, Deno): pass bytes, a Blob or a stream instead`,
    );
  }
  return { fs, constants: sync.constants, path };
}
