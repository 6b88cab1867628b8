/**
 * The emulator's transcription and image-manipulation routes on the wire. Transcription: multipart only, `model`
 * required, `response_format` json|text, timestamps per the model's granularity, the extension or MIME type then the
 * bytes checked, silence a 422 that is not billed, billing per second, and its own speech read back word for word.
 * Images: /image/edit (JSON only), /image/multi-edit (JSON or multipart, `modelId` only), /image/upscale and
 * /image/background-remove (JSON or multipart, each schema closed), size limits, PNG (RGBA for a cutout) answers.
 */
import { deflateSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { decodePng as decodeEmulatorPng, encodePng, pictureFor } from "../../packages/langchain-service-emulator/src/media/png.js";
import { crc32 } from "../../packages/langchain-service-emulator/src/media/png.js";
import { encodeWav, speakPcm } from "../../packages/langchain-service-emulator/src/media/wav.js";
import { decodePng } from "../tools/helpers.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: [{ key: "k", usd: 10, diem: 0 }], rateLimits: { abuseMaxFailures: 10_000 } });
});
afterAll(async () => {
  await emu?.close();
});

async function send(path: string, body: FormData | string | object, headers: Record<string, string> = {}) {
  const json = !(body instanceof FormData) && typeof body !== "string";
  const res = await fetch(`${emu.url}${path}`, {
    method: "POST",
    headers: { authorization: "Bearer k", ...(json ? { "content-type": "application/json" } : {}), ...headers },
    body: json ? JSON.stringify(body) : (body as BodyInit),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  const type = res.headers.get("content-type") ?? "";
  return {
    status: res.status,
    headers: res.headers,
    type,
    bytes,
    json: type.includes("json") ? JSON.parse(bytes.toString("utf8")) : undefined,
    text: bytes.toString("utf8"),
  };
}

function audioForm(
  file: Uint8Array,
  fields: Record<string, string> = { model: "nvidia/parakeet-tdt-0.6b-v3" },
  name = "clip.wav",
  type = "audio/wav",
): FormData {
  const form = new FormData();
  form.set("file", new Blob([new Uint8Array(file)], { type }), name);
  for (const [k, v] of Object.entries(fields)) form.set(k, v);
  return form;
}

const charges = () => emu.account("k")!.entries.filter((e) => e.type === "CHARGE");

describe("/audio/transcriptions", () => {
  const spoken = "The harbour opens at noon. Bring the map!";
  const wav = encodeWav(speakPcm(spoken, "af_sky"));

  it("reads the emulator's own speech back word for word; json by default, text/plain with response_format text", async () => {
    const r = await send("/audio/transcriptions", audioForm(wav));
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ text: spoken, duration: expect.any(Number) });
    expect(r.json.duration).toBeCloseTo((wav.length - 44) / 48_000, 2);
    expect(r.headers.get("x-service-model-id")).toBe("nvidia/parakeet-tdt-0.6b-v3");
    const text = await send("/audio/transcriptions", audioForm(wav, { model: "openai/whisper-large-v3", response_format: "text" }));
    expect(text.type).toMatch(/^text\/plain/);
    expect(text.text).toBe(spoken);
  });

  it("timestamps: true adds the model's granularities (parakeet: segment, word, char; whisper: segment, word), in order", async () => {
    const p = (await send("/audio/transcriptions", audioForm(wav, { model: "nvidia/parakeet-tdt-0.6b-v3", timestamps: "true" }))).json;
    expect(Object.keys(p.timestamps).sort()).toEqual(["char", "segment", "word"]);
    expect(p.timestamps.word.map((w: { word: string }) => w.word)).toEqual([
      "The",
      "harbour",
      "opens",
      "at",
      "noon",
      "Bring",
      "the",
      "map",
    ]);
    expect(p.timestamps.segment.map((s: { text: string }) => s.text)).toEqual(["The harbour opens at noon.", "Bring the map!"]);
    const starts = p.timestamps.word.map((w: { start: number }) => w.start);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    expect(p.timestamps.segment[1].end).toBeLessThanOrEqual(p.duration);
    expect(p.timestamps.char[0]).toMatchObject({ char: "T", start: 0 });
    const w = (await send("/audio/transcriptions", audioForm(wav, { model: "openai/whisper-large-v3", timestamps: "true" }))).json;
    expect(Object.keys(w.timestamps).sort()).toEqual(["segment", "word"]);
  });

  it("another WAV gets a syllable per voiced stretch; silence is a 422 that is not billed; billed per second of audio", async () => {
    // two tones with a gap: two "syllables"
    const tone = Buffer.alloc(48_000 * 2);
    for (let i = 0; i < 48_000; i++) if (i < 12_000 || i > 30_000) tone.writeInt16LE(Math.round(Math.sin(i / 8) * 9000), i * 2);
    const before = charges().length;
    const r = await send(
      "/audio/transcriptions",
      audioForm(encodeWav(tone, 24_000), { model: "nvidia/parakeet-tdt-0.6b-v3", timestamps: "true" }),
    );
    expect(r.json.timestamps.word).toHaveLength(2);
    expect(r.json.duration).toBeCloseTo(2, 3);
    expect(charges().slice(before)).toEqual([
      expect.objectContaining({ amount: -0.0002, kind: "transcription", modelId: "nvidia/parakeet-tdt-0.6b-v3" }),
    ]);
    const silent = await send("/audio/transcriptions", audioForm(encodeWav(Buffer.alloc(24_000 * 2))));
    expect(silent.status).toBe(422);
    expect(charges().length).toBe(before + 1);
  });

  it("refuses, as published: a JSON body (no file), no model, an unknown model (404), a bad response_format, an extension it does not take, bytes that are not audio", async () => {
    expect((await send("/audio/transcriptions", { file: wav.toString("base64"), model: "nvidia/parakeet-tdt-0.6b-v3" })).json.error).toBe(
      "No audio file provided",
    );
    expect((await send("/audio/transcriptions", audioForm(wav, {}))).json.error).toBe("model is required");
    expect((await send("/audio/transcriptions", audioForm(wav, { model: "whisper-9" }))).status).toBe(404);
    expect(
      (await send("/audio/transcriptions", audioForm(wav, { model: "nvidia/parakeet-tdt-0.6b-v3", response_format: "verbose_json" })))
        .status,
    ).toBe(400);
    expect((await send("/audio/transcriptions", audioForm(wav, undefined, "clip.txt", "text/plain"))).status).toBe(400);
    const notAudio = await send("/audio/transcriptions", audioForm(Buffer.from("hello, not audio at all"), undefined, "clip.wav"));
    expect(notAudio.json.error).toMatch(/binary signature/);
    // other fields are ignored, as published
    expect((await send("/audio/transcriptions", audioForm(wav, { model: "nvidia/parakeet-tdt-0.6b-v3", prompt: "ignored" }))).status).toBe(
      200,
    );
  });
});

/** A PNG with each row filtered by `filters[y % n]` (1 Sub, 2 Up, 3 Average, 4 Paeth), as other encoders write them. */
function filteredPng(width: number, height: number, rgb: Uint8Array, filters: number[]): Buffer {
  const stride = width * 3;
  const raw = Buffer.alloc((stride + 1) * height);
  for (let y = 0; y < height; y++) {
    const f = filters[y % filters.length]!;
    raw[y * (stride + 1)] = f;
    for (let i = 0; i < stride; i++) {
      const x = rgb[y * stride + i]!;
      const a = i >= 3 ? rgb[y * stride + i - 3]! : 0;
      const b = y > 0 ? rgb[(y - 1) * stride + i]! : 0;
      const c = y > 0 && i >= 3 ? rgb[(y - 1) * stride + i - 3]! : 0;
      const p = a + b - c;
      const paeth =
        Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c) ? a : Math.abs(p - b) <= Math.abs(p - c) ? b : c;
      const pred = f === 1 ? a : f === 2 ? b : f === 3 ? (a + b) >> 1 : f === 4 ? paeth : 0;
      raw[y * (stride + 1) + 1 + i] = (x - pred) & 0xff;
    }
  }
  const chunk = (type: string, data: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length);
    head.write(type, 4, "latin1");
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])));
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

describe("image manipulation", () => {
  const png = pictureFor("hills by a lake", 256, 256);
  const b64 = png.toString("base64");

  it("the emulator decodes PNGs whatever their row filters", () => {
    const rgb = decodeEmulatorPng(png)!.rgb;
    expect(decodeEmulatorPng(filteredPng(256, 256, rgb, [0, 1, 2, 3, 4]))!.rgb).toEqual(rgb);
  });

  it("/image/edit: JSON with plain base64 (a data URL, multipart, an unknown member, a tiny image refused); a PNG of the input's size", async () => {
    const r = await send("/image/edit", { model: "emu-image-edit", prompt: "add a moon", image: b64, enhance_prompt: true });
    expect(r.status).toBe(200);
    expect(r.type).toBe("image/png");
    expect(decodePng(r.bytes)).toMatchObject({ width: 256, height: 256, colorType: 2 });
    expect(Buffer.compare(r.bytes, png)).not.toBe(0);
    expect(decodeURIComponent(r.headers.get("x-service-enhanced-prompt")!)).toMatch(/^add a moon, /);
    expect(charges().at(-1)).toMatchObject({ amount: -0.04, kind: "image-edit", modelId: "emu-image-edit" });
    expect((await send("/image/edit", { prompt: "x", image: `data:image/png;base64,${b64}` })).status).toBe(400);
    expect((await send("/image/edit", { prompt: "x", image: b64, strength: 1 })).status).toBe(400);
    expect((await send("/image/edit", { prompt: "x", image: pictureFor("small", 100, 100).toString("base64") })).json.error).toMatch(
      /65,536 to 33,177,600 pixels/,
    );
    const form = new FormData();
    form.set("prompt", "x");
    form.set("image", new Blob([new Uint8Array(png)], { type: "image/png" }), "a.png");
    expect((await send("/image/edit", form)).status).toBe(415);
  });

  it("/image/multi-edit: JSON (base64 or data URLs) or multipart parts named images; modelId only; at most the model's maxInputImages", async () => {
    const json = await send("/image/multi-edit", {
      modelId: "emu-image-edit",
      prompt: "combine",
      images: [b64, `data:image/png;base64,${pictureFor("sea", 256, 256).toString("base64")}`],
    });
    expect(decodePng(json.bytes)).toMatchObject({ width: 256, height: 256 });
    expect((await send("/image/multi-edit", { model: "emu-image-edit", prompt: "combine", images: [b64] })).status).toBe(400);
    expect((await send("/image/multi-edit", { prompt: "combine", images: [b64, b64, b64, b64] })).json.error).toMatch(/at most 3 images/);
    const form = new FormData();
    form.set("prompt", "combine");
    form.append("images", new Blob([new Uint8Array(png)], { type: "image/png" }), "base.png");
    form.append("images", new Blob([new Uint8Array(pictureFor("sea", 300, 300))], { type: "image/png" }), "layer.png");
    const multipart = await send("/image/multi-edit", form);
    expect(decodePng(multipart.bytes)).toMatchObject({ width: 256, height: 256 });
    expect(Buffer.compare(multipart.bytes, json.bytes)).not.toBe(0);
  });

  it("/image/upscale: 2x or 4x (JSON or multipart), the old enhancer fields refused, 4x reduced to stay within 16 MP", async () => {
    const two = await send("/image/upscale", { image: b64 });
    expect(decodePng(two.bytes)).toMatchObject({ width: 512, height: 512 });
    expect(charges().at(-1)).toMatchObject({ amount: -0.02, kind: "upscale" });
    const form = new FormData();
    form.set("image", new Blob([new Uint8Array(png)], { type: "image/png" }), "a.png");
    form.set("scale", "4");
    expect(decodePng((await send("/image/upscale", form)).bytes)).toMatchObject({ width: 1024, height: 1024 });
    expect(charges().at(-1)).toMatchObject({ amount: -0.08 });
    expect((await send("/image/upscale", { image: b64, scale: 1 })).status).toBe(400);
    expect((await send("/image/upscale", { image: b64, enhance: true })).status).toBe(400);
    const big = pictureFor("wide", 1500, 1500).toString("base64");
    expect(decodePng((await send("/image/upscale", { image: big, scale: 4 })).bytes)).toMatchObject({ width: 3000, height: 3000 });
  });

  it("/image/background-remove: exactly one of image / image_url in JSON, an image file in multipart (no image_url); an RGBA PNG whose background is clear", async () => {
    const r = await send("/image/background-remove", { image: b64 });
    const out = decodePng(r.bytes);
    expect(out).toMatchObject({ width: 256, height: 256, colorType: 6 });
    // the corner's colour (the sky) is cut out; what differs from it (the hills) stays, colours unchanged
    const input = decodeEmulatorPng(png)!.rgb;
    const [r0, g0, b0] = [input[0]!, input[1]!, input[2]!];
    let clear = 0;
    for (let i = 0; i < 256 * 256; i++) {
      const px = out.raw.subarray(Math.floor(i / 256) * (256 * 4 + 1) + 1 + (i % 256) * 4);
      const far = Math.hypot(input[i * 3]! - r0, input[i * 3 + 1]! - g0, input[i * 3 + 2]! - b0) >= 48;
      expect([px[0], px[1], px[2], px[3]]).toEqual([input[i * 3], input[i * 3 + 1], input[i * 3 + 2], far ? 255 : 0]);
      if (!far) clear++;
    }
    expect(clear).toBeGreaterThan(1000);
    expect(clear).toBeLessThan(256 * 256 - 1000);
    expect((await send("/image/background-remove", { image: b64, image_url: "https://example.org/a.png" })).status).toBe(400);
    expect((await send("/image/background-remove", { image_url: "https://example.org/a.png" })).status).toBe(200);
    const form = new FormData();
    form.set("image", new Blob([new Uint8Array(png)], { type: "image/png" }), "a.png");
    expect(decodePng((await send("/image/background-remove", form)).bytes).colorType).toBe(6);
    form.set("image_url", "https://example.org/a.png");
    expect((await send("/image/background-remove", form)).status).toBe(400);
    expect(encodePng(1, 1, new Uint8Array([1, 2, 3, 4]), undefined, 4).length).toBeGreaterThan(0);
  });
});
