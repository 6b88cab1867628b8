/**
 * The new agent tools through the emulator, invoked as an agent invokes them (a tool call): `transcribe_audio` reads
 * only under its `inputDir` (`../`, absolute paths elsewhere and symlinks out refused with nothing sent),
 * `edit_image` edits, composes, upscales and cuts out into `outputDir`, and `generate_video` / `generate_audio`
 * write their media under `outputDir`, report progress to the run's callbacks (`job_progress`) and `onProgress`,
 * hand the model its own mistakes (a refused quote, a refused prompt with its refund) and stop on the run's signal.
 */
import { mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { encodeWav, speakPcm } from "../../packages/langchain-service-emulator/src/media/wav.js";
import { pictureFor } from "../../packages/langchain-service-emulator/src/media/png.js";
import { ConfigurationError } from "../../src/http/errors.js";
import { JobCancelledError } from "../../src/media/errors.js";
import type { JobProgress } from "../../src/media/job-runner.js";
import { AudioGenerationTool, ImageEditTool, JOB_PROGRESS_EVENT, TranscriptionTool, VideoGenerationTool } from "../../src/tools/index.js";
import { callTool, decodePng, decodeWav } from "../tools/helpers.js";
import { decodeMp4 } from "./mp4-reader.js";
import { recordingClient } from "./helpers.js";

const KEY = "tools-key";
let emu: Emulator;
let root: string;
let input: string;
beforeAll(async () => {
  emu = await startEmulator({
    apiKeys: [{ key: KEY, usd: 20, diem: 0 }],
    jobs: { processingMs: { video: 200, audio: 200 } },
    rateLimits: { abuseMaxFailures: 10_000 },
  });
  root = await mkdtemp(join(tmpdir(), "media-tools-"));
  input = join(root, "in");
  await mkdir(input);
  await writeFile(join(input, "clip.wav"), encodeWav(speakPcm("Meet me at the harbour at noon. Bring the map.", "am_adam")));
  await writeFile(join(input, "silence.wav"), encodeWav(Buffer.alloc(24_000)));
  await writeFile(join(input, "pic.png"), pictureFor("hills by a lake", 256, 256));
  await writeFile(join(input, "sea.png"), pictureFor("the sea", 256, 256));
  await writeFile(join(root, "secret.wav"), encodeWav(speakPcm("a secret outside the directory", "am_adam")));
  await symlink(join(root, "secret.wav"), join(input, "link.wav"));
});
afterAll(async () => {
  await emu?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

describe("transcribe_audio", () => {
  it("transcribes a file under inputDir; with timestamps, when each segment was said", async () => {
    const { client } = recordingClient(emu, { apiKey: KEY });
    const tool = new TranscriptionTool({ client, inputDir: input });
    const { json, artifact } = await callTool(tool, "transcribe_audio", { path: "clip.wav", timestamps: true });
    expect(json.text).toBe("Meet me at the harbour at noon. Bring the map.");
    expect(json.durationSeconds).toBeGreaterThan(1);
    expect(json.segments.map((s: { text: string }) => s.text)).toEqual(["Meet me at the harbour at noon.", "Bring the map."]);
    expect(json.segments[1].start).toBeGreaterThan(json.segments[0].start);
    expect(artifact.timestamps.word).toHaveLength(10);
    expect((await callTool(tool, "transcribe_audio", { path: join(input, "clip.wav") })).json.segments).toBeUndefined();
  });

  it("refuses a path outside inputDir (../, absolute elsewhere, a symlink out) with nothing sent; a missing file; silence is the model's to know", async () => {
    const { client, sent } = recordingClient(emu, { apiKey: KEY });
    const tool = new TranscriptionTool({ client, inputDir: input });
    for (const path of ["../secret.wav", join(root, "secret.wav"), "link.wav", "/etc/passwd"]) {
      expect((await callTool(tool, "transcribe_audio", { path })).json.error.code).toBe("PATH_NOT_ALLOWED");
    }
    expect((await callTool(tool, "transcribe_audio", { path: "nope.wav" })).json.error.code).toBe("FILE_NOT_FOUND");
    expect((await callTool(tool, "transcribe_audio", { path: "pic.png" })).json.error).toMatchObject({
      code: "INVALID_PARAMS",
      message: expect.stringMatching(/container/),
    });
    expect(sent).toEqual([]);
    expect((await callTool(tool, "transcribe_audio", { path: "silence.wav" })).json.error.code).toBe("UNPROCESSABLE_AUDIO");
    expect(() => new TranscriptionTool({ client } as never)).toThrow(ConfigurationError);
  });
});

describe("edit_image", () => {
  it("edits, composes, upscales and cuts out images of inputDir into new files under outputDir; the model reads sizes and paths", async () => {
    const outputDir = join(root, "edits");
    const { client, sent } = recordingClient(emu, { apiKey: KEY });
    const tool = new ImageEditTool({ client, inputDir: input, outputDir });
    const edit = await callTool(tool, "edit_image", { path: "pic.png", prompt: "add a full moon" });
    expect(edit.json.description).toMatch(/^Edited pic\.png: add a full moon \(256×256 PNG, \d+ bytes\)$/);
    expect(dirname(edit.json.path)).toBe(outputDir);
    const composed = await callTool(tool, "edit_image", { path: "pic.png", morePaths: ["sea.png"], prompt: "the sea behind the hills" });
    expect(composed.json.description).toMatch(/with 1 more image/);
    const up = await callTool(tool, "edit_image", { operation: "upscale", path: "pic.png", scale: 4 });
    expect(decodePng(await readFile(up.json.path))).toMatchObject({ width: 1024, height: 1024 });
    const cut = await callTool(tool, "edit_image", { operation: "remove_background", path: "pic.png" });
    expect(decodePng(await readFile(cut.json.path)).colorType).toBe(6);
    expect((await readdir(outputDir)).length).toBe(4);
    expect(sent.map((s) => s.path)).toEqual(["/image/edit", "/image/multi-edit", "/image/upscale", "/image/background-remove"]);
    expect(edit.text).not.toMatch(/iVBORw0KGgo/);
  });

  it("reads from its outputDir by default; without outputDir the result is a data URL in the artifact; mistakes go back to the model", async () => {
    const { client, sent } = recordingClient(emu, { apiKey: KEY });
    const own = new ImageEditTool({ client, outputDir: input });
    expect((await callTool(own, "edit_image", { path: "pic.png", prompt: "snow" })).json.path.startsWith(input)).toBe(true);
    const inline = new ImageEditTool({ client, inputDir: input });
    const r = await callTool(inline, "edit_image", { path: "pic.png", prompt: "snow" });
    expect(r.artifact.dataUrl).toMatch(/^data:image\/png;base64,/);
    expect(r.text).not.toMatch(/base64,/);
    const before = sent.length;
    expect((await callTool(inline, "edit_image", { path: "pic.png" })).json.error.code).toBe("INVALID_PARAMS");
    expect((await callTool(inline, "edit_image", { path: "pic.png", operation: "upscale", scale: 3 })).json.error.code).toBe(
      "INVALID_PARAMS",
    );
    expect((await callTool(inline, "edit_image", { path: "../secret.wav", prompt: "x" })).json.error.code).toBe("PATH_NOT_ALLOWED");
    expect(sent.length).toBe(before);
    expect(() => new ImageEditTool({ client })).toThrow(ConfigurationError);
  });
});

class ProgressHandler extends BaseCallbackHandler {
  name = "ProgressHandler";
  readonly seen: JobProgress[] = [];
  override async handleCustomEvent(eventName: string, data: unknown): Promise<void> {
    if (eventName === JOB_PROGRESS_EVENT) this.seen.push(data as JobProgress);
  }
}

describe("generate_video and generate_audio", () => {
  it("generate_video writes a real MP4 under outputDir; progress reaches the run's callbacks and onProgress; the model reads path, length, cost", async () => {
    const outputDir = join(root, "videos");
    const { client } = recordingClient(emu, { apiKey: KEY });
    const direct: string[] = [];
    const tool = new VideoGenerationTool({
      client,
      outputDir,
      duration: "4s",
      pollIntervalMs: { initial: 0 },
      onProgress: (p) => void direct.push(p.phase),
    });
    const handler = new ProgressHandler();
    const { json, artifact } = await callTool(
      tool,
      "generate_video",
      { prompt: "waves rolling onto a beach", aspectRatio: "1:1" },
      { callbacks: [handler] },
    );
    expect(json).toMatchObject({ duration: "4s", aspectRatio: "1:1", costUsd: 0.2, bytes: expect.any(Number) });
    expect(dirname(json.path)).toBe(outputDir);
    expect(json.path).toMatch(/video-\d{8}T\d{6}Z-[0-9a-f]{8}\.mp4$/);
    expect(decodeMp4(await readFile(json.path))).toMatchObject({ width: 120, height: 120, durationSeconds: 4 });
    expect(artifact).toMatchObject({ model: "emu-video", queueId: expect.any(String), contentType: "video/mp4", recovered: false });
    expect(handler.seen.map((p) => p.phase)).toEqual(direct);
    expect(direct[0]).toBe("quoted");
    expect(direct.at(-1)).toBe("completed");
  });

  it("a quote over maxQuoteUsd and a refused prompt go back to the model (with the refund); nothing is written", async () => {
    const outputDir = join(root, "refused");
    const { client, count } = recordingClient(emu, { apiKey: KEY });
    const capped = new VideoGenerationTool({ client, outputDir, maxQuoteUsd: 0.1, pollIntervalMs: { initial: 0 } });
    const quote = await callTool(capped, "generate_video", { prompt: "a storm at sea", duration: "8s" });
    expect(quote.json.error).toMatchObject({ code: "QUOTE_REFUSED", quoteUsd: 0.4, limitUsd: 0.1 });
    expect(count("/video/queue")).toBe(0);
    const tool = new VideoGenerationTool({ client, outputDir, duration: "2s", pollIntervalMs: { initial: 0 } });
    const refused = await callTool(tool, "generate_video", { prompt: "a storm [[emu:fail=422]]" });
    expect(refused.json.error).toMatchObject({ code: "CONTENT_POLICY", refundedUsd: 0.1 });
    await expect(readdir(outputDir)).rejects.toThrow();
  });

  it("the run's signal stops the wait (JobCancelledError with the queue id); outputDir is required", async () => {
    const { client } = recordingClient(emu, { apiKey: KEY });
    const controller = new AbortController();
    const tool = new VideoGenerationTool({
      client,
      outputDir: join(root, "never"),
      duration: "2s",
      onProgress: (p) => void (p.phase === "queued" && controller.abort()),
    });
    const err = await tool
      .invoke({ type: "tool_call", id: "c", name: "generate_video", args: { prompt: "rain" } }, { signal: controller.signal })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JobCancelledError);
    expect((err as JobCancelledError).queueId).toBeTruthy();
    expect(() => new VideoGenerationTool({ client } as never)).toThrow(ConfigurationError);
  });

  it("generate_audio writes a WAV of the asked length (the default music model); the narrator speaks the prompt", async () => {
    const outputDir = join(root, "audio");
    const { client } = recordingClient(emu, { apiKey: KEY });
    const music = await callTool(new AudioGenerationTool({ client, outputDir, pollIntervalMs: { initial: 0 } }), "generate_audio", {
      prompt: "a calm piano melody",
      durationSeconds: 3,
    });
    expect(music.json).toMatchObject({ format: "wav", durationSeconds: 3, costUsd: 0.03 });
    expect(decodeWav(await readFile(music.json.path)).durationSeconds).toBeCloseTo(3, 3);
    const narrator = new AudioGenerationTool({ client, outputDir, model: "emu-narrator", pollIntervalMs: { initial: 0 } });
    const spoken = await callTool(narrator, "generate_audio", { prompt: "Chapter one. The harbour at dawn.", voice: "Roger" });
    // the emulator hears its own voice: the narration transcribes back
    expect((await client.transcribe(spoken.json.path)).text).toBe("Chapter one. The harbour at dawn.");
  });
});
