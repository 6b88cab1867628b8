#!/usr/bin/env node
/**
 * Completes package-lock.json for `npm ci`.
 *
 * Why: the registry this project is built against serves only the platform packages of this machine
 * (linux-x64); the others (`@rollup/rollup-darwin-arm64`, `litesvm-darwin-x64`, …) answer 404, so `npm install`
 * writes a lock without them, and `npm ci` (npm 10 and 11) then refuses the lock: "Missing: … from lock file".
 * For each optional dependency the lock names but does not hold, this adds a minimal entry (name, version,
 * optional). `npm ci` accepts the lock; on a platform that needs one of them, npm fetches it by version (an
 * optional package that cannot be had is skipped, as npm always does for optional packages).
 *
 * Run after any dependency change: `npm install && node scripts/complete-lockfile.mjs`.
 */
import { readFileSync, writeFileSync } from "node:fs";

const path = process.argv[2] ?? new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8"));
const packages = lock.packages;

/** Where node's resolution finds `name` from package location `from` (itself nested, then each parent). */
function resolves(from, name) {
  let dir = from;
  for (;;) {
    if (packages[`${dir ? `${dir}/` : ""}node_modules/${name}`]) return true;
    if (dir === "") return false;
    const i = dir.lastIndexOf("/node_modules/");
    dir = i >= 0 ? dir.slice(0, i) : "";
  }
}

let added = 0;
for (const [location, meta] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(meta.optionalDependencies ?? {})) {
    if (resolves(location, name)) continue;
    const at = `${location ? `${location}/` : ""}node_modules/${name}`;
    packages[at] = { version, optional: true, ...(meta.dev ? { dev: true } : {}) };
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : a > b ? 1 : 0)),
);
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: added ${added} optional platform entries`);
