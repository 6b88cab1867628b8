/**
 * A model's `/models` record for pricing, read once per base URL and list type and shared by the process. The
 * listing is public: read without credentials, and never metered.
 */
import type { TransportFetch } from "../http/fetch-stack.js";
import type { PricedModel } from "./estimate.js";

const TTL_MS = 60 * 60_000;
const lists = new Map<string, { at: number; models: Promise<Map<string, PricedModel>> }>();

export function modelRecordLookup(fetch: () => TransportFetch): (type: string, id: string) => Promise<PricedModel | undefined> {
  return async (type, id) => {
    const f = fetch();
    const key = `${f.baseUrl}|${type}`;
    let entry = lists.get(key);
    if (!entry || Date.now() - entry.at > TTL_MS) {
      const models = (async () => {
        const res = await f(f.url(`/models?type=${encodeURIComponent(type)}`), { service: { auth: false, spend: false, throwOnError: true } });
        const body = (await res.json()) as { data?: PricedModel[] };
        return new Map((body.data ?? []).map((m) => [m.id, m]));
      })();
      entry = { at: Date.now(), models };
      lists.set(key, entry);
      models.catch(() => lists.delete(key)); // a failed read is asked again next time
    }
    return (await entry.models).get(id);
  };
}
