/**
 * A scripted JSON-RPC node on loopback that answers with the HTTP status a call's first param names (a number;
 * 200 when none): its items then carry a JSON-RPC error saying so, and a 502 is an HTML page, as a gateway's is.
 * `calls` counts the requests that reached it.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface StatusNode {
  readonly url: string;
  readonly calls: number;
  close(): Promise<void>;
}

type Item = { id: unknown; params?: unknown[] };

export async function startStatusNode(): Promise<StatusNode> {
  let calls = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      calls++;
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Item | Item[];
      const items = Array.isArray(body) ? body : [body];
      const status = items.map((i) => i.params?.[0]).find((p) => typeof p === "number") as number | undefined;
      if (status === 502) {
        res.writeHead(502, { "content-type": "text/html" });
        return res.end("<html>Bad Gateway</html>");
      }
      const answers = items.map((i) =>
        status && status !== 200
          ? { jsonrpc: "2.0", id: i.id, error: { code: -32000, message: `node says ${status}`, data: { stack: "at node internals" } } }
          : { jsonrpc: "2.0", id: i.id, result: "0x1" },
      );
      res.writeHead(status ?? 200, { "content-type": "application/json" });
      res.end(JSON.stringify(Array.isArray(body) ? answers : answers[0]));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    get calls() {
      return calls;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
