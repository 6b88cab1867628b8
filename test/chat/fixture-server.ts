/**
 * A scripted loopback HTTP server for the edge cases the emulator does not produce on purpose (absent
 * `choices`, in-band errors, cut streams, citations on the first chunk...). Real HTTP, real sockets; it records
 * each request body so tests can check what reached the wire. The chat models' read of the shared `/models`
 * records (`GET /models?type=text`, made in the background on a model's first call, for its profile) is answered
 * with `models` (default: an empty list) and not recorded, only counted in `modelReads`; every other request (a
 * plain `GET /models`, other model types) reaches the script.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: any;
}

export type Script = (req: RecordedRequest, res: ServerResponse) => void | Promise<void>;

export interface FixtureServer {
  url: string;
  requests: RecordedRequest[];
  /** the handler for the next requests */
  script: Script;
  /** the `/models` records served (default: none) */
  models: Record<string, unknown>[];
  /** how many times `/models` was read */
  modelReads: number;
  close(): Promise<void>;
}

export async function startFixtureServer(script: Script = () => {}): Promise<FixtureServer> {
  const requests: RecordedRequest[] = [];
  const state = { script, models: [] as Record<string, unknown>[], modelReads: 0 };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // keep text
    }
    if (req.method === "GET" && /\/models\?type=text$/.test(req.url ?? "")) {
      state.modelReads++;
      json(res, { object: "list", data: state.models });
      return;
    }
    const rec: RecordedRequest = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body };
    requests.push(rec);
    await state.script(rec, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/api/v1`,
    requests,
    get script() {
      return state.script;
    },
    set script(s: Script) {
      state.script = s;
    },
    get models() {
      return state.models;
    },
    set models(m: Record<string, unknown>[]) {
      state.models = m;
    },
    get modelReads() {
      return state.modelReads;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function json(res: ServerResponse, body: unknown, headers: Record<string, string> = {}, status = 200): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** Writes SSE events; `done: false` leaves out `[DONE]` (a cut stream). */
export function sse(res: ServerResponse, events: unknown[], opts: { done?: boolean; headers?: Record<string, string> } = {}): void {
  res.writeHead(200, { "content-type": "text/event-stream", ...opts.headers });
  for (const e of events) res.write(`data: ${typeof e === "string" ? e : JSON.stringify(e)}\n\n`);
  if (opts.done !== false) res.write("data: [DONE]\n\n");
  res.end();
}

export function completion(message: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    id: "chatcmpl-fixture",
    object: "chat.completion",
    created: 1,
    model: "fx-model",
    choices: [{ index: 0, finish_reason: "stop", logprobs: null, message: { role: "assistant", ...message } }],
    usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
    ...extra,
  };
}

export function chunk(delta: Record<string, unknown>, extra: Record<string, unknown> = {}, finish: string | null = null) {
  return {
    id: "chatcmpl-fixture",
    object: "chat.completion.chunk",
    created: 1,
    model: "fx-model",
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    ...extra,
  };
}
