/**
 * The emulator's deterministic "voice": text becomes a short melody (one soft sine note per word, its pitch
 * from the word's letters, a pause at punctuation), encoded as a real RIFF/WAVE file (PCM 16-bit mono) or as
 * the raw PCM. Same text, voice and speed: same bytes. Written by hand: a WAV header is 44 bytes.
 */
import { createHash } from "node:crypto";

export const SAMPLE_RATE = 24_000;
/** at most this many seconds of audio, whatever the text (the emulator's answers stay small) */
const MAX_SECONDS = 12;

/** PCM 16-bit little-endian mono samples for `text`. */
export function speakPcm(text: string, voice: string, speed = 1): Buffer {
  const voiceHash = createHash("sha256").update(voice).digest();
  const base = 150 + (voiceHash[0]! % 120); // the voice's pitch, Hz
  const noteSeconds = 0.16 / speed;
  const pauseSeconds = 0.12 / speed;
  const notes: { freq: number; seconds: number }[] = [];
  for (const token of text.match(/[\p{L}\p{N}']+|[.,;:!?]/gu) ?? []) {
    if (/^[.,;:!?]$/.test(token)) {
      notes.push({ freq: 0, seconds: pauseSeconds });
      continue;
    }
    let h = 0;
    for (const ch of token.toLowerCase()) h = (h * 31 + ch.codePointAt(0)!) % 12;
    // a pentatonic step above the voice's pitch: pleasant, and different per word
    const step = [0, 2, 4, 7, 9, 12, 14, 16, 19, 21, 24, 26][h]!;
    notes.push({ freq: base * 2 ** (step / 12), seconds: noteSeconds * Math.min(2, 0.6 + token.length / 8) });
  }
  if (notes.length === 0) notes.push({ freq: 0, seconds: pauseSeconds });
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
  return pcm;
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
