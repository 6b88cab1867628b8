/**
 * Files a tool reads on the model's word (audio to transcribe, images to edit): only under the directories its
 * owner allowed (`inputDir`), told both by the path as written and by where it really leads (a symlink out of the
 * directory is refused as well as `../`), and refused before any request. The model's mistakes (a path outside,
 * a file that is not there, too big) go back to it as ToolInputError codes.
 */
import type { PlatformPath } from "node:path";
import { ConfigurationError } from "../http/errors.js";
import { nodeFiles, nodePath } from "../runtime/node.js";
import { ToolInputError } from "./results.js";

/** Checks an owner's `inputDir` option (one directory or several) and returns them absolute. */
export function inputDirsOption(value: unknown, name = "inputDir"): string[] {
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0 || list.some((d) => typeof d !== "string" || d.trim() === "" || d.includes("\0"))) {
    throw new ConfigurationError(`${name} must be a directory path (or a non-empty list of them)`);
  }
  const path = nodePath();
  return (list as string[]).map((d) => path?.resolve(d) ?? d);
}

function inside({ relative, isAbsolute }: PlatformPath, dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel === "" ? false : !rel.startsWith("..") && !isAbsolute(rel);
}

export interface AllowedFile {
  bytes: Uint8Array;
  /** the file's real absolute path */
  path: string;
  name: string;
}

/**
 * Reads the file `path` (relative to the first allowed directory, or absolute) if it lies under an allowed
 * directory, as written and once symlinks are resolved; at most `maxBytes`.
 */
export async function readAllowedFile(dirs: readonly string[], path: unknown, maxBytes: number): Promise<AllowedFile> {
  if (typeof path !== "string" || path.trim() === "" || path.includes("\0"))
    throw new ToolInputError("INVALID_PATH", "path must name a file");
  const {
    fs: { open, realpath },
    constants,
    path: paths,
  } = nodeFiles("inputDir");
  const { basename, isAbsolute, resolve } = paths;
  const candidate = isAbsolute(path) ? resolve(path) : resolve(dirs[0]!, path);
  const refuse = () =>
    new ToolInputError(
      "PATH_NOT_ALLOWED",
      `${JSON.stringify(path)} is outside the directory this tool may read; give a path inside it (relative paths are read from it)`,
    );
  if (!dirs.some((d) => inside(paths, d, candidate))) throw refuse();
  let real: string;
  try {
    real = await realpath(candidate);
  } catch {
    throw new ToolInputError("FILE_NOT_FOUND", `no file ${JSON.stringify(path)} in the directory this tool may read`);
  }
  const realDirs = await Promise.all(dirs.map((d) => realpath(d).catch(() => undefined)));
  if (!realDirs.some((d) => d !== undefined && inside(paths, d, real))) throw refuse();
  // the resolved path, opened without following a link planted there since it was resolved
  const file = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => {
    throw new ToolInputError("FILE_NOT_FOUND", `no file ${JSON.stringify(path)} in the directory this tool may read`);
  });
  try {
    const stat = await file.stat();
    if (!stat.isFile()) throw new ToolInputError("NOT_A_FILE", `${JSON.stringify(path)} is not a file`);
    if (stat.size > maxBytes)
      throw new ToolInputError("FILE_TOO_LARGE", `${JSON.stringify(path)} is ${stat.size} bytes; at most ${maxBytes} are accepted`);
    return { bytes: new Uint8Array(await file.readFile()), path: real, name: basename(real) };
  } finally {
    await file.close();
  }
}
