/**
 * POST /audio/transcriptions, as the live guide describes it: multipart only (a JSON body is 400 "No audio file
 * provided"), fields `file`, `model` (required: the documented default is never applied), `response_format`
 * (`json` | `text`), `timestamps` (`true` | `false`), `language`; any other field ignored. The file is checked by
 * extension or MIME type, then by its binary signature; billed per second of audio; silence is a 422, unbilled.
 *
 * What it hears: speech the emulator's own voice made (../media/wav.ts) comes back word for word with each word's
 * timing; another PCM WAV gets a syllable per voiced stretch (deterministic); other containers (it decodes only
 * WAV) a transcript saying so.
 */
import { findMediaModel, type MediaModel } from "../models/catalog.js";
import { decodeWav, recogniseUtterance, type SpokenWord } from "../media/wav.js";
import { AUDIO_MIME_TYPES, MAX_TRANSCRIPTION_BYTES, sniffAudio, type AudioContainer } from "langchain-service";
import { EmulatorHttpError, type EmulatorRequest, type RouteSpec } from "../types.js";
import { badRequest, requestId } from "./strict-body.js";

const EXTENSIONS: Record<string, AudioContainer> = {
  wav: "wav",
  wave: "wav",
  flac: "flac",
  m4a: "m4a",
  mp4: "m4a",
  aac: "aac",
  mp3: "mp3",
  ogg: "ogg",
  oga: "ogg",
  webm: "webm",
};

interface Upload {
  file: Uint8Array;
  container: AudioContainer;
  model: MediaModel;
  format: "json" | "text";
  timestamps: boolean;
  language?: string;
}
const uploads = new WeakMap<EmulatorRequest, Upload>();

/** The multipart upload, checked (parsed once: the model resolver and the handler share it). */
async function uploadOf(req: EmulatorRequest): Promise<Upload> {
  const known = uploads.get(req);
  if (known) return known;
  const type = req.headers["content-type"] ?? "";
  if (!/^multipart\/form-data\b/i.test(type))
    throw badRequest("No audio file provided", { _errors: ["Send multipart/form-data with a `file` part"] });
  let form: FormData;
  try {
    form = await new Request("http://emulator.invalid/", {
      method: "POST",
      headers: { "content-type": type },
      body: new Uint8Array(req.body),
    }).formData();
  } catch {
    throw badRequest("Invalid request", { _errors: ["Body is not valid multipart/form-data"] });
  }
  const file = form.get("file");
  if (!file || typeof file === "string")
    throw badRequest("No audio file provided", { _errors: [], file: { _errors: ["Required: a file part"] } });
  const modelId = form.get("model");
  if (typeof modelId !== "string" || !modelId) throw badRequest("model is required", { _errors: [], model: { _errors: ["Required"] } });
  const model = findMediaModel(modelId, "asr");
  if (!model) throw new EmulatorHttpError(404, { error: `Specified model not found: ${modelId}. See GET /models?type=asr.` });
  const format = form.get("response_format") ?? "json";
  if (format !== "json" && format !== "text")
    throw badRequest(`response_format must be json or text (got ${JSON.stringify(format)})`, {
      _errors: [],
      response_format: { _errors: ["Expected json | text"] },
    });
  const stamps = form.get("timestamps") ?? "false";
  if (stamps !== "true" && stamps !== "false")
    throw badRequest("timestamps must be true or false", { _errors: [], timestamps: { _errors: ["Expected true | false"] } });
  if (file.size > MAX_TRANSCRIPTION_BYTES)
    throw new EmulatorHttpError(413, { code: "PAYLOAD_TOO_LARGE", error: "File exceeds the maximum allowed size of 25 MB." });
  const ext = /\.([a-z0-9]+)$/i.exec(file.name ?? "")?.[1]?.toLowerCase();
  const byName = ext ? EXTENSIONS[ext] : undefined;
  const byMime = (Object.entries(AUDIO_MIME_TYPES) as [AudioContainer, string][]).find(([, mime]) => file.type === mime)?.[0];
  if (!byName && !byMime)
    throw badRequest(`Unsupported audio file type ${JSON.stringify(ext ?? file.type ?? "")}`, {
      _errors: [],
      file: { _errors: ["Accepted: wav, flac, m4a, aac, mp4, mp3, ogg, webm"] },
    });
  const bytes = new Uint8Array(await file.arrayBuffer());
  const container = sniffAudio(bytes);
  if (!container)
    throw badRequest("Unrecognized audio binary signature", {
      _errors: [],
      file: { _errors: ["The file's bytes are not audio of an accepted container"] },
    });
  const upload: Upload = {
    file: bytes,
    container,
    model,
    format,
    timestamps: stamps === "true",
    ...(typeof form.get("language") === "string" ? { language: form.get("language") as string } : {}),
  };
  uploads.set(req, upload);
  return upload;
}

const SYLLABLES = ["la", "da", "na", "ta", "ma", "ba", "ka", "ra", "sa", "pa", "fa", "ga"];

/** Voiced stretches of 16-bit mono PCM (20 ms frames over an energy threshold, gaps under 60 ms bridged) as syllables. */
function syllables(pcm: Buffer, rate: number): SpokenWord[] {
  const frame = Math.max(1, Math.round(rate * 0.02));
  const voiced: boolean[] = [];
  const zc: number[] = [];
  for (let at = 0; at + frame * 2 <= pcm.length; at += frame * 2) {
    let energy = 0;
    let crossings = 0;
    let last = 0;
    for (let i = 0; i < frame; i++) {
      const v = pcm.readInt16LE(at + i * 2);
      energy += v * v;
      if (v >= 0 !== last >= 0) crossings++;
      last = v;
    }
    voiced.push(Math.sqrt(energy / frame) > 650);
    zc.push(crossings);
  }
  const words: SpokenWord[] = [];
  for (let i = 0; i < voiced.length; ) {
    if (!voiced[i]) {
      i++;
      continue;
    }
    let j = i;
    let gap = 0;
    let crossings = 0;
    while (j < voiced.length && gap < 3) {
      gap = voiced[j] ? 0 : gap + 1;
      crossings += zc[j]!;
      j++;
    }
    const end = j - gap;
    words.push({
      word: SYLLABLES[(Math.round(crossings / (end - i)) + end - i) % SYLLABLES.length]!,
      start: (i * frame) / rate,
      end: (end * frame) / rate,
    });
    i = j;
  }
  return words;
}

function round3(n: number): number {
  return Math.round(n * 1000) / 1000;
}

/** What the emulator hears in an upload: text, word timings, duration (undefined for containers it cannot decode). */
function hear(upload: Upload): { text: string; words: SpokenWord[]; duration?: number } {
  if (upload.container !== "wav") {
    return { text: `(${upload.container} audio: the emulator transcribes WAV only)`, words: [] };
  }
  const wav = decodeWav(upload.file);
  if (!wav) throw new EmulatorHttpError(422, { error: "The provider could not decode the audio (only PCM WAV is decoded here)." });
  const duration = wav.pcm.length / 2 / wav.sampleRate;
  const own = recogniseUtterance(wav.pcm);
  if (own) return { text: own.text, words: own.words, duration };
  const words = syllables(wav.pcm, wav.sampleRate);
  if (words.length === 0) throw new EmulatorHttpError(422, { error: "The audio contains no speech the provider could transcribe." });
  const text = words.map((w) => w.word).join(" ");
  return { text: `${text[0]!.toUpperCase()}${text.slice(1)}.`, words, duration };
}

/** Timestamps of the granularities a model returns: words, sentence segments, characters spread over their word. */
function timestampsOf(model: MediaModel, text: string, words: SpokenWord[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const kinds = model.timestamps ?? [];
  if (kinds.includes("word")) out.word = words.map((w) => ({ word: w.word, start: round3(w.start), end: round3(w.end) }));
  if (kinds.includes("segment")) {
    const sentences =
      text
        .match(/[^.!?]+[.!?]*/g)
        ?.map((s) => s.trim())
        .filter(Boolean) ?? [];
    const segments: Record<string, unknown>[] = [];
    let w = 0;
    for (const sentence of sentences) {
      const count = sentence.match(/[\p{L}\p{N}']+/gu)?.length ?? 0;
      const span = words.slice(w, w + count);
      w += count;
      if (span.length) segments.push({ text: sentence, start: round3(span[0]!.start), end: round3(span.at(-1)!.end) });
    }
    out.segment = segments;
  }
  if (kinds.includes("char")) {
    out.char = words.flatMap((w) =>
      [...w.word].map((char, i, all) => ({
        char,
        start: round3(w.start + ((w.end - w.start) * i) / all.length),
        end: round3(w.start + ((w.end - w.start) * (i + 1)) / all.length),
      })),
    );
  }
  return out;
}

export const transcriptionRoutes = {
  transcriptions: {
    auth: "required",
    inference: true,
    resolveModel: async (req) => ({ model: (await uploadOf(req)).model, bucket: "audio" }),
    async handler(req, ctx, caller) {
      const upload = await uploadOf(req);
      const heard = hear(upload);
      // failed transcriptions are not charged: this runs once the answer is known
      if (caller.kind !== "anonymous") {
        const seconds = Math.max(1, Math.ceil(heard.duration ?? 1));
        ctx.ledger.charge(caller.account, upload.model.priceUsd * seconds, {
          kind: "transcription",
          modelId: upload.model.id,
          requestId: requestId("transcription"),
        });
      }
      if (upload.format === "text")
        return {
          status: 200,
          headers: { "content-type": "text/plain; charset=utf-8" },
          body: heard.text,
          meta: { modelId: upload.model.id },
        };
      return {
        status: 200,
        body: {
          text: heard.text,
          ...(heard.duration !== undefined ? { duration: round3(heard.duration) } : {}),
          ...(upload.timestamps ? { timestamps: timestampsOf(upload.model, heard.text, heard.words) } : {}),
        },
        meta: { modelId: upload.model.id },
      };
    },
  },
} satisfies Record<string, RouteSpec>;
