/**
 * Spawned by base-tls.test.ts (`node --import tsx`, with or without NODE_EXTRA_CA_CERTS): four requests to
 * the HTTPS server at argv[2] through the Node base (undici) and one through fetch; prints what it saw as one JSON line.
 */
import { defaultFetch } from "../../src/http/base.node.js";

const url = process.argv[2]!;
const init = { method: "POST", body: "{}", redirect: "manual" as const };
async function attempt(f: typeof defaultFetch) {
  try {
    const res = await f(url, init);
    return { status: res.status, text: await res.text() };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    return { error: e.message, code: e.cause?.code };
  }
}
const ours = [await attempt(defaultFetch), await attempt(defaultFetch), await attempt(defaultFetch), await attempt(defaultFetch)];
const theirs = await attempt((u, i) => fetch(u, i));
console.log(JSON.stringify({ ours, theirs }));
