/**
 * generate_image and text_to_speech against the emulator over loopback: the PNG decodes for real (signature,
 * every chunk's CRC, IHDR, IDAT inflating to the size IHDR implies), the WAV header is valid and its duration is
 * what the tool reports, files land only under `outputDir` (created if needed, named by the tool), no base64 ever
 * reaches the model's text, and bad input (a bad size, an unknown voice) is refused before the paid request.
 */
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ConfigurationError, ValidationError } from "../../src/http/errors.js";
import {
  createClonedVoice,
  createSpeech,
  generateImage,
  ImageGenerationTool,
  simpleGenerateImage,
  TextToSpeechTool,
} from "../../src/tools/index.js";
import { callTool, countingClient, decodePng, decodeWav } from "./helpers.js";

const KEY = "media-tools-key";
let emu: Emulator;
let root: string;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: [{ key: KEY, usd: 5, diem: 0 }] });
  root = await mkdtemp(join(tmpdir(), "media-tools-"));
});
afterAll(async () => {
  await emu?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

function inside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return !rel.startsWith("..") && !rel.includes("/") && rel.length > 0;
}

describe("generate_image", () => {
  it("writes a real PNG under outputDir (created if needed) and tells the model only where it went", async () => {
    const outputDir = join(root, "made", "by", "tool");
    const { client, counts } = countingClient(emu, { apiKey: KEY });
    const tool = new ImageGenerationTool({ client, outputDir, width: 96, height: 64 });
    const before = emu.account(KEY)!.usd;
    const { json, text, artifact } = await callTool(tool, "generate_image", { prompt: "a lighthouse at sunset over the sea" });
    expect(json.description).toMatch(/^Generated a 96×64 PNG image \(\d+ bytes\) of: a lighthouse/);
    expect(inside(outputDir, json.path)).toBe(true);
    expect(json.path).toMatch(/image-\d{8}T\d{6}Z-[0-9a-f]{8}\.png$/);
    expect(text.length).toBeLessThan(400);
    expect(text).not.toMatch(/iVBORw0KGgo|base64/);
    const png = decodePng(await readFile(json.path));
    expect(png).toMatchObject({ width: 96, height: 64, bitDepth: 8, colorType: 2 });
    expect(png.chunks).toEqual(["IHDR", "tEXt", "tEXt", "IDAT", "IEND"]);
    // a picture, not a flat fill: many distinct colours
    const colours = new Set<string>();
    for (let y = 0; y < 64; y += 4)
      for (let x = 0; x < 96; x += 4) colours.add(png.raw.subarray(y * 289 + 1 + x * 3, y * 289 + 4 + x * 3).toString("hex"));
    expect(colours.size).toBeGreaterThan(10);
    expect(artifact).toMatchObject({ model: "emu-image", mimeType: "image/png", width: 96, height: 64, path: json.path });
    expect(artifact.dataUrl).toBeUndefined();
    // the default model was asked once, then the image: both through the one stack
    expect(counts).toEqual({ "/models": 1, "/image/generate": 1 });
    expect(emu.account(KEY)!.usd).toBeCloseTo(before - 0.01, 6);
    // deterministic: the same prompt draws the same picture
    const again = await callTool(tool, "generate_image", { prompt: "a lighthouse at sunset over the sea" });
    expect(Buffer.compare(await readFile(again.json.path), await readFile(json.path))).toBe(0);
    expect(again.json.path).not.toBe(json.path);
    expect(counts["/models"]).toBe(1);
  });

  it("file names are the tool's: a prompt that looks like a path changes nothing", async () => {
    const outputDir = join(root, "names");
    const tool = new ImageGenerationTool({
      client: countingClient(emu, { apiKey: KEY }).client,
      outputDir,
      width: 16,
      height: 16,
      model: "emu-image",
    });
    const { json } = await callTool(tool, "generate_image", { prompt: "../../../../tmp/evil.png" });
    expect(inside(outputDir, json.path)).toBe(true);
    expect(await readdir(outputDir)).toHaveLength(1);
    expect(dirname(json.path)).toBe(outputDir);
  });

  it("without outputDir the image is a data URL in the artifact only", async () => {
    const tool = new ImageGenerationTool({
      client: countingClient(emu, { apiKey: KEY }).client,
      width: 32,
      height: 32,
      model: "emu-image",
    });
    const { json, text, artifact } = await callTool(tool, "generate_image", { prompt: "a night sky with stars" });
    expect(json.image).toContain("artifact.dataUrl");
    expect(text.length).toBeLessThan(400);
    expect(artifact.dataUrl).toMatch(/^data:image\/png;base64,iVBORw0KGgo/);
    expect(decodePng(Buffer.from(artifact.dataUrl.split(",")[1], "base64"))).toMatchObject({ width: 32, height: 32 });
  });

  it("bad input is refused before any request", async () => {
    const { client, total } = countingClient(emu, { apiKey: KEY });
    const tool = new ImageGenerationTool({ client, outputDir: join(root, "never"), model: "emu-image" });
    for (const args of [
      { prompt: "" },
      { prompt: "  " },
      { prompt: "x".repeat(7501) },
      { prompt: "ok", width: 5000 },
      { prompt: "ok", height: 10 },
      { prompt: "ok", width: 64.5 },
    ]) {
      const { json } = await callTool(tool, "generate_image", args);
      expect(json.error.code, JSON.stringify(args).slice(0, 60)).toBe("INVALID_PARAMS");
    }
    await expect(generateImage(client, { model: "emu-image", prompt: "" })).rejects.toBeInstanceOf(ValidationError);
    await expect(generateImage(client, { model: "emu-image", prompt: "a", width: 0 })).rejects.toBeInstanceOf(ValidationError);
    await expect(simpleGenerateImage(client, { prompt: "a", size: "7x7" as never })).rejects.toBeInstanceOf(ValidationError);
    expect(total()).toBe(0);
    await expect(stat(join(root, "never"))).rejects.toThrow();
    expect(() => new ImageGenerationTool({ client, outputDir: "" })).toThrow(ConfigurationError);
  });

  it("simpleGenerateImage speaks the OpenAI-compatible /images/generations", async () => {
    const { client } = countingClient(emu, { apiKey: KEY });
    const res = await simpleGenerateImage(client, { prompt: "a red balloon", size: "256x256", model: "dall-e-3" });
    expect(res.images[0]).toMatchObject({ mimeType: "image/png", width: 256, height: 256 });
    expect(res.headers.model?.id).toBe("emu-image"); // an unknown model name falls back to the default
    decodePng(res.images[0]!.bytes);
  });
});

describe("text_to_speech", () => {
  it("writes a valid WAV under outputDir and reports its path, format and duration", async () => {
    const outputDir = join(root, "speech", "out");
    const { client, counts } = countingClient(emu, { apiKey: KEY });
    const tool = new TextToSpeechTool({ client, outputDir });
    const text = "Hello there. This is the emulator, speaking clearly!";
    const { json, artifact } = await callTool(tool, "text_to_speech", { text, voice: "am_adam" });
    expect(inside(outputDir, json.path)).toBe(true);
    expect(json.path).toMatch(/speech-\d{8}T\d{6}Z-[0-9a-f]{8}\.wav$/);
    const wav = decodeWav(await readFile(json.path));
    expect(wav).toMatchObject({ channels: 1, sampleRate: 24_000, bitsPerSample: 16 });
    expect(json).toMatchObject({ format: "wav", voice: "am_adam", characters: text.length });
    expect(json.durationSeconds).toBeCloseTo(wav.durationSeconds, 3);
    expect(json.durationSeconds).toBeGreaterThan(0.5);
    expect(artifact).toMatchObject({ model: "tts-kokoro", contentType: "audio/wav", path: json.path });
    expect(counts).toEqual({ "/models": 1, "/audio/speech": 1 });
    expect(emu.account(KEY)!.entries.at(-1)).toMatchObject({ type: "CHARGE", kind: "speech", modelId: "tts-kokoro" });
  });

  it("an unknown voice gets the valid ones, before any speech request; bad text and speed too", async () => {
    const { client, counts } = countingClient(emu, { apiKey: KEY });
    const tool = new TextToSpeechTool({ client, outputDir: join(root, "speech-bad") });
    const { json } = await callTool(tool, "text_to_speech", { text: "hi", voice: "Darth" });
    expect(json.error.code).toBe("INVALID_VOICE");
    expect(json.error.message).toContain("af_sky");
    for (const args of [{ text: "" }, { text: "x".repeat(4097) }, { text: "hi", speed: 9 }]) {
      expect((await callTool(tool, "text_to_speech", args)).json.error.code).toBe("INVALID_PARAMS");
    }
    expect(counts["/audio/speech"]).toBeUndefined();
    await expect(createSpeech(client, { input: "" })).rejects.toBeInstanceOf(ValidationError);
    await expect(createSpeech(client, { input: "a", speed: 0.1 })).rejects.toBeInstanceOf(ValidationError);
    expect(counts["/audio/speech"]).toBeUndefined();
  });

  it("a cloned voice handle (POST /audio/voices) speaks with its model; PCM without outputDir is a data URL with its duration", async () => {
    const { client } = countingClient(emu, { apiKey: KEY });
    const sample = (await createSpeech(client, { input: "a sample of my voice", voice: "af_sky" })).audio;
    const cloned = await createClonedVoice(client, sample, { model: "tts-chatterbox-hd" });
    expect(cloned).toMatchObject({ id: expect.stringMatching(/^vv_/), model: "tts-chatterbox-hd" });
    const tool = new TextToSpeechTool({ client, model: "tts-chatterbox-hd", format: "pcm" });
    const { json, artifact } = await callTool(tool, "text_to_speech", { text: "cloned and speaking", voice: cloned.id });
    expect(json).toMatchObject({ format: "pcm", voice: cloned.id });
    expect(artifact.dataUrl).toMatch(/^data:audio\/pcm;base64,/);
    expect(json.durationSeconds).toBeCloseTo(artifact.bytes / 48_000, 3);
  });
});
