/**
 * POST /audio/speech: text to a short real WAV (or raw PCM) from ../media/wav.ts, deterministic per text, voice
 * and speed; the body is checked against the published CreateSpeechRequestSchema (closed), the voice against the
 * model's voices (GET /models?type=tts lists them) or a handle this emulator minted, the format against the
 * model's `supported_formats`. POST /audio/voices: voice cloning from a multipart sample (`file`, `model`), as
 * published; it answers `{id: "vv_…", model}`, a handle `/audio/speech` then accepts with that model.
 * Charged from the ledger (speech per million input characters); paced in the `audio` bucket (spec part 8).
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { findMediaModel, type MediaModel } from "../models/catalog.js";
import { encodeWav, speakPcm } from "../media/wav.js";
import { EmulatorHttpError, type EmulatorContext, type EmulatorRequest, type RouteSpec } from "../types.js";
import { badRequest, parseBody, requestId } from "./strict-body.js";

/** the published TTS model ids (CreateSpeechRequestSchema.model) */
const PUBLISHED_TTS_MODELS = [
  "tts-kokoro",
  "tts-qwen3-0-6b",
  "tts-qwen3-1-7b",
  "tts-xai-v1",
  "tts-inworld-1-5-max",
  "tts-chatterbox-hd",
  "tts-orpheus",
  "tts-elevenlabs-turbo-v2-5",
  "tts-minimax-speech-02-hd",
  "tts-gemini-3-1-flash",
  "tts-gradium-v1",
] as const;
const CLONING_MODELS = ["tts-chatterbox-hd", "tts-minimax-speech-02-hd"] as const;
/** USD per cloned voice (the published price is dynamic) */
export const VOICE_CLONE_PRICE_USD = 0.02;

const speechSchema = z
  .object({
    input: z.string().min(1).max(4096),
    language: z.string().min(2).max(32).optional(),
    model: z.enum(PUBLISHED_TTS_MODELS).optional(),
    prompt: z.string().max(500).optional(),
    response_format: z.enum(["mp3", "opus", "aac", "flac", "wav", "pcm"]).optional(),
    speed: z.number().min(0.25).max(4).optional(),
    streaming: z.boolean().optional(),
    temperature: z.number().min(0).max(2).optional(),
    top_p: z.number().min(0).max(1).optional(),
    voice: z.string().max(512).optional(),
  })
  .strict();

/** voice handles minted by POST /audio/voices, per emulator: handle -> model id */
const clonedVoices = new WeakMap<EmulatorContext, Map<string, string>>();
function handlesOf(ctx: EmulatorContext): Map<string, string> {
  let map = clonedVoices.get(ctx);
  if (!map) clonedVoices.set(ctx, (map = new Map()));
  return map;
}

function speechModel(id: string): MediaModel {
  const model = findMediaModel(id, "tts");
  if (!model)
    throw badRequest(`Specified model not found: ${id}`, {
      _errors: [],
      model: { _errors: ["TTS model not served here; see GET /models?type=tts"] },
    });
  return model;
}

/** The sample's container, from its first bytes. */
function container(bytes: Uint8Array): string | undefined {
  const ascii = (from: number, to: number) => Buffer.from(bytes.subarray(from, to)).toString("latin1");
  if (ascii(0, 4) === "RIFF" && ascii(8, 12) === "WAVE") return "wav";
  if (ascii(0, 4) === "fLaC") return "flac";
  if (ascii(4, 8) === "ftyp") return "m4a";
  if (ascii(0, 3) === "ID3" || (bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0)) return "mp3";
  return undefined;
}

interface VoiceSample {
  model: (typeof CLONING_MODELS)[number];
  file: Uint8Array;
}
const samples = new WeakMap<EmulatorRequest, VoiceSample>();

async function voiceSample(req: EmulatorRequest): Promise<VoiceSample> {
  const known = samples.get(req);
  if (known) return known;
  const type = req.headers["content-type"] ?? "";
  if (!/^multipart\/form-data\b/i.test(type)) {
    throw new EmulatorHttpError(415, { error: "Invalid request content-type: expected multipart/form-data" });
  }
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
  for (const key of form.keys()) {
    if (key !== "file" && key !== "model") throw badRequest("Invalid request", { _errors: [`Unrecognized key: "${key}"`] });
  }
  const file = form.get("file");
  if (!file || typeof file === "string")
    throw badRequest("Invalid request", { _errors: [], file: { _errors: ["Required: the voice sample file"] } });
  const model = (form.get("model") ?? "tts-chatterbox-hd") as string;
  if (!(CLONING_MODELS as readonly string[]).includes(model)) {
    throw badRequest("Invalid request", { _errors: [], model: { _errors: [`Expected one of ${CLONING_MODELS.join(", ")}`] } });
  }
  const sample = { model: model as VoiceSample["model"], file: new Uint8Array(await file.arrayBuffer()) };
  samples.set(req, sample);
  return sample;
}

export const audioRoutes = {
  speech: {
    auth: "required",
    inference: true,
    resolveModel: (req) => ({ model: speechModel(parseBody(req, speechSchema).model ?? "tts-kokoro"), bucket: "audio" }),
    handler(req, ctx, caller) {
      const body = parseBody(req, speechSchema);
      const model = speechModel(body.model ?? "tts-kokoro");
      const voice = body.voice ?? "af_sky";
      const cloned = voice.startsWith("vv_") ? handlesOf(ctx).get(voice) : undefined;
      if (voice.startsWith("vv_") ? cloned !== model.id : !model.voices?.includes(voice)) {
        throw badRequest(`Voice "${voice}" is not available for model ${model.id}`, {
          _errors: [],
          voice: {
            _errors: [
              `Expected one of ${(model.voices ?? []).join(", ")}${model.cloning ? ", or a vv_ handle cloned for this model" : ""}`,
            ],
          },
        });
      }
      const formats = model.formats ?? ["wav"];
      const format = body.response_format ?? formats[0]!;
      if (!(formats as string[]).includes(format)) {
        throw badRequest(`Unsupported response_format "${format}" for ${model.id}`, {
          _errors: [],
          response_format: { _errors: [`Supported formats: ${formats.join(", ")}`] },
        });
      }
      const pcm = speakPcm(body.input, voice, body.speed ?? 1);
      if (caller.kind !== "anonymous") {
        ctx.ledger.charge(caller.account, (model.priceUsd * body.input.length) / 1e6, {
          kind: "speech",
          modelId: model.id,
          requestId: requestId("speech"),
        });
      }
      return format === "pcm"
        ? { status: 200, headers: { "content-type": "audio/pcm" }, body: pcm, meta: { modelId: model.id } }
        : { status: 200, headers: { "content-type": "audio/wav" }, body: encodeWav(pcm), meta: { modelId: model.id } };
    },
  },
  voices: {
    auth: "required",
    inference: true,
    async resolveModel(req) {
      const { model } = await voiceSample(req);
      const served = findMediaModel(model, "tts");
      if (!served) throw new EmulatorHttpError(403, { error: `Voice cloning with ${model} is not enabled for this account` });
      return { model: served, bucket: "audio" };
    },
    async handler(req, ctx, caller) {
      const sample = await voiceSample(req);
      const model = findMediaModel(sample.model, "tts")!;
      const kind = container(sample.file);
      if (!kind || !model.cloning?.acceptedFormats.includes(kind)) {
        throw badRequest(`The sample must be one of ${model.cloning?.acceptedFormats.join(", ")} for ${model.id}`, {
          _errors: [],
          file: { _errors: [kind ? `${kind} is not accepted by ${model.id}` : "Unrecognized audio container"] },
        });
      }
      const id = `vv_${createHash("sha256").update(sample.file).update(model.id).digest("hex").slice(0, 20)}`;
      handlesOf(ctx).set(id, model.id);
      if (caller.kind !== "anonymous")
        ctx.ledger.charge(caller.account, VOICE_CLONE_PRICE_USD, { kind: "voice-clone", modelId: model.id, requestId: requestId("voice") });
      return { status: 200, body: { id, model: model.id }, meta: { modelId: model.id } };
    },
  },
} satisfies Record<string, RouteSpec>;
