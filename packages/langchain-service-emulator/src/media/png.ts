/**
 * A minimal PNG encoder (8-bit RGB or RGBA, no interlace, filter 0 on every row, zlib from node:zlib, CRC-32 by
 * hand), its decoder for the images the edit routes receive (8-bit grey, RGB and their alpha forms, every row
 * filter), and the emulator's deterministic "image model": a picture drawn from the prompt's hash (sky gradient, a
 * sun, hills, a few stars), so the same prompt always gives the same bytes and a person can open the file.
 *
 * Written by hand: no kept dependency encodes or decodes PNG, and the format needs only signature + IHDR + IDAT +
 * IEND and five row filters.
 */
import { createHash } from "node:crypto";
import { deflateSync, inflateSync } from "node:zlib";

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

let crcTable: Uint32Array | undefined;
/** CRC-32 (ISO 3309, the polynomial PNG chunks use). */
export function crc32(data: Uint8Array, crc = 0xffffffff): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  for (let i = 0; i < data.length; i++) crc = crcTable[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "ascii");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** Encodes `rgb` (width*height*3 bytes, rows top to bottom; or RGBA with `channels` 4) as a PNG file. */
export function encodePng(width: number, height: number, rgb: Uint8Array, text?: Record<string, string>, channels: 3 | 4 = 3): Buffer {
  if (rgb.length !== width * height * channels) throw new RangeError(`pixels must hold width*height*${channels} bytes`);
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = channels === 4 ? 6 : 2; // colour type: truecolour (with alpha)
  // compression 0, filter 0, interlace 0
  const stride = width * channels;
  const raw = Buffer.alloc((stride + 1) * height);
  for (let y = 0; y < height; y++) {
    raw[y * (stride + 1)] = 0; // filter: none
    Buffer.from(rgb.buffer, rgb.byteOffset + y * stride, stride).copy(raw, y * (stride + 1) + 1);
  }
  const texts = Object.entries(text ?? {}).map(([k, v]) =>
    chunk("tEXt", Buffer.from(`${k}\0${v.replace(/[^\x20-\x7e]/g, "?").slice(0, 500)}`, "latin1")),
  );
  return Buffer.concat([SIGNATURE, chunk("IHDR", ihdr), ...texts, chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}

/**
 * Decodes a PNG into RGB pixels (alpha dropped): 8-bit grey, grey+alpha, RGB or RGBA, not interlaced. Undefined for
 * anything else (palette, 16-bit, interlaced, not a PNG, a broken stream): the caller then has no pixels to use.
 */
export function decodePng(bytes: Uint8Array): { width: number; height: number; rgb: Uint8Array } | undefined {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (b.length < 33 || !b.subarray(0, 8).equals(SIGNATURE)) return undefined;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  for (let at = 8; at + 12 <= b.length; ) {
    const length = b.readUInt32BE(at);
    const type = b.toString("latin1", at + 4, at + 8);
    if (at + 12 + length > b.length) return undefined;
    const data = b.subarray(at + 8, at + 8 + length);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      channels = ({ 0: 1, 2: 3, 4: 2, 6: 4 } as Record<number, number>)[data[9]!] ?? 0;
      if (data[8] !== 8 || data[12] !== 0 || !channels || width === 0 || height === 0 || width * height > 40_000_000) return undefined;
    } else if (type === "IDAT") idat.push(data);
    else if (type === "IEND") break;
    at += 12 + length;
  }
  if (!channels) return undefined;
  let raw: Buffer;
  try {
    raw = inflateSync(Buffer.concat(idat));
  } catch {
    return undefined;
  }
  const stride = width * channels;
  if (raw.length < (stride + 1) * height) return undefined;
  const px = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const row = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? px[y * stride + i - channels]! : 0;
      const up = y > 0 ? px[(y - 1) * stride + i]! : 0;
      const c = y > 0 && i >= channels ? px[(y - 1) * stride + i - channels]! : 0;
      let v = row[i]!;
      if (filter === 1) v += a;
      else if (filter === 2) v += up;
      else if (filter === 3) v += (a + up) >> 1;
      else if (filter === 4) {
        const p = a + up - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - up);
        const pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? up : c;
      } else if (filter !== 0) return undefined;
      px[y * stride + i] = v & 0xff;
    }
  }
  const rgb = new Uint8Array(width * height * 3);
  for (let i = 0; i < width * height; i++) {
    const grey = channels <= 2;
    rgb[i * 3] = px[i * channels]!;
    rgb[i * 3 + 1] = px[i * channels + (grey ? 0 : 1)]!;
    rgb[i * 3 + 2] = px[i * channels + (grey ? 0 : 2)]!;
  }
  return { width, height, rgb };
}

/** Deterministic bytes from a seed string (SHA-256 in counter mode). */
function seededBytes(seed: string, n: number): Buffer {
  const out: Buffer[] = [];
  for (let i = 0; out.length * 32 < n; i++) out.push(createHash("sha256").update(`${seed}#${i}`).digest());
  return Buffer.concat(out).subarray(0, n);
}

function hsl(h: number, s: number, l: number): [number, number, number] {
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => {
    const k = (n + h / 30) % 12;
    return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [f(0), f(8), f(4)];
}

/**
 * Draws the prompt's picture: a sky whose hue comes from the hash, a sun (or moon at "night"), two ranges of
 * hills, and stars. Words steer it a little ("night", "sunset", "sea"/"ocean") so a picture fits its prompt.
 */
export function drawPicture(prompt: string, width: number, height: number, seed = 0): Uint8Array {
  const r = seededBytes(`${prompt}\u0000${seed}`, 64);
  const lower = prompt.toLowerCase();
  const night = /\b(night|moon|stars?|dark)\b/.test(lower);
  const sunset = /\b(sunset|sunrise|dusk|dawn|evening)\b/.test(lower);
  const sea = /\b(sea|ocean|lake|water|beach)\b/.test(lower);
  const baseHue = night ? 230 + (r[0]! % 30) : sunset ? 10 + (r[0]! % 30) : 190 + (r[0]! % 40);
  const top = hsl(baseHue, 0.6, night ? 0.12 : 0.45);
  const bottom = hsl((baseHue + (sunset ? 30 : 10)) % 360, 0.7, night ? 0.25 : 0.8);
  const hillHue = sea ? 205 : 90 + (r[1]! % 60);
  const far = hsl(hillHue, 0.35, night ? 0.18 : 0.45);
  const near = hsl((hillHue + 20) % 360, 0.45, night ? 0.1 : 0.3);
  const sun = night ? ([235, 235, 210] as const) : sunset ? ([255, 140, 60] as const) : ([255, 220, 90] as const);
  const sunX = width * (0.2 + (r[2]! / 255) * 0.6);
  const sunY = height * (0.18 + (r[3]! / 255) * 0.2);
  const sunR = Math.max(3, Math.min(width, height) * (0.06 + (r[4]! / 255) * 0.05));
  const farPhase = (r[5]! / 255) * Math.PI * 2;
  const nearPhase = (r[6]! / 255) * Math.PI * 2;
  const stars = new Set<number>();
  if (night) for (let i = 0; i < 24; i++) stars.add(((r[(7 + i) % 64]! * 131 + i * 977) % (width * Math.floor(height / 2))) | 0);

  const out = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    const t = y / Math.max(1, height - 1);
    const farLine = height * (0.62 + 0.08 * Math.sin(farPhase));
    for (let x = 0; x < width; x++) {
      let c: readonly [number, number, number] = [
        Math.round(top[0] + (bottom[0] - top[0]) * t),
        Math.round(top[1] + (bottom[1] - top[1]) * t),
        Math.round(top[2] + (bottom[2] - top[2]) * t),
      ];
      if (stars.has(y * width + x)) c = [255, 255, 240];
      const dx = x - sunX;
      const dy = y - sunY;
      if (dx * dx + dy * dy <= sunR * sunR) c = sun;
      const farY = farLine + height * 0.06 * Math.sin((x / width) * Math.PI * 2.2 + farPhase);
      const nearY = height * (0.78 + 0.06 * Math.sin((x / width) * Math.PI * 3.1 + nearPhase));
      if (y >= farY) c = far;
      if (y >= nearY) c = sea ? hsl(205, 0.6, night ? 0.15 : 0.4 + 0.05 * Math.sin(x / 3 + y)) : near;
      const i = (y * width + x) * 3;
      out[i] = c[0];
      out[i + 1] = c[1];
      out[i + 2] = c[2];
    }
  }
  return out;
}

/** The emulator's image: `prompt` drawn at `width`×`height` as PNG bytes (same prompt and seed, same bytes). */
export function pictureFor(prompt: string, width: number, height: number, seed = 0): Buffer {
  return encodePng(width, height, drawPicture(prompt, width, height, seed), { Description: prompt, Software: "service emulator" });
}
