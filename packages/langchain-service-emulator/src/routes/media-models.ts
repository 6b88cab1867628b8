/**
 * Media models in the published `ModelResponse` shape (openapi-subset.yaml): image models priced per generation,
 * TTS models per million input characters with their `voices`, `supported_formats` and `default_format` (what POST
 * /audio/speech checks a request against), video models with their constraints (durations, resolutions, aspect
 * ratios: what /video/queue checks), music models with the options /audio/queue checks, ASR models per audio
 * second, edit (inpaint) and upscale models.
 */
import type { MediaModel } from "../models/catalog.js";
import type { EmulatorContext } from "../types.js";

/** a fixed "release date" keeps the listing deterministic (as for the text models) */
const CREATED = 1_767_225_600;

export function mediaModelRecord(model: MediaModel, ctx: EmulatorContext): Record<string, unknown> {
  const price = { usd: model.priceUsd, diem: model.priceUsd };
  const spec: Record<string, unknown> = {
    name: model.name,
    description: `${model.name}: a deterministic ${model.type} model of the local ${ctx.names.brand} emulator`,
    beta: false,
    privacy: "private",
    offline: false,
    modelSource: "local-emulator",
    traits: model.traits ?? [],
  };
  const usd = (n: number) => ({ usd: n, diem: n });
  if (model.type === "image") {
    spec.pricing = { generation: price };
    spec.constraints = { promptCharacterLimit: 7500, widthHeightDivisor: 8, steps: { default: 8, max: 8 } };
  } else if (model.video) {
    const v = model.video;
    spec.pricing = { per_second: Object.fromEntries(Object.entries(v.perSecondUsd).map(([r, n]) => [r, usd(n)])) };
    spec.constraints = {
      aspect_ratios: v.aspectRatios,
      resolutions: v.resolutions,
      durations: v.durations,
      model_type: v.modelType,
      audio: true,
      audio_configurable: true,
      prompt_character_limit: 2500,
    };
  } else if (model.music) {
    const m = model.music;
    spec.pricing =
      m.perSecondUsd !== undefined
        ? { per_second: usd(m.perSecondUsd) }
        : { per_thousand_characters: usd(m.perThousandCharactersUsd ?? 0) };
    Object.assign(spec, {
      supports_lyrics: m.supportsLyrics,
      lyrics_required: false,
      supports_force_instrumental: m.forceInstrumental,
      supports_loop: m.loop,
      supports_lyrics_optimizer: false,
      supports_language_code: false,
      supports_speed: false,
      prompt_character_limit: m.promptCharacterLimit,
      min_prompt_length: m.minPromptLength,
      supported_formats: ["wav"],
      default_format: "wav",
      ...(m.minDuration !== undefined
        ? { min_duration: m.minDuration, max_duration: m.maxDuration, default_duration: m.defaultDuration }
        : {}),
      ...(model.voices ? { voices: model.voices, default_voice: model.voices[0] } : {}),
    });
  } else if (model.type === "asr") {
    spec.pricing = { per_audio_second: price };
  } else if (model.type === "inpaint") {
    spec.pricing = { generation: price };
    spec.constraints = {
      aspectRatios: ["auto", "1:1", "3:2", "16:9", "9:16", "2:3", "3:4", "4:3"],
      promptCharacterLimit: 32768,
      combineImages: true,
      maxInputImages: model.maxInputImages ?? 3,
    };
  } else if (model.type === "upscale") {
    spec.pricing = { upscale: { "2x": usd(model.upscaleUsd!["2x"]), "4x": usd(model.upscaleUsd!["4x"]) } };
  } else {
    spec.pricing = { input: price };
    spec.voices = model.voices ?? [];
    spec.supported_formats = model.formats ?? ["wav"];
    spec.default_format = (model.formats ?? ["wav"])[0];
    if (model.cloning) {
      spec.voice_cloning = { mode: "zero_shot", accepted_formats: model.cloning.acceptedFormats, min_sample_seconds: 5, retention_days: 7 };
    }
  }
  if (model.proOnly) spec.proOnly = true;
  return { id: model.id, object: "model", owned_by: `${ctx.names.brand}.example`, type: model.type, created: CREATED, model_spec: spec };
}
