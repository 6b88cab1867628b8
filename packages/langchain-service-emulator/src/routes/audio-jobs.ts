/**
 * Asynchronous audio jobs (music, sound effects, long narration): POST /audio/quote (no credentials needed; a
 * closed body; `duration_seconds` only for models with duration metadata), /audio/queue (a closed body whose options
 * are refused when the model's spec says it lacks them; charged its quote; `{model, queue_id, status: "QUEUED"}`),
 * /audio/retrieve (the status, then a real WAV with `x-<brand>-audio-format`, or the job's error once it failed and
 * was refunded) and /audio/complete. Music is the prompt's melody looped to the duration; the voice model speaks
 * the prompt (and the transcription route reads it back). Queues are paced in the `audio` bucket.
 */
import { z } from "zod";
import { findMediaModel, type MediaModel } from "../models/catalog.js";
import { encodeWav, SAMPLE_RATE, speakPcm } from "../media/wav.js";
import { fundsOf, jobStore, shortOfQuote } from "../media/jobs.js";
import { EmulatorHttpError, type EmulatorContext, type RouteSpec } from "../types.js";
import { badRequest, parseBody } from "./strict-body.js";

const seconds = z.union([z.number().int().positive(), z.string().regex(/^\d+$/).transform(Number)]);
const quoteSchema = z
  .object({ model: z.string().min(1), duration_seconds: seconds.optional(), character_count: z.number().int().min(0).optional() })
  .strict();
const queueSchema = z
  .object({
    model: z.string().min(1),
    prompt: z.string(),
    lyrics_prompt: z.string().optional(),
    duration_seconds: seconds.optional(),
    force_instrumental: z.boolean().optional(),
    lyrics_optimizer: z.boolean().optional(),
    loop: z.boolean().optional(),
    voice: z.string().optional(),
    language_code: z.string().optional(),
    speed: z.number().optional(),
  })
  .strict();
const refSchema = z
  .object({ model: z.string().min(1), queue_id: z.string().min(1), delete_media_on_completion: z.boolean().optional() })
  .strict();
const completeSchema = z.object({ model: z.string().min(1), queue_id: z.string().min(1) }).strict();

function audioModel(id: string): MediaModel {
  const model = findMediaModel(id, "music");
  if (!model) throw new EmulatorHttpError(404, { error: `Specified model not found: ${id}. See GET /models?type=music.` });
  return model;
}

const unsupported = (field: string, model: MediaModel) =>
  badRequest(`${field} is not supported by ${model.id}`, {
    _errors: [],
    [field]: { _errors: [`Not supported by ${model.id}; see its model_spec`] },
  });

/** The duration a job renders (checked against the model's range), or undefined for a model without durations. */
function durationOf(model: MediaModel, asked: number | undefined): number | undefined {
  const m = model.music!;
  if (m.minDuration === undefined) {
    if (asked !== undefined) throw unsupported("duration_seconds", model);
    return undefined;
  }
  const d = asked ?? m.defaultDuration!;
  if (d < m.minDuration || d > m.maxDuration!) {
    throw badRequest(`duration_seconds must be ${m.minDuration} to ${m.maxDuration} for ${model.id}`, {
      _errors: [],
      duration_seconds: { _errors: [`${m.minDuration}..${m.maxDuration}`] },
    });
  }
  return d;
}

function priceOf(model: MediaModel, duration: number | undefined, characters: number): number {
  const m = model.music!;
  const usd = m.perSecondUsd !== undefined ? m.perSecondUsd * (duration ?? 0) : ((m.perThousandCharactersUsd ?? 0) * characters) / 1000;
  return Math.round(usd * 1e6) / 1e6;
}

/** The job's WAV: the prompt spoken (voice models), else its melody looped to the duration. */
function renderer(ctx: EmulatorContext, model: MediaModel, prompt: string, voice: string, duration: number | undefined) {
  return () => {
    let pcm: Buffer;
    if (model.music!.speaks) pcm = speakPcm(prompt, voice);
    else {
      const phrase = speakPcm(prompt, `music:${model.id}`);
      const want = Math.round((duration ?? 10) * SAMPLE_RATE) * 2;
      pcm = Buffer.alloc(want);
      for (let at = 0; at < want; at += phrase.length) phrase.copy(pcm, at, 0, Math.min(phrase.length, want - at));
    }
    const p = ctx.names.headerPrefix;
    return {
      bytes: encodeWav(pcm),
      contentType: "audio/wav",
      headers: { [`${p}audio-format`]: "wav", [`${p}model-id`]: model.id, [`${p}model-name`]: model.name, [`${p}inference-time`]: "0.01" },
    };
  };
}

export const audioJobRoutes = {
  quote: {
    auth: "optional",
    handler(req) {
      const body = parseBody(req, quoteSchema);
      const model = audioModel(body.model);
      if (body.character_count !== undefined && body.character_count > model.music!.promptCharacterLimit) {
        throw badRequest(`character_count is at most ${model.music!.promptCharacterLimit}`, {
          _errors: [],
          character_count: { _errors: ["Too large"] },
        });
      }
      if (model.music!.perThousandCharactersUsd !== undefined && body.character_count === undefined) {
        throw badRequest("character_count is required for this model", {
          _errors: [],
          character_count: { _errors: ["Required: the model is priced per thousand characters"] },
        });
      }
      return { status: 200, body: { quote: priceOf(model, durationOf(model, body.duration_seconds), body.character_count ?? 0) } };
    },
  },
  queue: {
    auth: "required",
    inference: true,
    resolveModel: (req) => ({ model: audioModel(parseBody(req, queueSchema).model), bucket: "audio" }),
    handler(req, ctx, caller) {
      const body = parseBody(req, queueSchema);
      const model = audioModel(body.model);
      const m = model.music!;
      const prompt = body.prompt.trim();
      if (prompt.length < m.minPromptLength || prompt.length > m.promptCharacterLimit) {
        throw badRequest(`prompt must be ${m.minPromptLength} to ${m.promptCharacterLimit} characters`, {
          _errors: [],
          prompt: { _errors: ["Length out of range"] },
        });
      }
      if (body.lyrics_prompt !== undefined && !m.supportsLyrics) throw unsupported("lyrics_prompt", model);
      if (body.lyrics_optimizer !== undefined) throw unsupported("lyrics_optimizer", model);
      if (body.force_instrumental !== undefined && !m.forceInstrumental) throw unsupported("force_instrumental", model);
      if (body.loop !== undefined && !m.loop) throw unsupported("loop", model);
      if (body.language_code !== undefined) throw unsupported("language_code", model);
      if (body.speed !== undefined) throw unsupported("speed", model);
      if (body.voice !== undefined && !model.voices?.includes(body.voice)) {
        throw new EmulatorHttpError(400, {
          error: `Voice "${body.voice}" is not available for ${model.id}`,
          details: { supported_voices: model.voices ?? [] },
        });
      }
      const duration = durationOf(model, body.duration_seconds);
      const quote = priceOf(model, duration, prompt.length);
      if (caller.kind === "anonymous") throw new EmulatorHttpError(401, { error: "Authentication failed" });
      if (fundsOf(ctx, caller.account) < quote) throw shortOfQuote(ctx, req, caller.account, quote);
      const voice = body.voice ?? model.voices?.[0] ?? "af_sky";
      const job = jobStore(ctx).queue({
        kind: "audio",
        model,
        account: caller.account,
        quoteUsd: quote,
        prompt,
        render: renderer(ctx, model, prompt, voice, duration),
      });
      return { status: 200, body: { model: model.id, queue_id: job.id, status: "QUEUED" }, meta: { modelId: model.id } };
    },
  },
  retrieve: {
    auth: "required",
    handler(req, ctx, caller) {
      const body = parseBody(req, refSchema);
      const store = jobStore(ctx);
      const job = store.find(body.queue_id, "audio", body.model, caller);
      const state = store.advance(job);
      if (state === "processing") return { status: 200, body: store.processing(job) };
      if (state === "failed") return { status: job.failure!.status, body: job.failure!.body };
      const media = store.media(job);
      if (body.delete_media_on_completion) store.delete(job);
      return { status: 200, headers: { "content-type": media.contentType, ...media.headers }, body: media.bytes };
    },
  },
  complete: {
    auth: "required",
    handler(req, ctx, caller) {
      const body = parseBody(req, completeSchema);
      const store = jobStore(ctx);
      const job = store.find(body.queue_id, "audio", body.model, caller);
      store.delete(job);
      return { status: 200, body: { success: true } };
    },
  },
} satisfies Record<string, RouteSpec>;
