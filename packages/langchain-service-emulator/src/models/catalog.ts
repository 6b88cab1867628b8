/**
 * The emulator's model catalog: a handful of deterministic "models" covering every tier and behaviour the
 * client must handle (reasoning with signed details, legacy think tags, deprecation, Pro-only, and models that
 * lack a capability: `emu-legacy` takes no response schema, `emu-basic` has no function calling, response schema,
 * vision, reasoning or logprobs; only `emu-m`, `emu-l` and `emu-pro` see images, hear audio and watch video), and
 * what live records say of availability: `emu-offline` is offline (503), `emu-regional` is served only in a
 * region no caller is in (403), `emu-sunset` is deprecated with `emu-s` as its replacement, `emu-o-reasoner` takes
 * three reasoning efforts and refuses `stop`, `seed`, `n > 1` and penalties as OpenAI reasoning models do.
 * Ids are part of the wiring contract: tests, the demo and the server rely on them.
 */

export type ModelTier = "XS" | "S" | "M" | "L";

/** `model_spec.capabilities` as published; the live service gates requests on them (./capabilities.ts). */
export interface ModelCapabilities {
  supportsFunctionCalling: boolean;
  supportsReasoning: boolean;
  supportsWebSearch: boolean;
  supportsVision: boolean;
  supportsAudioInput: boolean;
  supportsVideoInput: boolean;
  supportsResponseSchema: boolean;
  supportsLogProbs: boolean;
  supportsE2EE: boolean;
}

export interface EmulatedModel {
  id: string;
  name: string;
  tier: ModelTier;
  /** backend that "handled" inference (x-<brand>-model-router) */
  router: string;
  proOnly?: boolean;
  /** `replacementModelId`: the record's suggested successor; `autoRemap`: the service serves that one instead */
  deprecated?: { warning: string; date: string; replacementModelId?: string; autoRemap?: boolean };
  /** `model_spec.offline`: listed, but every call is a 503 (live) */
  offline?: boolean;
  /** `model_spec.regionRestrictions`: every caller of the emulator is outside them, so a 403 (live) */
  regionRestrictions?: string[];
  /** `capabilities.reasoningEffortOptions` (default: four for a `details` reasoner, none otherwise); others are a 400 */
  reasoningEffortOptions?: string[];
  /** refuses `stop`, `seed`, `n` ≠ 1 and non-zero penalties with a 400, as OpenAI reasoning models do (live) */
  refusesSamplingFields?: boolean;
  /**
   * How the model exposes its thinking: "details" = reasoning_content + signed reasoning_details + a
   * `thought_signature` on the message,
   * "content" = reasoning_content only, "think-tags" = legacy `<think>...</think>` inside content.
   */
  reasoning?: "details" | "content" | "think-tags";
  capabilities: ModelCapabilities;
  /** USD per 1M tokens */
  pricing: { input: number; output: number; cache_input?: number };
  contextTokens: number;
  maxCompletionTokens: number;
}

const BASE_CAPABILITIES: ModelCapabilities = {
  supportsFunctionCalling: true,
  supportsReasoning: false,
  supportsWebSearch: true,
  supportsVision: false,
  supportsAudioInput: false,
  supportsVideoInput: false,
  supportsResponseSchema: true,
  supportsLogProbs: true,
  supportsE2EE: false,
};

function caps(overrides: Partial<ModelCapabilities> = {}): ModelCapabilities {
  return { ...BASE_CAPABILITIES, ...overrides };
}

export const MODELS: EmulatedModel[] = [
  {
    id: "emu-xs",
    name: "Emulator XS",
    tier: "XS",
    router: "emu-router-small",
    capabilities: caps({ supportsE2EE: true }),
    pricing: { input: 0.05, output: 0.15, cache_input: 0.01 },
    contextTokens: 32_768,
    maxCompletionTokens: 8_192,
  },
  {
    id: "emu-s",
    name: "Emulator S",
    tier: "S",
    router: "emu-router-small",
    capabilities: caps(),
    pricing: { input: 0.15, output: 0.6, cache_input: 0.03 },
    contextTokens: 65_536,
    maxCompletionTokens: 16_384,
  },
  {
    id: "emu-m",
    name: "Emulator M",
    tier: "M",
    router: "emu-router-medium",
    capabilities: caps({ supportsVision: true, supportsAudioInput: true, supportsVideoInput: true }),
    pricing: { input: 0.5, output: 2, cache_input: 0.1 },
    contextTokens: 131_072,
    maxCompletionTokens: 32_768,
  },
  {
    id: "emu-l",
    name: "Emulator L",
    tier: "L",
    router: "emu-router-large",
    capabilities: caps({ supportsVision: true, supportsAudioInput: true, supportsVideoInput: true }),
    pricing: { input: 2, output: 8, cache_input: 0.5 },
    contextTokens: 200_000,
    maxCompletionTokens: 65_536,
  },
  {
    id: "emu-reasoner",
    name: "Emulator Reasoner",
    tier: "M",
    router: "emu-router-medium",
    reasoning: "details",
    capabilities: caps({ supportsReasoning: true }),
    pricing: { input: 0.6, output: 2.4, cache_input: 0.12 },
    contextTokens: 131_072,
    maxCompletionTokens: 32_768,
  },
  {
    id: "emu-thinker",
    name: "Emulator Thinker (think tags)",
    tier: "S",
    router: "emu-router-small",
    reasoning: "think-tags",
    capabilities: caps({ supportsReasoning: true }),
    pricing: { input: 0.2, output: 0.8 },
    contextTokens: 65_536,
    maxCompletionTokens: 16_384,
  },
  {
    id: "emu-legacy",
    name: "Emulator Legacy",
    tier: "S",
    router: "emu-router-small",
    deprecated: {
      warning: "emu-legacy is deprecated and will be removed; use emu-s instead.",
      date: "2030-01-01T00:00:00.000Z",
    },
    capabilities: caps({ supportsWebSearch: false, supportsResponseSchema: false }),
    pricing: { input: 0.1, output: 0.4 },
    contextTokens: 32_768,
    maxCompletionTokens: 4_096,
  },
  {
    id: "emu-basic",
    name: "Emulator Basic (text only)",
    tier: "XS",
    router: "emu-router-small",
    capabilities: caps({ supportsFunctionCalling: false, supportsResponseSchema: false, supportsLogProbs: false }),
    pricing: { input: 0.02, output: 0.06 },
    contextTokens: 16_384,
    maxCompletionTokens: 4_096,
  },
  {
    id: "emu-pro",
    name: "Emulator Pro",
    tier: "L",
    router: "emu-router-large",
    proOnly: true,
    capabilities: caps({ supportsVision: true, supportsAudioInput: true, supportsVideoInput: true, supportsE2EE: true }),
    pricing: { input: 3, output: 15, cache_input: 0.3 },
    contextTokens: 200_000,
    maxCompletionTokens: 65_536,
  },
  {
    id: "emu-offline",
    name: "Emulator Offline",
    tier: "S",
    router: "emu-router-small",
    offline: true,
    capabilities: caps(),
    pricing: { input: 0.15, output: 0.6 },
    contextTokens: 65_536,
    maxCompletionTokens: 16_384,
  },
  {
    id: "emu-regional",
    name: "Emulator Regional",
    tier: "S",
    router: "emu-router-small",
    // "ZZ" is a user-assigned code: no caller is in it
    regionRestrictions: ["ZZ"],
    capabilities: caps(),
    pricing: { input: 0.15, output: 0.6 },
    contextTokens: 65_536,
    maxCompletionTokens: 16_384,
  },
  {
    id: "emu-sunset",
    name: "Emulator Sunset",
    tier: "S",
    router: "emu-router-small",
    deprecated: {
      warning: "emu-sunset is deprecated and will be removed; use emu-s instead.",
      date: "2030-06-01T00:00:00.000Z",
      replacementModelId: "emu-s",
      autoRemap: false,
    },
    capabilities: caps(),
    pricing: { input: 0.15, output: 0.6 },
    contextTokens: 65_536,
    maxCompletionTokens: 16_384,
  },
  {
    id: "emu-o-reasoner",
    name: "Emulator O-Reasoner (OpenAI-style)",
    tier: "M",
    router: "emu-router-medium",
    reasoning: "content",
    reasoningEffortOptions: ["low", "medium", "high"],
    refusesSamplingFields: true,
    capabilities: caps({ supportsReasoning: true }),
    pricing: { input: 1, output: 4 },
    contextTokens: 131_072,
    maxCompletionTokens: 32_768,
  },
];

/** The `reasoningEffortOptions` a text model publishes (undefined: it takes no effort). */
export function reasoningEffortOptions(model: EmulatedModel): string[] | undefined {
  return model.reasoningEffortOptions ?? (model.reasoning === "details" ? ["none", "low", "medium", "high"] : undefined);
}

const BY_ID = new Map(MODELS.map((m) => [m.id, m]));

/** The traits a text model carries in `GET /models` (`model_spec.traits`); each trait is on one model. */
export function textTraits(model: EmulatedModel): string[] {
  const out: string[] = [];
  if (model.id === "emu-xs") out.push("fastest");
  if (model.id === "emu-s") out.push("default");
  if (model.id === "emu-l") out.push("most_intelligent");
  if (model.reasoning === "details") out.push("default_reasoning");
  if (model.capabilities.supportsVision && model.id === "emu-m") out.push("default_vision");
  return out;
}

/** trait -> model id of the text models (the first model carrying a trait wins) */
const TEXT_TRAITS = new Map<string, string>();
for (const m of MODELS) for (const t of textTraits(m)) if (!TEXT_TRAITS.has(t)) TEXT_TRAITS.set(t, m.id);

/**
 * `GET /models/compatibility_mapping`: OpenAI-style and legacy ids the service accepts as `model`, per list type,
 * and the model it serves for each.
 */
export const COMPATIBILITY_MAPPING: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  text: { "gpt-4o": "emu-m", "gpt-4o-mini": "emu-s", "gpt-3.5-turbo": "emu-xs", o1: "emu-reasoner", "emu-mini": "emu-s" },
  embedding: { "text-embedding-ada-002": "text-embedding-bge-m3" },
  image: { "dall-e-3": "emu-image" },
};

/** The value of `key` in `record`, own members only (`constructor` is no alias). */
function own(record: Readonly<Record<string, string>> | undefined, key: string): string | undefined {
  return record && Object.hasOwn(record, key) ? record[key] : undefined;
}

/** The model for `id`: a model id, a text trait or a compatibility name; a feature suffix (`emu-s:enable_web_search=on`) is ignored. */
export function findModel(id: string): EmulatedModel | undefined {
  const colon = id.indexOf(":");
  const base = colon === -1 ? id : id.slice(0, colon);
  const target = BY_ID.get(base)?.id ?? TEXT_TRAITS.get(base) ?? own(COMPATIBILITY_MAPPING.text, base);
  return target === undefined ? undefined : BY_ID.get(target);
}

/** What the server needs of any model it serves: its headers, Pro-only, deprecation. */
export type ServedModel = Pick<EmulatedModel, "id" | "name" | "router" | "proOnly" | "deprecated">;

/**
 * Media models by published type: `image` (priced per image), `tts` (per million input characters), `video` (per
 * second of the resolution asked), `music` (asynchronous audio: per second, or per thousand characters for the voice
 * model), `asr` (per second of audio), `inpaint` (image edits, per edit), `upscale` (per factor). They draw real
 * PNGs, speak real WAVs, film real MP4s (../media/), paced per type (spec part 8). `tts-kokoro` is the published
 * default of POST /audio/speech, `nvidia/parakeet-tdt-0.6b-v3` that of POST /audio/transcriptions.
 */
export interface MediaModel extends ServedModel {
  type: "image" | "tts" | "video" | "music" | "asr" | "inpaint" | "upscale";
  /** image: USD per image; tts: per million input characters; inpaint: per edit; asr: per second; else see below */
  priceUsd: number;
  /** the traits of GET /models (`default` for the one a route falls back to) */
  traits?: string[];
  /** tts, music: the model's voices (model_spec.voices), the first is its default */
  voices?: string[];
  /** tts: formats it can answer (model_spec.supported_formats); the first is the default */
  formats?: ("wav" | "pcm")[];
  /** tts: voice cloning through POST /audio/voices, with the sample containers it accepts */
  cloning?: { acceptedFormats: string[] };
  /** video: what a queue may ask, and the USD per second at each resolution */
  video?: {
    modelType: "text-to-video" | "image-to-video";
    durations: string[];
    resolutions: string[];
    aspectRatios: string[];
    perSecondUsd: Record<string, number>;
    /** privately hosted: the queue answers a `download_url`, retrieve only a status */
    privateDownload?: boolean;
  };
  /** music (asynchronous audio): its options and pricing (one of per second, per thousand characters) */
  music?: {
    minDuration?: number;
    maxDuration?: number;
    defaultDuration?: number;
    supportsLyrics: boolean;
    forceInstrumental: boolean;
    loop: boolean;
    /** speaks the prompt (voice models) instead of playing it */
    speaks?: boolean;
    perSecondUsd?: number;
    perThousandCharactersUsd?: number;
    promptCharacterLimit: number;
    minPromptLength: number;
  };
  /** asr: the timestamp granularities it returns */
  timestamps?: ("word" | "segment" | "char")[];
  /** inpaint: most images a multi-edit takes */
  maxInputImages?: number;
  /** upscale: USD per factor */
  upscaleUsd?: { "2x": number; "4x": number };
}

export const MEDIA_MODELS: MediaModel[] = [
  { id: "emu-image", name: "Emulator Image", type: "image", router: "emu-router-image", priceUsd: 0.01, traits: ["default"] },
  { id: "emu-image-hd", name: "Emulator Image HD", type: "image", router: "emu-router-image", priceUsd: 0.04, traits: ["highest_quality"] },
  {
    id: "tts-kokoro",
    name: "Kokoro (emulated)",
    type: "tts",
    router: "emu-router-audio",
    priceUsd: 3.5,
    voices: ["af_sky", "af_bella", "af_nicole", "am_adam", "am_michael", "bf_emma", "bm_george"],
    formats: ["wav", "pcm"],
  },
  {
    id: "tts-orpheus",
    name: "Orpheus (emulated)",
    type: "tts",
    router: "emu-router-audio",
    priceUsd: 7,
    voices: ["tara", "leah", "jess", "leo", "dan", "mia", "zac", "zoe"],
    formats: ["wav", "pcm"],
  },
  {
    id: "tts-chatterbox-hd",
    name: "Chatterbox HD (emulated)",
    type: "tts",
    router: "emu-router-audio",
    priceUsd: 10,
    voices: ["Aurora", "Blade", "Britney", "Carl"],
    formats: ["wav", "pcm"],
    cloning: { acceptedFormats: ["mp3", "wav", "flac", "m4a"] },
  },
  {
    id: "emu-video",
    name: "Emulator Video",
    type: "video",
    router: "emu-router-video",
    priceUsd: 0.05,
    traits: ["default"],
    video: {
      modelType: "text-to-video",
      durations: ["2s", "4s", "5s", "6s", "8s", "10s"],
      resolutions: ["480p", "720p"],
      aspectRatios: ["16:9", "9:16", "1:1"],
      perSecondUsd: { "480p": 0.05, "720p": 0.07 },
    },
  },
  {
    id: "emu-video-i2v",
    name: "Emulator Image-to-Video",
    type: "video",
    router: "emu-router-video",
    priceUsd: 0.08,
    video: {
      modelType: "image-to-video",
      durations: ["4s", "5s"],
      resolutions: ["720p"],
      aspectRatios: [],
      perSecondUsd: { "720p": 0.08 },
    },
  },
  {
    id: "emu-video-private",
    name: "Emulator Video (privately hosted)",
    type: "video",
    router: "emu-router-video",
    priceUsd: 0.06,
    video: {
      modelType: "text-to-video",
      durations: ["2s", "4s", "5s"],
      resolutions: ["720p"],
      aspectRatios: ["16:9", "1:1"],
      perSecondUsd: { "720p": 0.06 },
      privateDownload: true,
    },
  },
  {
    id: "emu-music",
    name: "Emulator Music",
    type: "music",
    router: "emu-router-audio",
    priceUsd: 0.01,
    traits: ["default"],
    music: {
      minDuration: 3,
      maxDuration: 60,
      defaultDuration: 10,
      supportsLyrics: false,
      forceInstrumental: true,
      loop: true,
      perSecondUsd: 0.01,
      promptCharacterLimit: 2000,
      minPromptLength: 10,
    },
  },
  {
    id: "emu-narrator",
    name: "Emulator Narrator",
    type: "music",
    router: "emu-router-audio",
    priceUsd: 0.3,
    voices: ["Aria", "Roger", "Sarah"],
    music: {
      supportsLyrics: false,
      forceInstrumental: false,
      loop: false,
      speaks: true,
      perThousandCharactersUsd: 0.3,
      promptCharacterLimit: 5000,
      minPromptLength: 1,
    },
  },
  {
    id: "nvidia/parakeet-tdt-0.6b-v3",
    name: "Parakeet (emulated)",
    type: "asr",
    router: "emu-router-audio",
    priceUsd: 0.0001,
    traits: ["default"],
    timestamps: ["segment", "word", "char"],
  },
  {
    id: "openai/whisper-large-v3",
    name: "Whisper Large v3 (emulated)",
    type: "asr",
    router: "emu-router-audio",
    priceUsd: 0.0002,
    timestamps: ["segment", "word"],
  },
  {
    id: "emu-image-edit",
    name: "Emulator Image Edit",
    type: "inpaint",
    router: "emu-router-image",
    priceUsd: 0.04,
    traits: ["default"],
    maxInputImages: 3,
  },
  {
    id: "emu-upscale",
    name: "Emulator Upscale",
    type: "upscale",
    router: "emu-router-image",
    priceUsd: 0.02,
    upscaleUsd: { "2x": 0.02, "4x": 0.08 },
  },
];

/** The media model of a type marked `default` (the one a route falls back to). */
export function defaultMediaModel(type: MediaModel["type"]): MediaModel {
  return MEDIA_MODELS.find((m) => m.type === type && m.traits?.includes("default")) ?? MEDIA_MODELS.find((m) => m.type === type)!;
}

/** The media model `id` of `type`. */
export function findMediaModel(id: string, type: MediaModel["type"]): MediaModel | undefined {
  return MEDIA_MODELS.find((m) => m.id === id && m.type === type);
}

/** The image model `id`, a trait of the image list (`highest_quality`) or an image compatibility name (`dall-e-3`). */
export function findImageModel(id: string): MediaModel | undefined {
  const target = findMediaModel(id, "image")?.id ?? own(modelTraits("image"), id) ?? own(COMPATIBILITY_MAPPING.image, id);
  return target === undefined ? undefined : findMediaModel(target, "image");
}

/**
 * Embedding models (published type `embedding`; ids from the published description's model list): priced per
 * million input tokens, paced per type (spec part 8), served by POST /embeddings (../routes/embeddings.ts) with
 * the deterministic hashed bag-of-words vectors of ./embeddings.ts.
 */
export interface EmbeddingModel extends ServedModel {
  type: "embedding";
  /** USD per million input tokens (model_spec.pricing.input) */
  priceUsd: number;
  /** the native number of dimensions (model_spec.embeddingDimensions) */
  dimensions: number;
  /** most tokens per input string (model_spec.maxInputTokens) */
  maxInputTokens: number;
  /** accepts `dimensions` below the native number (model_spec.supportsCustomDimensions) */
  supportsCustomDimensions: boolean;
  traits?: string[];
}

export const EMBEDDING_MODELS: EmbeddingModel[] = [
  {
    id: "text-embedding-bge-m3",
    name: "BGE M3 (emulated)",
    type: "embedding",
    router: "emu-router-embedding",
    priceUsd: 0.15,
    dimensions: 1024,
    maxInputTokens: 8192,
    supportsCustomDimensions: false,
    traits: ["default"],
  },
  {
    id: "text-embedding-qwen3-0-6b",
    name: "Qwen3 Embedding 0.6B (emulated)",
    type: "embedding",
    router: "emu-router-embedding",
    priceUsd: 0.02,
    dimensions: 1024,
    maxInputTokens: 8192,
    supportsCustomDimensions: true,
  },
  {
    id: "text-embedding-3-small",
    name: "Text Embedding 3 Small (emulated)",
    type: "embedding",
    router: "emu-router-embedding",
    priceUsd: 0.02,
    dimensions: 1536,
    maxInputTokens: 8192,
    supportsCustomDimensions: true,
  },
];

/** The embedding model `id`, a trait or a compatibility name (exactly: model feature suffixes are for chat only). */
export function findEmbeddingModel(id: string): EmbeddingModel | undefined {
  const target =
    EMBEDDING_MODELS.find((m) => m.id === id)?.id ?? own(modelTraits("embedding"), id) ?? own(COMPATIBILITY_MAPPING.embedding, id);
  return EMBEDDING_MODELS.find((m) => m.id === target);
}

/**
 * `GET /models/traits?type=`: trait -> model id of one list type (`text` and `code` the text models, `all` every
 * list with the text models first; the first model carrying a trait wins).
 */
export function modelTraits(type: string): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  const add = (id: string, traits: readonly string[] | undefined) => {
    for (const t of traits ?? []) out[t] ??= id;
  };
  if (type === "text" || type === "code" || type === "all") for (const [t, id] of TEXT_TRAITS) add(id, [t]);
  for (const m of MEDIA_MODELS) if (type === "all" || m.type === type) add(m.id, m.traits);
  if (type === "embedding" || type === "all") for (const m of EMBEDDING_MODELS) add(m.id, m.traits);
  return { ...out };
}

/** `GET /models/compatibility_mapping?type=`: alias -> model id of one list type (`code` the text one, `all` every one). */
export function compatibilityMapping(type: string): Record<string, string> {
  if (type === "all") return Object.assign({}, ...Object.values(COMPATIBILITY_MAPPING)) as Record<string, string>;
  return { ...(COMPATIBILITY_MAPPING[type === "code" ? "text" : type] ?? {}) };
}
