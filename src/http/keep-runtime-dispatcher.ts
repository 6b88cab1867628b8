/**
 * Evaluated before undici (base.node.ts imports it first, as `#keep-runtime-dispatcher`: its own file in the build
 * and a side effect package.json names, so bundling keeps it and keeps it first). undici, when loaded, makes its own `Agent` the process's
 * global dispatcher if none is set yet, and the runtime's built-in `fetch` (Node 20 bundles undici 6) then sends
 * through that newer Agent: other libraries' fetches break (a request with its own `content-length` header fails
 * with "invalid content-length header"). Touching the global `Response` loads the runtime's own undici, which sets
 * its own dispatcher first, so importing this package leaves the runtime's fetch as it was.
 */
void globalThis.Response;
export {};
