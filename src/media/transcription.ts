/**
 * `POST /audio/transcriptions`: speech to text, OpenAI-compatible multipart (`file`, `model`, `response_format`,
 * `timestamps`, `language`), billed per second of audio. The audio is read and checked here first (a path, bytes
 * or a stream; at most 25 MB; a container the service accepts, told from its bytes), so a bad upload is a
 * ValidationError before any request. Only `json` and `text` exist (no `verbose_json`, `srt`, `vtt`).
 */
import { z } from "zod";
import { ResponseFormatError, ValidationError } from "../http/errors.js";
import type { ServiceResponseHeaders } from "../http/headers.js";
import { checkArgs, parseWith, type ServiceApi } from "../api/request.js";
import { readMediaInput, type MediaInput } from "./input.js";
import { AUDIO_MIME_TYPES, sniffAudio } from "./sniff.js";

/** The service's default (and the only model the emulator and the live list both have from the start). */
export const DEFAULT_TRANSCRIPTION_MODEL = "nvidia/parakeet-tdt-0.6b-v3";
/** the service's cap on an upload */
export const MAX_TRANSCRIPTION_BYTES = 25 * 1024 * 1024;

export interface TranscribeOptions {
  /** default `nvidia/parakeet-tdt-0.6b-v3` (sent always: the service's own default is never applied) */
  model?: string;
  /** `json` (default: text, duration, timestamps) or `text` (the transcript only) */
  responseFormat?: "json" | "text";
  /** add word/segment/char timings (which ones depends on the model); json only */
  timestamps?: boolean;
  /** ISO 639-1 hint (`en`, `ja`); ignored by models that detect the language */
  language?: string;
  /** the file name sent (default: the path's, else `audio.<container>`) */
  filename?: string;
  signal?: AbortSignal;
}

export interface TimedWord {
  word: string;
  start: number;
  end: number;
}
export interface TimedSegment {
  text: string;
  start: number;
  end: number;
}
export interface TimedChar {
  char: string;
  start: number;
  end: number;
}

export interface TranscriptionResult {
  text: string;
  /** seconds of audio, when the service says */
  durationSeconds?: number;
  /** seconds; the arrays present depend on the model */
  timestamps?: { word?: TimedWord[]; segment?: TimedSegment[]; char?: TimedChar[] };
  model: string;
  headers: ServiceResponseHeaders;
}

const optionsSchema = z
  .object({
    model: z.string().min(1).optional(),
    responseFormat: z.enum(["json", "text"]).optional(),
    timestamps: z.boolean().optional(),
    language: z
      .string()
      .regex(/^[a-z]{2,3}(-[A-Za-z]{2,4})?$/, "language is an ISO 639-1 code such as en")
      .optional(),
    filename: z
      .string()
      .min(1)
      .max(255)
      .regex(/^[^/\\\0]+$/, "filename is a bare file name")
      .optional(),
    signal: z.instanceof(AbortSignal).optional(),
  })
  .strict()
  .refine((o) => !(o.timestamps && o.responseFormat === "text"), {
    message: "timestamps come only with responseFormat json",
    path: ["timestamps"],
  });

const span = { start: z.number(), end: z.number() };
const responseSchema = z
  .object({
    text: z.string(),
    duration: z.number().optional(),
    timestamps: z
      .object({
        word: z.array(z.object({ word: z.string(), ...span }).passthrough()).optional(),
        segment: z.array(z.object({ text: z.string(), ...span }).passthrough()).optional(),
        char: z.array(z.object({ char: z.string(), ...span }).passthrough()).optional(),
      })
      .passthrough()
      .optional(),
  })
  .passthrough();

/** POST /audio/transcriptions: the transcript of `audio` (a file path, bytes, a Blob or a stream). */
export async function transcribe(client: ServiceApi, audio: MediaInput, options: TranscribeOptions = {}): Promise<TranscriptionResult> {
  const o = checkArgs(optionsSchema, options, "transcription options");
  const { bytes, filename } = await readMediaInput(audio, "audio", MAX_TRANSCRIPTION_BYTES);
  const container = sniffAudio(bytes);
  if (!container) {
    throw new ValidationError("audio is not in a container the service accepts (wav, flac, mp3, ogg, webm, m4a, aac), told from its bytes");
  }
  const model = o.model ?? DEFAULT_TRANSCRIPTION_MODEL;
  const name = o.filename ?? (filename && /\.[a-z0-9]{2,5}$/i.test(filename) ? filename : `audio.${container}`);
  const form = new FormData();
  form.set("file", new Blob([new Uint8Array(bytes)], { type: AUDIO_MIME_TYPES[container] }), name);
  form.set("model", model);
  form.set("response_format", o.responseFormat ?? "json");
  if (o.timestamps !== undefined) form.set("timestamps", String(o.timestamps));
  if (o.language) form.set("language", o.language);
  const text = o.responseFormat === "text";
  const res = await client.request("/audio/transcriptions", {
    method: "POST",
    body: form,
    headers: { accept: text ? "text/plain, application/json" : "application/json" },
    signal: o.signal,
    service: { model, modelType: "audio" },
  });
  if (text) {
    if (res.data !== undefined && typeof res.data !== "string") {
      throw new ResponseFormatError("/audio/transcriptions answered JSON where text was asked", { body: res.data, headers: res.headers });
    }
    return { text: res.data ?? "", model, headers: res.headers };
  }
  const data = parseWith(responseSchema, res.data, "/audio/transcriptions", res.headers);
  const stamps = data.timestamps as TranscriptionResult["timestamps"] | undefined;
  return {
    text: data.text,
    ...(data.duration !== undefined ? { durationSeconds: data.duration } : {}),
    ...(stamps ? { timestamps: stamps } : {}),
    model,
    headers: res.headers,
  };
}
