/**
 * Image and speech models in the published `ModelResponse` shape (openapi-subset.yaml): image models priced per
 * generation, TTS models per million input characters with their `voices`, `supported_formats` and
 * `default_format` (what POST /audio/speech checks a request against).
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
  if (model.type === "image") {
    spec.pricing = { generation: price };
    spec.constraints = { promptCharacterLimit: 7500, widthHeightDivisor: 8, steps: { default: 8, max: 8 } };
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
