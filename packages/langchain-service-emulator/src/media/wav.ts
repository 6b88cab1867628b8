/**
 * The emulator's deterministic "voice": text becomes a short melody (one soft sine note per word, its pitch
 * from the word's letters, a pause at punctuation), encoded as a real RIFF/WAVE file (PCM 16-bit mono) or as
 * the raw PCM. Same text, voice and speed: same bytes. It remembers what it said by the samples, so its own
 * speech transcribes back word for word (../routes/transcription.ts). Written by hand: a WAV header is 44 bytes.
 */
import { createHash } from "node:crypto";

export const SAMPLE_RATE = 24_000;
/** at most this many seconds of audio, whatever the text (the emulator's answers stay small) */
const MAX_SECONDS = 12;

interface Note {
  freq: number;
  seconds: number;
  /** the word this note speaks (a pause has none) */
  word?: string;
}

/** The notes of `text`: one per word (its pitch from its letters), a pause per punctuation mark. */
function notesOf(text: string, voice: string, speed: number): Note[] {
  const voiceHash = createHash("sha256").update(voice).digest();
  const base = 150 + (voiceHash[0]! % 120); // the voice's pitch, Hz
  const noteSeconds = 0.16 / speed;
  const pauseSeconds = 0.12 / speed;
  const notes: Note[] = [];
  for (const token of text.match(/[\p{L}\p{N}']+|[.,;:!?]/gu) ?? []) {
    if (/^[.,;:!?]$/.test(token)) {
      notes.push({ freq: 0, seconds: pauseSeconds });
      continue;
    }
    let h = 0;
    for (const ch of token.toLowerCase()) h = (h * 31 + ch.codePointAt(0)!) % 12;
    // a pentatonic step above the voice's pitch: pleasant, and different per word
    const step = [0, 2, 4, 7, 9, 12, 14, 16, 19, 21, 24, 26][h]!;
    notes.push({ freq: base * 2 ** (step / 12), seconds: noteSeconds * Math.min(2, 0.6 + token.length / 8), word: token });
  }
  if (notes.length === 0) notes.push({ freq: 0, seconds: pauseSeconds });
  return notes;
}

/** PCM 16-bit little-endian mono samples for `text`. */
export function speakPcm(text: string, voice: string, speed = 1): Buffer {
  const notes = notesOf(text, voice, speed);
  const total = Math.min(
    Math.round(MAX_SECONDS * SAMPLE_RATE),
    notes.reduce((n, note) => n + Math.round(note.seconds * SAMPLE_RATE), 0),
  );
  const pcm = Buffer.alloc(total * 2);
  let at = 0;
  for (const note of notes) {
    const length = Math.round(note.seconds * SAMPLE_RATE);
    for (let i = 0; i < length && at < total; i++, at++) {
      // a short fade in and out per note: no clicks
      const envelope = Math.min(1, i / 240, (length - i) / 480);
      const value = note.freq === 0 ? 0 : Math.sin((2 * Math.PI * note.freq * i) / SAMPLE_RATE) * 0.35 * envelope;
      pcm.writeInt16LE(Math.round(value * 32767), at * 2);
    }
  }
  rememberUtterance(pcm, text, notes);
  return pcm;
}

export interface SpokenWord {
  word: string;
  /** seconds */
  start: number;
  end: number;
}

/**
 * What the emulator's own voice said, by the samples it produced (most recent utterances first forgotten last):
 * the transcription route reads speech it made back word for word, with each word's note as its timing.
 */
const utterances = new Map<string, { text: string; words: SpokenWord[] }>();
const MAX_UTTERANCES = 512;

function pcmKey(pcm: Uint8Array): string {
  return createHash("sha256").update(pcm).digest("hex");
}

function rememberUtterance(pcm: Buffer, text: string, notes: Note[]): void {
  const words: SpokenWord[] = [];
  let t = 0;
  const limit = pcm.length / 2 / SAMPLE_RATE;
  for (const note of notes) {
    const length = Math.round(note.seconds * SAMPLE_RATE) / SAMPLE_RATE;
    if (note.word && t < limit) words.push({ word: note.word, start: round3(t), end: round3(Math.min(limit, t + length)) });
    t += length;
  }
  const key = pcmKey(pcm);
  utterances.delete(key);
  utterances.set(key, { text: text.trim(), words });
  if (utterances.size > MAX_UTTERANCES) utterances.delete(utterances.keys().next().value!);
}

function round3(n: number): number {
  return Math.round(n * 1000) / 1000;
}

/** The text and word timings the emulator spoke as these samples (16-bit mono at SAMPLE_RATE), if it did. */
export function recogniseUtterance(pcm: Uint8Array): { text: string; words: SpokenWord[] } | undefined {
  return utterances.get(pcmKey(pcm));
}

/** The samples of a PCM WAV file as 16-bit mono (first channel), its rate; undefined for any other file. */
export function decodeWav(bytes: Uint8Array): { pcm: Buffer; sampleRate: number } | undefined {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (b.length < 12 || b.toString("latin1", 0, 4) !== "RIFF" || b.toString("latin1", 8, 12) !== "WAVE") return undefined;
  let format: { channels: number; rate: number; bits: number } | undefined;
  for (let at = 12; at + 8 <= b.length; ) {
    const id = b.toString("latin1", at, at + 4);
    const size = b.readUInt32LE(at + 4);
    if (id === "fmt " && at + 24 <= b.length) {
      if (b.readUInt16LE(at + 8) !== 1) return undefined; // PCM only
      format = { channels: b.readUInt16LE(at + 10), rate: b.readUInt32LE(at + 12), bits: b.readUInt16LE(at + 22) };
    }
    if (id === "data") {
      if (!format || (format.bits !== 16 && format.bits !== 8) || format.channels < 1) return undefined;
      const data = b.subarray(at + 8, Math.min(b.length, at + 8 + size));
      const frame = (format.bits / 8) * format.channels;
      const frames = Math.floor(data.length / frame);
      const pcm = Buffer.alloc(frames * 2);
      for (let i = 0; i < frames; i++) {
        const v = format.bits === 16 ? data.readInt16LE(i * frame) : (data[i * frame]! - 128) << 8;
        pcm.writeInt16LE(v, i * 2);
      }
      return { pcm, sampleRate: format.rate };
    }
    at += 8 + size + (size % 2);
  }
  return undefined;
}

/** A RIFF/WAVE file around PCM 16-bit mono samples. */
export function encodeWav(pcm: Buffer, sampleRate = SAMPLE_RATE): Buffer {
  const header = Buffer.alloc(44);
  header.write("RIFF", 0, "ascii");
  header.writeUInt32LE(36 + pcm.length, 4);
  header.write("WAVE", 8, "ascii");
  header.write("fmt ", 12, "ascii");
  header.writeUInt32LE(16, 16); // fmt chunk size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2, 28); // byte rate
  header.writeUInt16LE(2, 32); // block align
  header.writeUInt16LE(16, 34); // bits per sample
  header.write("data", 36, "ascii");
  header.writeUInt32LE(pcm.length, 40);
  return Buffer.concat([header, pcm]);
}
