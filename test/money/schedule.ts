/**
 * A money schedule as a plain value (so fast-check can print, replay and shrink it): what one fresh wallet does
 * concurrently against the emulator, under which policy, budget and faults. `scheduleArb` generates them.
 */
import fc from "fast-check";

export type OpKind = "chat" | "stream" | "embed" | "rpc" | "rpcTool" | "image";

export interface Op {
  kind: OpKind;
  /** ms after the schedule starts */
  startMs: number;
  /** the caller aborts this long after the call started (its own signal), if at all */
  abortMs?: number;
  /** the call's deadline also as the caller's own signal, beside the client's totalTimeout */
  deadlineSignal?: boolean;
}

export interface Schedule {
  /** USD of test USDC the fresh wallet holds (little: its settlements fail on chain) */
  fundUsd: number;
  policy: { amountUsd?: number; maxPerTopUpUsd?: number; maxPerPeriodUsd: number };
  /** a SpendBudget on every face, of this many USD */
  budgetUsd?: number;
  spendLog: boolean;
  /** every call's totalTimeout */
  deadlineMs: number;
  /** per-attempt timeout of a top-up POST */
  topUpTimeoutMs: number;
  ops: Op[];
  faults: {
    errorRate: number;
    statuses: number[];
    latencyMs?: [number, number];
    paths?: string[];
    streamCutAfter?: number;
    loseAnswersRate?: number;
    overloadRate?: number;
    streamErrors?: { first: number; afterContent: boolean };
    seed: number;
  };
  x402: {
    settleDelayMs?: number;
    delayedSettlements?: number;
    settlementFailures?: number;
    settlementTimeouts?: number;
    settlementTimeoutLands?: boolean;
    topUpFailures?: number;
    topUpResponseDelayMs?: number;
    wrongOffer?: { first: number; what: "payTo" | "asset" | "amount" };
  };
}

/** Paths the faults can be limited to (the emulator matches prefixes, without /api/v1). */
export const FAULT_PATHS = [
  "/chat/completions",
  "/embeddings",
  "/crypto/rpc/",
  "/image/generate",
  "/x402/top-up",
  "/x402/balance",
  "/x402/transactions",
];

const opArb: fc.Arbitrary<Op> = fc.record(
  {
    // images cost the most ($0.01): twice as likely, so schedules spend through top-ups
    kind: fc.constantFrom<OpKind>("chat", "stream", "embed", "rpc", "rpcTool", "image", "image"),
    startMs: fc.integer({ min: 0, max: 400 }),
    abortMs: fc.integer({ min: 0, max: 2_000 }),
    deadlineSignal: fc.constant(true),
  },
  { requiredKeys: ["kind", "startMs"] },
);

export const scheduleArb: fc.Arbitrary<Schedule> = fc.record({
  fundUsd: fc.constantFrom(2, 2, 2, 2, 0.07),
  policy: fc
    .record(
      {
        amountUsd: fc.constantFrom(0.1, 0.25),
        maxPerTopUpUsd: fc.constantFrom(0.1, 0.5),
        maxPerPeriodUsd: fc.constantFrom(0.05, 0.15, 0.3, 1),
      },
      { requiredKeys: ["maxPerPeriodUsd"] },
    )
    // caps that contradict each other are a configuration error (ConfigurationError), not a schedule
    .map(({ maxPerTopUpUsd, amountUsd, maxPerPeriodUsd }) => {
      const perTopUp = maxPerTopUpUsd !== undefined && maxPerTopUpUsd <= maxPerPeriodUsd ? maxPerTopUpUsd : undefined;
      const cap = Math.min(perTopUp ?? 20, maxPerPeriodUsd);
      return {
        maxPerPeriodUsd,
        ...(perTopUp !== undefined ? { maxPerTopUpUsd: perTopUp } : {}),
        ...(amountUsd !== undefined && amountUsd <= cap ? { amountUsd } : {}),
      };
    }),
  budgetUsd: fc.option(fc.constantFrom(0.003, 0.02, 0.1), { nil: undefined }),
  spendLog: fc.boolean(),
  deadlineMs: fc.integer({ min: 1_500, max: 4_000 }),
  topUpTimeoutMs: fc.constantFrom(300, 1_000, 3_000),
  ops: fc.array(opArb, { minLength: 1, maxLength: 30 }),
  faults: fc.record(
    {
      errorRate: fc.constantFrom(0, 0, 0.1, 0.3),
      statuses: fc.subarray([500, 503, 429], { minLength: 1 }),
      latencyMs: fc.constantFrom<[number, number]>([0, 30], [0, 300], [0, 2_500]),
      paths: fc.subarray(FAULT_PATHS, { minLength: 1 }),
      streamCutAfter: fc.integer({ min: 1, max: 4 }),
      loseAnswersRate: fc.constantFrom(0.1, 0.3),
      overloadRate: fc.constantFrom(0.1, 0.3),
      streamErrors: fc.record({ first: fc.integer({ min: 1, max: 3 }), afterContent: fc.boolean() }),
      seed: fc.integer({ min: 1, max: 1_000_000 }),
    },
    { requiredKeys: ["errorRate", "statuses", "seed"] },
  ),
  x402: fc.record(
    {
      settleDelayMs: fc.integer({ min: 100, max: 2_000 }),
      delayedSettlements: fc.integer({ min: 1, max: 2 }),
      settlementFailures: fc.integer({ min: 1, max: 2 }),
      settlementTimeouts: fc.integer({ min: 1, max: 2 }),
      settlementTimeoutLands: fc.boolean(),
      topUpFailures: fc.integer({ min: 1, max: 2 }),
      topUpResponseDelayMs: fc.integer({ min: 200, max: 2_000 }),
      wrongOffer: fc.record({
        first: fc.integer({ min: 1, max: 2 }),
        what: fc.constantFrom<"payTo" | "asset" | "amount">("payTo", "asset", "amount"),
      }),
    },
    { requiredKeys: [] },
  ),
});
