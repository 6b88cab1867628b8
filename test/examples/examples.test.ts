/**
 * Every example's `main()`, run in-process as a user would run it (embedded emulator, local chain when it needs
 * one), with its log captured: what it prints and returns is what the issue promises. The reasoning example
 * runs behind a recording loopback proxy, to check on the wire that the signed reasoning went back unchanged.
 * The vitest sample `examples/emulator-in-tests.example-test.ts` is run from here (it is outside the include
 * pattern so it is collected once).
 */
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AIMessage } from "@langchain/core/messages";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { main as chainWebSearch } from "../../examples/chain-web-search.js";
import { main as reasoningTools } from "../../examples/reasoning-tools.js";
import { main as structuredOutput, PaymentRequest } from "../../examples/structured-output.js";
import { main as blockchainAgent } from "../../examples/blockchain-agent.js";
import { main as walletEvm } from "../../examples/wallet-evm.js";
import { main as walletSolana } from "../../examples/wallet-solana.js";
import { main as emulatorInTests } from "../../examples/emulator-in-tests.js";
import "../../examples/emulator-in-tests.example-test.js";

// the examples read these to target a real deployment; the tests always use the embedded emulator
const ENV = ["SERVICE_BASE_URL", "SERVICE_API_KEY", "SERVICE_MODEL", "WALLET_PRIVATE_KEY", "SOLANA_SECRET_KEY", "ADDRESS"];
const savedEnv: Record<string, string | undefined> = {};
beforeAll(() => {
  for (const name of ENV) {
    savedEnv[name] = process.env[name];
    delete process.env[name];
  }
});
afterAll(() => {
  for (const name of ENV) if (savedEnv[name] !== undefined) process.env[name] = savedEnv[name];
});

function capture() {
  const lines: string[] = [];
  return { lines, log: (line: string) => lines.push(...line.split("\n")) };
}

/** A loopback proxy in front of the emulator that keeps every JSON request body (the wire, as sent). */
async function recordingProxy(target: Emulator): Promise<{ url: string; bodies: Record<string, any>[]; close(): Promise<void> }> {
  const bodies: Record<string, any>[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      if (req.url?.endsWith("/chat/completions") && raw.length) bodies.push(JSON.parse(raw.toString("utf8")));
      const upstream = request({ host: "127.0.0.1", port: target.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      upstream.on("error", () => res.destroy());
      upstream.end(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/api/v1`,
    bodies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("examples", () => {
  it("chain-web-search: citations come back and are printed as footnotes", async () => {
    const { lines, log } = capture();
    const r = await chainWebSearch({ log });
    expect(r.citations.length).toBeGreaterThan(0);
    expect(r.answer).not.toContain("[REF]");
    expect(r.footnotes.length).toBeGreaterThan(0);
    for (const footnote of r.footnotes) {
      const [, n, title, url] = /^\[(\d+)\] (.+) - (https?:\/\/\S+)$/.exec(footnote)!;
      // the footnote's number is used in the answer and points at that citation
      expect(r.answer).toContain(`[${n}]`);
      expect(r.citations[Number(n) - 1]).toMatchObject({ title, url });
      expect(lines).toContain(footnote);
    }
    expect(r.answer).toMatch(/8453/); // the answer came from the (local) web
    expect(r.cost!.usd + r.cost!.diem).toBeGreaterThanOrEqual(0.01); // web search is billed
  });

  it("reasoning-tools: two tool turns; the signed reasoning_details go back unchanged on later requests", async () => {
    const emu = await startEmulator({ apiKeys: ["k-reason"] });
    const proxy = await recordingProxy(emu);
    try {
      const { lines, log } = capture();
      const r = await reasoningTools({ baseUrl: proxy.url, apiKey: "k-reason", log });
      expect(r.turns.map((t) => t.toolCalls)).toEqual([['get_weather({"city":"Paris"})'], ['celsius_to_fahrenheit({"celsius":21})']]);
      expect(r.turns[0]!.answer).toContain("sunny and 21C in Paris");
      expect(r.turns[1]!.answer).toContain("69.8F");
      expect(r.turns.every((t) => t.reasoning.length > 0 && t.reasoningDetails[0]! > 0)).toBe(true);
      expect(lines.some((l) => l.includes("(thinking) Thinking about:"))).toBe(true);

      // on the wire: every request after a tool-call turn carries that turn's details exactly as received
      const toolTurns = r.messages.filter((m) => (m as AIMessage).tool_calls?.length) as AIMessage[];
      expect(toolTurns).toHaveLength(2);
      expect(proxy.bodies).toHaveLength(4);
      for (const turn of toolTurns) {
        const id = turn.tool_calls![0]!.id;
        const later = proxy.bodies.filter((b) => b.messages.some((m: any) => m.tool_calls?.[0]?.id === id));
        expect(later.length).toBeGreaterThanOrEqual(turn === toolTurns[0] ? 3 : 1);
        for (const body of later) {
          const sent = body.messages.find((m: any) => m.tool_calls?.[0]?.id === id);
          expect(sent.reasoning_details).toEqual(turn.additional_kwargs.reasoning_details);
        }
      }
    } finally {
      await proxy.close();
      await emu.close();
    }
  });

  it("structured-output: a zod-valid object with the values from the text", async () => {
    const { lines, log } = capture();
    const r = await structuredOutput({ log });
    expect(PaymentRequest.safeParse(r.payment).success).toBe(true);
    expect(r.payment).toEqual({ recipient: "Alice", amount: 42.5, network: "base", memo: "March hosting" });
    expect(lines.join("\n")).toContain('"recipient": "Alice"');
  });

  it("blockchain-agent: the balances in the answer are the chain's", async () => {
    const { lines, log } = capture();
    const r = await blockchainAgent({ log });
    expect(r.onChain).toEqual({ eth: "1.5", usdc: "42.25" });
    const owner = /"(0x[0-9a-fA-F]{40})"/.exec(r.question)![1];
    const native = r.toolResults.find((t) => t.name === "native_balance" && (t.result as any).address === owner)?.result as any;
    const erc20 = r.toolResults.find((t) => t.name === "erc20_balance")?.result as any;
    expect(native.balance.formatted).toBe(r.onChain!.eth);
    expect(erc20).toMatchObject({ owner, symbol: "USDC", balance: { formatted: r.onChain!.usdc } });
    expect(r.answer).toContain("1.5");
    expect(r.answer).toContain("42.25");
    expect(lines.at(-1)).toBe("(the local node says: 1.5 ETH, 42.25 USDC)");
  });

  it("wallet-evm: exactly one payment; paid on chain == credited in the ledger; balance is what is left", async () => {
    const { lines, log } = capture();
    const r = await walletEvm({ log });
    expect(r.payments.map((p) => p.type)).toEqual(["payment.requested", "payment.signed", "payment.settled"]);
    expect(r.answers).toHaveLength(2);
    const settled = r.payments[2]!;
    const topUps = r.ledger!.filter((e) => e.type === "TOP_UP");
    expect(topUps).toHaveLength(1);
    expect(topUps[0]).toMatchObject({ amount: 10, transaction: settled.transaction, paidAtomic: "10000000" });
    expect(r.paidOnChainUsd).toBe(topUps[0]!.amount);
    expect(settled.amountUsd).toBe(10);
    // the service's view (GET /x402/transactions) matches the emulator's ledger
    expect(r.transactions.map((t) => t.type).sort()).toEqual(["CHARGE", "CHARGE", "TOP_UP"]);
    const charged = -r.ledger!.filter((e) => e.type === "CHARGE").reduce((s, e) => s + e.amount, 0);
    expect(r.balanceUsd).toBeCloseTo(10 - charged, 9);
    expect(lines).toContain("paid on chain: 10 USDC");
  });

  it("wallet-solana: exactly one payment on the Solana rail; the ledger credited what was paid", async () => {
    const { lines, log } = capture();
    const r = await walletSolana({ log });
    expect(r.payments.map((p) => p.type)).toEqual(["payment.requested", "payment.signed", "payment.settled"]);
    const topUps = r.ledger!.filter((e) => e.type === "TOP_UP");
    expect(topUps).toHaveLength(1);
    expect(topUps[0]!.network).toMatch(/^solana:/);
    expect(topUps[0]).toMatchObject({ amount: 5, transaction: r.payments[2]!.transaction, paidAtomic: "5000000" });
    // the agent read its own SOL balance on solana-mainnet (the emulator's local SVM) through the proxy
    expect(r.toolCalls.map((t) => t.name)).toContain("native_balance");
    expect(JSON.parse(r.toolCalls.find((t) => t.name === "native_balance")!.content).balance).toMatchObject({ sol: "1.5", symbol: "SOL" });
    expect(r.answer).toContain("sol 1.5");
    // inference and chain reads were paid from the same credit
    expect(r.transactions.filter((t) => t.type === "CHARGE").length).toBeGreaterThanOrEqual(3);
    expect(r.balanceUsd).toBeGreaterThan(4.99);
    expect(r.balanceUsd).toBeLessThan(5);
    expect(lines.some((l) => l.startsWith("  TOP_UP"))).toBe(true);
  });

  it("emulator-in-tests: the ledger charged once per model call, and 503s were retried unbilled", async () => {
    const { lines, log } = capture();
    const r = await emulatorInTests({ log });
    expect(r.answer).toContain("shipped");
    expect(r.ledger.charges).toBe(r.modelCalls);
    expect(r.ledger.chargedUsd).toBeCloseTo(r.reportedCostUsd, 9);
    expect(r.ledger.balanceBefore - r.ledger.balanceAfter).toBeCloseTo(r.ledger.chargedUsd, 9);
    expect(r.underFaults.attempts).toContain(503);
    expect(r.underFaults.charges).toBe(2);
    expect(lines.at(-1)).toBe("all checks passed");
  });
});
