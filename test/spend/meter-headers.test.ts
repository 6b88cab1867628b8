/**
 * A crypto RPC answer's cost is read from its headers: only a finite figure of at least 0 is a cost. A negative one
 * was booked as a negative charge in a SpendLog, and an empty header as a reported cost of $0.
 */
import { describe, expect, it } from "vitest";
import { meterResponse, type MeterReading } from "../../src/spend/meter.js";

const HEADERS = { rpcCostUsdHeader: "x-service-rpc-cost-usd", rpcCreditsHeader: "x-service-rpc-credits" };

function read(cost: string | undefined, credits: string | undefined): MeterReading {
  const headers = new Headers({ "content-type": "application/json" });
  if (cost !== undefined) headers.set(HEADERS.rpcCostUsdHeader, cost);
  if (credits !== undefined) headers.set(HEADERS.rpcCreditsHeader, credits);
  let reading: MeterReading | undefined;
  meterResponse(new Response("{}", { headers }), "crypto-rpc", HEADERS, (r) => (reading = r));
  return reading!;
}

describe("crypto RPC cost headers", () => {
  it("a figure of at least 0 is the cost", () => {
    expect(read("0.000014", "20")).toMatchObject({ costUsd: 0.000014, costDiem: 0, rpcCredits: 20 });
    expect(read("0", "0")).toMatchObject({ costUsd: 0, rpcCredits: 0 });
  });
  it.each([["-1"], [""], ["  "], ["NaN"], ["Infinity"], ["1e999"], ["0x10"]])("%j is no cost", (value) => {
    const reading = read(value, value);
    expect(reading.costUsd).toBeUndefined();
    expect(reading.costDiem).toBeUndefined();
    expect(reading.rpcCredits).toBeUndefined();
  });
});
