/**
 * What media bytes are, told from the bytes themselves (never from what was asked or what a header claims):
 * image signatures and PNG size, WAV duration, the audio containers the transcription route accepts, and video
 * containers. Pure functions: no I/O.
 */

export interface GeneratedImage {
  bytes: Uint8Array;
  /** told from the bytes (PNG, JPEG, WebP signatures), not from what was asked */
  mimeType: "image/png" | "image/jpeg" | "image/webp" | "application/octet-stream";
  extension: "png" | "jpg" | "webp" | "bin";
  width?: number;
  height?: number;
}

/** The few reads the sniffers need, over plain bytes (Buffer is Node's only). */
class Bytes {
  readonly #view: DataView;
  constructor(readonly bytes: Uint8Array) {
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  get length(): number {
    return this.bytes.length;
  }
  at(i: number): number | undefined {
    return this.bytes[i];
  }
  latin1(from: number, to: number): string {
    return String.fromCharCode(...this.bytes.subarray(from, to));
  }
  startsWith(prefix: readonly number[]): boolean {
    return this.bytes.length >= prefix.length && prefix.every((b, i) => this.bytes[i] === b);
  }
  uint32BE(at: number): number {
    return this.#view.getUint32(at, false);
  }
  uint32LE(at: number): number {
    return this.#view.getUint32(at, true);
  }
}

function buf(bytes: Uint8Array): Bytes {
  return new Bytes(bytes);
}

/** What an image's bytes are, and its size when the header tells it (PNG IHDR). */
export function sniffImage(bytes: Uint8Array): GeneratedImage {
  const b = buf(bytes);
  if (b.length >= 24 && b.startsWith([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) && b.latin1(12, 16) === "IHDR") {
    return { bytes, mimeType: "image/png", extension: "png", width: b.uint32BE(16), height: b.uint32BE(20) };
  }
  if (b.length >= 3 && b.at(0) === 0xff && b.at(1) === 0xd8 && b.at(2) === 0xff) return { bytes, mimeType: "image/jpeg", extension: "jpg" };
  if (b.length >= 12 && b.latin1(0, 4) === "RIFF" && b.latin1(8, 12) === "WEBP")
    return { bytes, mimeType: "image/webp", extension: "webp" };
  return { bytes, mimeType: "application/octet-stream", extension: "bin" };
}

/** The duration of a WAV file from its `fmt ` and `data` chunks, in seconds; undefined when it is not one. */
export function wavDurationSeconds(bytes: Uint8Array): number | undefined {
  const b = buf(bytes);
  if (b.length < 12 || b.latin1(0, 4) !== "RIFF" || b.latin1(8, 12) !== "WAVE") return undefined;
  let byteRate: number | undefined;
  for (let at = 12; at + 8 <= b.length; ) {
    const id = b.latin1(at, at + 4);
    const size = b.uint32LE(at + 4);
    if (id === "fmt " && at + 16 <= b.length) byteRate = b.uint32LE(at + 16);
    if (id === "data") {
      if (!byteRate) return undefined;
      // a streamed WAV may say 0 or 0xFFFFFFFF: then the bytes present are the data
      const dataBytes = size === 0 || size === 0xffffffff ? b.length - at - 8 : Math.min(size, b.length - at - 8);
      return dataBytes / byteRate;
    }
    at += 8 + size + (size % 2);
  }
  return undefined;
}

/** Audio containers the transcription route accepts (by extension and MIME, then by binary signature). */
export type AudioContainer = "wav" | "flac" | "mp3" | "ogg" | "webm" | "m4a" | "aac";

export const AUDIO_MIME_TYPES: Readonly<Record<AudioContainer, string>> = {
  wav: "audio/wav",
  flac: "audio/flac",
  mp3: "audio/mpeg",
  ogg: "audio/ogg",
  webm: "audio/webm",
  m4a: "audio/mp4",
  aac: "audio/aac",
};

/** The audio container of `bytes` from its signature; undefined for anything else (raw PCM, text, images). */
export function sniffAudio(bytes: Uint8Array): AudioContainer | undefined {
  const b = buf(bytes);
  const ascii = (from: number, to: number) => (b.length >= to ? b.latin1(from, to) : "");
  if (ascii(0, 4) === "RIFF" && ascii(8, 12) === "WAVE") return "wav";
  if (ascii(0, 4) === "fLaC") return "flac";
  if (ascii(0, 4) === "OggS") return "ogg";
  if (b.length >= 4 && b.uint32BE(0) === 0x1a45dfa3) return "webm";
  if (ascii(4, 8) === "ftyp") return "m4a";
  if (ascii(0, 3) === "ID3") return "mp3";
  // an MPEG frame sync: layer III is mp3, layer "00" (ADTS) is AAC
  if (b.length >= 2 && b.at(0) === 0xff && (b.at(1)! & 0xe0) === 0xe0) return (b.at(1)! & 0x06) === 0 ? "aac" : "mp3";
  return undefined;
}

/** A video container from its signature: ISO BMFF (`ftyp`: MP4, MOV) or Matroska/WebM (EBML). */
export function sniffVideo(
  bytes: Uint8Array,
): { mimeType: "video/mp4" | "video/quicktime" | "video/webm"; extension: "mp4" | "mov" | "webm" } | undefined {
  const b = buf(bytes);
  if (b.length >= 12 && b.latin1(4, 8) === "ftyp") {
    return b.latin1(8, 12) === "qt  " ? { mimeType: "video/quicktime", extension: "mov" } : { mimeType: "video/mp4", extension: "mp4" };
  }
  if (b.length >= 4 && b.uint32BE(0) === 0x1a45dfa3) return { mimeType: "video/webm", extension: "webm" };
  return undefined;
}

/** The extension of an audio content type or of the bytes (`wav`, `mp3`, …), `bin` when neither tells. */
export function audioExtension(contentType: string | undefined, bytes: Uint8Array): string {
  const sniffed = sniffAudio(bytes);
  if (sniffed) return sniffed;
  const t = (contentType ?? "").toLowerCase();
  if (t.includes("mpeg") || t.includes("mp3")) return "mp3";
  if (t.includes("wav")) return "wav";
  if (t.includes("flac")) return "flac";
  if (t.includes("ogg") || t.includes("opus")) return "ogg";
  return "bin";
}
