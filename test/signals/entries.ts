/**
 * The public async entry points of the package, each as a call on one set of objects sharing one stack (a wallet
 * client, the chat model, embeddings, the tools, the job runner, `withX402` around plain fetch), with or without a
 * caller's signal. The matrix (matrix.test.ts) runs each at every stage where a call can wait.
 */
import type { StructuredToolInterface } from "@langchain/core/tools";
import { ChatService } from "../../src/chat/index.js";
import { CryptoRpcToolkit } from "../../src/crypto-rpc/index.js";
import { EvmWallet } from "../../src/evm/index.js";
import { createServiceContext, ServiceClient, ServiceEmbeddings, SpendBudget } from "../../src/index.js";
import { runJob } from "../../src/media/index.js";
import { ImageGenerationTool, TextToSpeechTool, WebScrapeTool, WebSearchTool } from "../../src/tools/index.js";
import { withX402 } from "../../src/x402/index.js";

export const PAYEE = "0x2222222222222222222222222222222222222222";

/**
 * A viem-style account over a fresh key whose signing can be held (a remote signer or a wallet awaiting its user).
 * A fresh key per cell: the process's store keys a wallet's budget and top-up lease by its address.
 */
export function holdableAccount(hold: () => boolean) {
  const inner = EvmWallet.random();
  const never = new Promise<never>(() => {});
  return {
    type: "local" as const,
    address: inner.address as `0x${string}`,
    signMessage: ({ message }: { message: string }) => (hold() ? never : inner.signMessage(message)),
    signTypedData: (request: unknown) =>
      hold() ? never : (inner as unknown as { signTypedData(r: unknown): Promise<string> }).signTypedData(request),
  };
}

export interface FacesOptions {
  url: string;
  totalTimeout?: number;
  holdSigning: () => boolean;
  perWallet?: number;
  cryptoRpcInFlight?: number;
  retryDelayMs?: number;
  /** share another set's context (its wallet state, gates, limiters) and wallet: the same caller */
  context?: ReturnType<typeof createServiceContext>;
  wallet?: EvmWallet;
}

export function facesOf(o: FacesOptions) {
  const wallet = o.wallet ?? new EvmWallet(holdableAccount(o.holdSigning) as never);
  // its own wallet state, gates and limiters: cells run side by side with one key
  const context = o.context ?? createServiceContext();
  const budget = new SpendBudget({ maxUsd: 100, unpricedUsd: 0.01, name: `matrix-${crypto.randomUUID()}` });
  const client = new ServiceClient({
    baseUrl: o.url,
    wallet,
    payment: { allowedPayees: [PAYEE] },
    totalTimeout: o.totalTimeout,
    budget,
    abuseGuard: false,
    // the backoff stage waits out a long backoff; elsewhere a 5xx is not expected
    retry: { maxRetries: 2, baseDelayMs: o.retryDelayMs ?? 60_000, maxDelayMs: o.retryDelayMs ?? 60_000 },
    concurrency: { perWallet: o.perWallet ?? 5, cryptoRpc: o.cryptoRpcInFlight ?? 1 },
    pacing: { routeLimits: false },
    context,
  });
  const tools = new Map<string, StructuredToolInterface>();
  for (const t of new CryptoRpcToolkit({ client }).getTools()) tools.set(t.name, t);
  for (const t of [
    new WebSearchTool({ client }),
    new WebScrapeTool({ client }),
    new ImageGenerationTool({ client, model: "fx-image" }),
    new TextToSpeechTool({ client, voices: ["af_sky"] }),
  ])
    tools.set(t.name, t);
  const plain = withX402(globalThis.fetch, { wallet, policy: { allowedPayees: [PAYEE] }, baseUrl: o.url, context });
  return {
    context,
    client,
    budget,
    wallet,
    model: new ChatService({ serviceFetch: client.fetch, model: "fx-model" }),
    embeddings: new ServiceEmbeddings({ serviceFetch: client.fetch, model: "fx-embed" }),
    tools,
    plain,
  };
}

export type Faces = ReturnType<typeof facesOf>;

export interface Entry {
  name: string;
  /** the call; `signal` undefined: it is ended by the stack's totalTimeout */
  call(f: Faces, signal: AbortSignal | undefined): Promise<unknown>;
  /** false: the entry takes no signal (LangChain's Embeddings methods): only a deadline ends it */
  takesSignal?: boolean;
  /** the answer its main request streams (the mid-body stage sends part of one) */
  body?: "sse" | "json" | "audio";
  /** its main request is public (sent without the wallet's sign-in): the wallet's gate and sign-in never hold it */
  public?: boolean;
  /** a read (GET): the wallet's credit never holds it back */
  read?: boolean;
  /**
   * sent without the stack (withX402 over the caller's fetch): no retry loop, in-flight gate, pacing or deadline
   * of the package's own; it rejects as fetch does, with the signal's own reason
   */
  plainFetch?: boolean;
  /** the explicit top-up: its own request is the top-up endpoint's */
  topUp?: boolean;
}

const ADDRESS = "0x1111111111111111111111111111111111111111";
const tool = (name: string, input: Record<string, unknown>) => (f: Faces, signal: AbortSignal | undefined) =>
  f.tools.get(name)!.invoke(input, { signal });

async function drain(stream: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of stream) {
    /* read to the end */
  }
}

export const ENTRIES: Entry[] = [
  { name: "ChatService.invoke", call: (f, signal) => f.model.invoke("hi", { signal }) },
  { name: "ChatService.stream", body: "sse", call: async (f, signal) => drain(await f.model.stream("hi", { signal })) },
  { name: "ChatService.batch", call: (f, signal) => f.model.batch(["hi"], { signal }) },
  { name: "ServiceEmbeddings.embedQuery", takesSignal: false, call: (f) => f.embeddings.embedQuery("hi") },
  { name: "ServiceEmbeddings.embedWithUsage", call: (f, signal) => f.embeddings.embedWithUsage(["hi"], { signal }) },
  {
    name: "ServiceClient.request",
    call: (f, signal) => f.client.request("/chat/completions", { body: { model: "fx-model", messages: [] }, signal }),
  },
  { name: "ServiceClient.listModels", read: true, call: (f, signal) => f.client.listModels({ signal }) },
  { name: "ServiceClient.getRateLimits", read: true, call: (f, signal) => f.client.getRateLimits({ signal }) },
  { name: "ServiceClient.listCryptoNetworks", read: true, public: true, call: (f, signal) => f.client.listCryptoNetworks({ signal }) },
  { name: "ServiceClient.cryptoRpc", call: (f, signal) => f.client.cryptoRpc("base-mainnet", { method: "eth_blockNumber" }, { signal }) },
  {
    name: "ServiceClient.cryptoRpc (batch)",
    call: (f, signal) => f.client.cryptoRpc("base-mainnet", [{ method: "eth_blockNumber" }, { method: "eth_chainId" }], { signal }),
  },
  { name: "ServiceClient.webSearch", call: (f, signal) => f.client.webSearch({ query: "x402" }, { signal }) },
  { name: "ServiceClient.generateImage", call: (f, signal) => f.client.generateImage({ model: "fx-image", prompt: "a boat" }, { signal }) },
  { name: "ServiceClient.createSpeech", body: "audio", call: (f, signal) => f.client.createSpeech({ input: "hello" }, { signal }) },
  { name: "ServiceClient.getX402Balance", read: true, call: (f, signal) => f.client.getX402Balance(undefined, { signal }) },
  { name: "ServiceClient.getX402Transactions", read: true, call: (f, signal) => f.client.getX402Transactions({ signal }) },
  { name: "ServiceClient.topUp", topUp: true, call: (f, signal) => f.client.topUp(5, { signal }) },
  {
    name: "runJob (video)",
    call: (f, signal) => runJob(f.client, "video", { model: "fx-video", prompt: "a boat", duration: "5s" }, { signal }),
  },
  { name: "crypto_rpc", call: tool("crypto_rpc", { network: "base-mainnet", method: "eth_blockNumber" }) },
  { name: "crypto_networks", public: true, read: true, call: tool("crypto_networks", {}) },
  { name: "latest_block", call: tool("latest_block", { network: "base-mainnet" }) },
  { name: "native_balance", call: tool("native_balance", { network: "base-mainnet", address: ADDRESS }) },
  { name: "web_search", call: tool("web_search", { query: "x402" }) },
  { name: "generate_image", call: tool("generate_image", { prompt: "a boat" }) },
  { name: "text_to_speech", body: "audio", call: tool("text_to_speech", { text: "hello" }) },
  {
    name: "withX402",
    plainFetch: true,
    call: async (f, signal) => {
      const res = await f.plain(`${f.client.baseUrl}/chat/completions`, { method: "POST", body: "{}", signal });
      await res.text();
    },
  },
];
