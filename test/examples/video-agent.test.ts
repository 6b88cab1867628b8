/**
 * examples/video-agent.ts run in-process as a user would (embedded emulator with a local chain, a wallet and no API
 * key): the first paid request gets 402, the wallet tops up once, the agent's video job is quoted, queued once and
 * polled until a real MP4 lands in the output directory, and the spoken clip is transcribed word for word; the
 * ledger holds one top-up, one video charge, one transcription charge.
 */
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../examples/video-agent.js";
import { decodeMp4 } from "../media/mp4-reader.js";

const ENV = ["SERVICE_BASE_URL", "SERVICE_API_KEY", "SERVICE_MODEL", "WALLET_PRIVATE_KEY", "VIDEO_MODEL", "OUTPUT_DIR"];
const saved: Record<string, string | undefined> = {};
let dir: string;
beforeAll(async () => {
  for (const name of ENV) (saved[name] = process.env[name]), delete process.env[name];
  dir = await mkdtemp(join(tmpdir(), "video-agent-"));
});
afterAll(async () => {
  for (const name of ENV) if (saved[name] !== undefined) process.env[name] = saved[name];
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("example: video-agent", () => {
  it("pays once with a wallet, makes a 4 s MP4 and transcribes the spoken clip", async () => {
    const outputDir = join(dir, "out");
    const lines: string[] = [];
    const r = await main({ outputDir, log: (l) => lines.push(...l.split("\n")) });
    expect(lines[0]).toMatch(/^wallet 0x[0-9a-fA-F]{40} \(no API key\)$/);
    // one top-up, settled
    expect(r.payments.filter((p) => p.type === "payment.settled")).toHaveLength(1);
    // the video: quoted within the owner's limit, queued once, a real MP4 in the output directory
    expect(r.video).toMatchObject({ duration: "4s", costUsd: 0.2 });
    expect(dirname(r.video!.path)).toBe(outputDir);
    expect(decodeMp4(await readFile(r.video!.path))).toMatchObject({ durationSeconds: 4, width: 160, height: 90 });
    expect(r.progress.map((p) => p.phase)).toEqual(expect.arrayContaining(["quoted", "queued", "completed"]));
    // the clip, heard back
    expect(r.transcript?.text).toBe(r.clipText);
    expect((await readdir(outputDir)).sort()).toEqual(["clip.wav", expect.stringMatching(/^video-.*\.mp4$/)]);
    // the ledger: one top-up first; one charge each for the clip, the video and its transcription
    const ledger = r.ledger!;
    expect(ledger[0]!.type).toBe("TOP_UP");
    expect(ledger.filter((e) => e.type === "TOP_UP")).toHaveLength(1);
    const charges = (kind: string) => ledger.filter((e) => e.type === "CHARGE" && e.kind === kind);
    expect(charges("video")).toHaveLength(1);
    expect(charges("video")[0]!.amount).toBe(-0.2);
    expect(charges("transcription")).toHaveLength(1);
    expect(charges("speech")).toHaveLength(1);
    expect(charges("chat").length).toBeGreaterThanOrEqual(2);
    expect(ledger.some((e) => e.type === "REFUND")).toBe(false);
    expect(r.answer).toContain("generate_video");
  });
});
