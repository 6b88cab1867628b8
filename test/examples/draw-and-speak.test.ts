/**
 * examples/draw-and-speak.ts run in-process as a user would (embedded emulator with a local chain, a wallet and
 * no API key): the agent's first request gets 402, the wallet tops up once, and the picture (a PNG that decodes)
 * and the speech (a valid WAV) land in the output directory; the ledger holds the top-up and every charge.
 */
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../examples/draw-and-speak.js";
import { decodePng, decodeWav } from "../tools/helpers.js";

const ENV = ["SERVICE_BASE_URL", "SERVICE_API_KEY", "SERVICE_MODEL", "WALLET_PRIVATE_KEY", "IMAGE_MODEL", "OUTPUT_DIR"];
const saved: Record<string, string | undefined> = {};
let dir: string;
beforeAll(async () => {
  for (const name of ENV) (saved[name] = process.env[name]), delete process.env[name];
  dir = await mkdtemp(join(tmpdir(), "draw-and-speak-"));
});
afterAll(async () => {
  for (const name of ENV) if (saved[name] !== undefined) process.env[name] = saved[name];
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("example: draw-and-speak", () => {
  it("pays for itself with a wallet, draws a PNG and speaks a WAV into the output directory", async () => {
    const outputDir = join(dir, "out");
    const lines: string[] = [];
    const r = await main({ outputDir, log: (l) => lines.push(...l.split("\n")) });
    expect(lines[0]).toMatch(/^wallet 0x[0-9a-fA-F]{40} \(no API key\)$/);
    // one top-up, settled
    expect(r.payments.filter((p) => p.type === "payment.settled")).toHaveLength(1);
    expect(r.image?.description).toMatch(/^Generated a 512×320 PNG image/);
    expect(dirname(r.image!.path)).toBe(outputDir);
    expect(decodePng(await readFile(r.image!.path))).toMatchObject({ width: 512, height: 320 });
    expect(dirname(r.speech!.path)).toBe(outputDir);
    const wav = decodeWav(await readFile(r.speech!.path));
    expect(r.speech!.format).toBe("wav");
    expect(r.speech!.durationSeconds).toBeCloseTo(wav.durationSeconds, 3);
    expect((await readdir(outputDir)).sort()).toHaveLength(2);
    // the ledger: one top-up, then chat, image and speech charges
    const kinds = r.ledger!.map((e) => (e.type === "TOP_UP" ? "TOP_UP" : e.kind));
    expect(kinds[0]).toBe("TOP_UP");
    expect(kinds).toEqual(expect.arrayContaining(["chat", "image", "speech"]));
    // the model saw paths, never image bytes
    expect(lines.join("\n")).not.toMatch(/iVBORw0KGgo/);
    expect(r.answer).toContain("generate_image");
  });
});
