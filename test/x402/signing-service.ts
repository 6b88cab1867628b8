/**
 * A signing service in its own process, as a KMS or a managed wallet is: it makes its keys here (an EVM key and
 * an Ed25519 key), never sends them, and signs what it is asked over loopback HTTP. Prints one line,
 * `{"url", "evm", "solana"}` (the addresses), then serves until killed. Routes (JSON in, JSON out):
 * POST /evm/sign-message {message} · POST /evm/sign-typed-data {typedData (bigints as strings)} ·
 * POST /solana/sign-message and /solana/sign-transaction {bytes: base64} -> {signature: base64} (Ed25519 of the
 * bytes; two routes so a test can count payments) · GET /log -> the routes asked so far.
 */
import { createServer } from "node:http";
import { createPublicKey, generateKeyPairSync, sign } from "node:crypto";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { getBase58Decoder } from "@solana/kit";

const evm = privateKeyToAccount(generatePrivateKey());
const ed = generateKeyPairSync("ed25519");
const solanaPublic = createPublicKey(ed.privateKey).export({ format: "der", type: "spki" }).subarray(12);
const solana = getBase58Decoder().decode(solanaPublic);
const log: string[] = [];

async function answer(route: string, body: Record<string, unknown>): Promise<unknown> {
  if (route === "POST /evm/sign-message") return { signature: await evm.signMessage({ message: String(body.message) }) };
  if (route === "POST /evm/sign-typed-data") return { signature: await evm.signTypedData(body.typedData as never) };
  if (route === "POST /solana/sign-message" || route === "POST /solana/sign-transaction") {
    return { signature: sign(null, Buffer.from(String(body.bytes), "base64"), ed.privateKey).toString("base64") };
  }
  if (route === "GET /log") return { log };
  return undefined;
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const route = `${req.method} ${req.url}`;
    if (route !== "GET /log") log.push(route);
    const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>) : {};
    answer(route, body).then(
      (out) => {
        res.writeHead(out === undefined ? 404 : 200, { "content-type": "application/json" });
        res.end(JSON.stringify(out ?? { error: "no such route" }));
      },
      (err: unknown) => {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: String((err as Error)?.message ?? err) }));
      },
    );
  });
});
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}`, evm: evm.address, solana })}\n`);
});
