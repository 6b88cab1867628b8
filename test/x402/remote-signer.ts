/**
 * The agent's side of a signing service in another process (test/x402/signing-service.ts): a viem custom
 * account (`toAccount`) and a `@solana/kit` message and transaction partial signer whose every signature is an
 * HTTP request to it. No key is ever in this process.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { stringify, type Hex } from "viem";
import { toAccount, type LocalAccount } from "viem/accounts";
import type { Address, SignatureBytes, SignatureDictionary } from "@solana/kit";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface SigningService {
  url: string;
  /** a viem custom account: its signMessage and signTypedData call the service */
  evmAccount: LocalAccount;
  /** a kit MessagePartialSigner & TransactionPartialSigner over the service's Ed25519 key */
  solanaSigner: {
    address: Address;
    signMessages(messages: readonly { content: Uint8Array }[]): Promise<readonly SignatureDictionary[]>;
    signTransactions(transactions: readonly { messageBytes: Uint8Array }[]): Promise<readonly SignatureDictionary[]>;
  };
  /** the routes the service was asked, in order */
  log(): Promise<string[]>;
  close(): void;
}

export async function startSigningService(): Promise<SigningService> {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "test/x402/signing-service.ts"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const first = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once("line", resolve);
    child.once("exit", (code) => reject(new Error(`signing service exited (${code})`)));
  });
  const { url, evm, solana } = JSON.parse(first) as { url: string; evm: Hex; solana: string };
  const post = async <T>(path: string, body: unknown): Promise<T> => {
    const res = await fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: stringify(body) });
    if (!res.ok) throw new Error(`signing service: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  const signBytes = async (what: "message" | "transaction", bytes: Uint8Array) =>
    new Uint8Array(
      Buffer.from(
        (await post<{ signature: string }>(`/solana/sign-${what}`, { bytes: Buffer.from(bytes).toString("base64") })).signature,
        "base64",
      ),
    ) as SignatureBytes;
  const address = solana as Address;
  return {
    url,
    evmAccount: toAccount({
      address: evm,
      async signMessage({ message }) {
        if (typeof message !== "string") throw new Error("this signing service signs text messages only");
        return (await post<{ signature: Hex }>("/evm/sign-message", { message })).signature;
      },
      async signTypedData(typedData) {
        return (await post<{ signature: Hex }>("/evm/sign-typed-data", { typedData })).signature;
      },
      async signTransaction() {
        throw new Error("this signing service does not sign transactions");
      },
    }),
    solanaSigner: {
      address,
      signMessages: (messages) =>
        Promise.all(messages.map(async (m) => ({ [address]: await signBytes("message", m.content) }) as SignatureDictionary)),
      signTransactions: (txs) =>
        Promise.all(txs.map(async (t) => ({ [address]: await signBytes("transaction", t.messageBytes) }) as SignatureDictionary)),
    },
    log: async () => ((await (await fetch(`${url}/log`)).json()) as { log: string[] }).log,
    close: () => child.kill(),
  };
}
