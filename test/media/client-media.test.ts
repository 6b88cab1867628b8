/**
 * `client.transcribe` and the image-editing methods through the emulator over loopback: every input form (a path,
 * bytes, a Blob, a web stream, a Node stream), multipart where the route has a form and JSON where it has only
 * JSON, typed answers told from the bytes, and bad input refused before any request (nothing on the wire).
 */
import { Readable } from "node:stream";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { encodeWav, speakPcm } from "../../packages/langchain-service-emulator/src/media/wav.js";
import { pictureFor } from "../../packages/langchain-service-emulator/src/media/png.js";
import { ModelNotFoundError, ValidationError } from "../../src/http/errors.js";
import { EvmWallet } from "../../src/evm/index.js";
import { decodePng } from "../tools/helpers.js";
import { recordingClient } from "./helpers.js";

const KEY = "media-client";
let emu: Emulator;
let dir: string;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: [{ key: KEY, usd: 10, diem: 0 }], walletStartingUsd: 1, x402: { solana: false } });
  dir = await mkdtemp(join(tmpdir(), "media-client-"));
});
afterAll(async () => {
  await emu?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const spoken = "Meet me at the harbour at noon.";
const wav = encodeWav(speakPcm(spoken, "am_adam"));

describe("client.transcribe", () => {
  it("takes a path, bytes, a Blob, a web stream and a Node stream, and sends one multipart request each", async () => {
    const path = join(dir, "clip.wav");
    await writeFile(path, wav);
    const { client, sent } = recordingClient(emu, { apiKey: KEY });
    const half = Math.floor(wav.length / 2);
    const inputs = [
      path,
      new Uint8Array(wav),
      new Blob([new Uint8Array(wav)], { type: "audio/wav" }),
      new ReadableStream<Uint8Array>({
        start: (c) => (c.enqueue(new Uint8Array(wav.subarray(0, half))), c.enqueue(new Uint8Array(wav.subarray(half))), c.close()),
      }),
      Readable.from([wav.subarray(0, half), wav.subarray(half)]),
    ];
    for (const input of inputs) {
      const r = await client.transcribe(input);
      expect(r).toMatchObject({ text: spoken, model: "nvidia/parakeet-tdt-0.6b-v3" });
      expect(r.durationSeconds).toBeCloseTo((wav.length - 44) / 48_000, 2);
    }
    expect(sent.map((s) => [s.path, s.contentType])).toEqual(Array(5).fill(["/audio/transcriptions", "multipart/form-data"]));
    expect(emu.account(KEY)!.entries.filter((e) => e.kind === "transcription")).toHaveLength(5);
  });

  it("timestamps (typed word and segment timings), text format, a language hint; a wallet client signs in with SIWX", async () => {
    const { client } = recordingClient(emu, { apiKey: KEY });
    const r = await client.transcribe(wav, { model: "openai/whisper-large-v3", timestamps: true, language: "en" });
    expect(r.timestamps?.word?.map((w) => w.word)).toEqual(["Meet", "me", "at", "the", "harbour", "at", "noon"]);
    expect(r.timestamps?.segment).toEqual([{ text: spoken, start: 0, end: expect.any(Number) }]);
    expect(r.timestamps?.char).toBeUndefined();
    expect((await client.transcribe(wav, { responseFormat: "text" })).text).toBe(spoken);
    const wallet = new EvmWallet(Wallet.createRandom().privateKey);
    const paid = recordingClient(emu, { wallet, payment: { dryRun: true } });
    expect((await paid.client.transcribe(wav)).text).toBe(spoken);
    expect(emu.account(wallet.address)!.entries.filter((e) => e.kind === "transcription")).toHaveLength(1);
  });

  it("refuses before any request: audio that is no accepted container, over 25 MB (a stream stopped at the limit), timestamps with text, a bad language", async () => {
    const { client, sent } = recordingClient(emu, { apiKey: KEY });
    await expect(client.transcribe(Buffer.from("PCM without a container......."))).rejects.toThrow(
      /not in a container the service accepts/,
    );
    let pulled = 0;
    const huge = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled += 1 << 20;
        c.enqueue(new Uint8Array(1 << 20));
      },
    });
    await expect(client.transcribe(huge)).rejects.toThrow(/larger than 25 MB/);
    expect(pulled).toBeLessThanOrEqual(27 << 20);
    await expect(client.transcribe(wav, { responseFormat: "text", timestamps: true })).rejects.toBeInstanceOf(ValidationError);
    await expect(client.transcribe(wav, { language: "english" })).rejects.toBeInstanceOf(ValidationError);
    await expect(client.transcribe(join(dir, "missing.wav"))).rejects.toThrow(/cannot read/);
    await expect(client.transcribe(new Uint8Array(0))).rejects.toThrow(/empty/);
    expect(sent).toEqual([]);
    await expect(client.transcribe(wav, { model: "whisper-9" })).rejects.toBeInstanceOf(ModelNotFoundError);
  });
});

describe("image editing", () => {
  const png = pictureFor("hills by a lake", 256, 256);

  it("editImage sends JSON (base64), multiEditImage and upscaleImage multipart file parts, removeBackground multipart or JSON for a URL", async () => {
    const path = join(dir, "pic.png");
    await writeFile(path, png);
    const { client, sent } = recordingClient(emu, { apiKey: KEY });
    const edited = await client.editImage({ image: path, prompt: "add a moon", enhancePrompt: true });
    expect(edited).toMatchObject({
      mimeType: "image/png",
      extension: "png",
      width: 256,
      height: 256,
      enhancedPrompt: expect.stringMatching(/^add a moon, /),
    });
    expect(decodePng(edited.bytes).width).toBe(256);
    const multi = await client.multiEditImage({
      images: [png, new Blob([new Uint8Array(pictureFor("sea", 300, 300))])],
      prompt: "the sea behind the hills",
    });
    expect(multi).toMatchObject({ width: 256, height: 256 });
    const withUrl = await client.multiEditImage({ images: [png, "https://example.org/layer.png"], prompt: "with a layer from the web" });
    expect(withUrl.width).toBe(256);
    expect((await client.upscaleImage({ image: png, scale: 4 })).width).toBe(1024);
    const cutout = await client.removeBackground({ image: new Uint8Array(png) });
    expect(decodePng(cutout.bytes).colorType).toBe(6);
    expect((await client.removeBackground({ image: "https://example.org/photo.png" })).mimeType).toBe("image/png");
    expect(sent.map((s) => `${s.path} ${s.contentType}`)).toEqual([
      "/image/edit application/json",
      "/image/multi-edit multipart/form-data",
      "/image/multi-edit application/json",
      "/image/upscale multipart/form-data",
      "/image/background-remove multipart/form-data",
      "/image/background-remove application/json",
    ]);
  });

  it("refuses before any request: a PNG under 256×256, bytes that are no image, a URL where the route takes only the image, an empty prompt, a bad scale", async () => {
    const { client, sent } = recordingClient(emu, { apiKey: KEY });
    await expect(client.editImage({ image: pictureFor("small", 100, 100), prompt: "x" })).rejects.toThrow(
      /100×100: the service takes 65,536 to 33,177,600 pixels/,
    );
    await expect(client.editImage({ image: Buffer.from("not an image at all"), prompt: "x" })).rejects.toThrow(/not a PNG, JPEG or WebP/);
    await expect(client.upscaleImage({ image: "https://example.org/a.png" })).rejects.toThrow(/not a URL/);
    await expect(client.editImage({ image: png, prompt: "  " })).rejects.toBeInstanceOf(ValidationError);
    await expect(client.upscaleImage({ image: png, scale: 3 as 2 })).rejects.toBeInstanceOf(ValidationError);
    await expect(client.multiEditImage({ images: [], prompt: "x" })).rejects.toBeInstanceOf(ValidationError);
    await expect(client.editImage({ image: "http://example.org/a.png", prompt: "x" })).rejects.toThrow(/only https/);
    expect(sent).toEqual([]);
  });
});
