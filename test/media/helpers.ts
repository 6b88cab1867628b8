/** Shared setup for the media and account client tests: a client over loopback that records what reached the wire. */
import type { Emulator } from "langchain-service-emulator";
import { ServiceClient, type ServiceClientOptions } from "../../src/client.js";

export interface Sent {
  method: string;
  /** below /api/v1 */
  path: string;
  query: string;
  contentType?: string;
  at: number;
}

export interface RecordingClient {
  client: ServiceClient;
  sent: Sent[];
  /** requests to `path` (below /api/v1) */
  count(path: string): number;
}

/** A real client (an API key by default) whose underlying fetch records each request that reaches the wire. */
export function recordingClient(emu: Emulator, options: ServiceClientOptions = {}): RecordingClient {
  const sent: Sent[] = [];
  const client = new ServiceClient({
    baseUrl: emu.url,
    retry: { maxRetries: 1, baseDelayMs: 5, maxDelayMs: 10 },
    fetch: (input, init) => {
      const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
      const headers = new Headers(init?.headers);
      const body = init?.body;
      const contentType = headers.get("content-type") ?? (body instanceof FormData ? "multipart/form-data" : undefined);
      sent.push({
        method: init?.method ?? "GET",
        path: url.pathname.replace(/^\/api\/v1/, ""),
        query: url.search,
        contentType,
        at: Date.now(),
      });
      return globalThis.fetch(input, init);
    },
    ...options,
  });
  return { client, sent, count: (path) => sent.filter((s) => s.path === path).length };
}
