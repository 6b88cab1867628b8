/**
 * Structured output with a zod schema: `withStructuredOutput` sends the schema as a JSON-schema response
 * format and returns a parsed, typed object (here with `includeRaw`, to read the cost off the raw message).
 *
 *   npm run example:structured-output
 *   SERVICE_BASE_URL=https://.../api/v1 SERVICE_API_KEY=... SERVICE_MODEL=... npm run example:structured-output
 */
import { pathToFileURL } from "node:url";
import { z } from "zod";
import type { AIMessage } from "@langchain/core/messages";
import { ChatService } from "../src/index.js";
import { startEmulator } from "langchain-service-emulator";

export interface Options {
  baseUrl?: string;
  apiKey?: string;
  log?: (line: string) => void;
}

export const PaymentRequest = z.object({
  recipient: z.string().describe("who is paid"),
  amount: z.number().describe("amount in USDC"),
  network: z.enum(["base", "ethereum", "solana"]).describe("the chain the payment goes over"),
  memo: z.string().describe("a short note for the payment"),
});
export type PaymentRequest = z.infer<typeof PaymentRequest>;

export interface Result {
  text: string;
  payment: PaymentRequest;
  cost: { usd: number; diem: number } | undefined;
}

export async function main(options: Options = {}): Promise<Result> {
  const log = options.log ?? console.log;
  let baseUrl = options.baseUrl ?? process.env.SERVICE_BASE_URL;
  let apiKey = options.apiKey ?? process.env.SERVICE_API_KEY;
  const emulator = baseUrl ? undefined : await startEmulator({ apiKeys: [{ key: "example-key", usd: 5 }] });
  if (emulator) [baseUrl, apiKey] = [emulator.url, "example-key"];
  try {
    const model = new ChatService({ model: process.env.SERVICE_MODEL ?? "emu-m", baseUrl, apiKey, temperature: 0 });
    const extractor = model.withStructuredOutput(PaymentRequest, { name: "payment_request", includeRaw: true });

    const text = 'Please send the invoice amount of 42.5 USDC to recipient: "Alice" on network base, memo: "March hosting"';
    const { parsed, raw } = await extractor.invoke([
      ["system", "Extract the payment request from the user's message."],
      ["human", text],
    ]);
    // the model promised the schema; check it anyway before money-related code trusts it
    const payment = PaymentRequest.parse(parsed);
    log(`input:   ${text}`);
    log(`payment: ${JSON.stringify(payment, null, 2)}`);
    const cost = (raw as AIMessage).response_metadata.cost as Result["cost"];
    if (cost) log(`cost:    $${cost.usd.toFixed(6)} + ${cost.diem.toFixed(6)} DIEM`);
    return { text, payment, cost };
  } finally {
    await emulator?.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  main().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}
