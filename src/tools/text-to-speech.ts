/**
 * `text_to_speech` (TextToSpeechTool): speaks a text (POST /audio/speech) and writes the audio to a new file under
 * the owner's `outputDir` (or, without one, a data URL in the artifact); the model reads the path, format and
 * duration (from the WAV header, or the PCM length). The voice is checked against the model's voices, which the
 * service lists in GET /models?type=tts (`model_spec.voices`; cloned `vv_…` handles from POST /audio/voices pass).
 */
import { StructuredTool, type ToolRunnableConfig } from "@langchain/core/tools";
import { z } from "zod";
import type { ServiceClient } from "../client.js";
import { ValidationError } from "../http/errors.js";
import { createSpeech, listVoices, SPEECH_FORMATS, type SpeechFormat } from "./api.js";
import {
  awaitShared,
  balanceOf,
  clientOf,
  guard,
  outputDirOption,
  ToolInputError,
  writeOutputFile,
  type ServiceToolConnection,
  type ToolResult,
} from "./shared.js";
import { bytesToBase64 } from "../runtime/bytes.js";

export interface TextToSpeechToolOptions extends ServiceToolConnection {
  /** TTS model (default `tts-kokoro`, the service's default) */
  model?: string;
  /** voice when the model names none (default: the model's first listed voice) */
  voice?: string;
  /** the model's voices, if known (skips GET /models) */
  voices?: string[];
  /** audio format asked for (default `wav`, whose duration is read from its header) */
  format?: SpeechFormat;
  /** directory the audio files are written to; without it, the audio is a data URL in the artifact */
  outputDir?: string;
}

const schema = z.object({
  text: z.string().describe("the words to speak (1-4096 characters)"),
  voice: z.string().nullish().describe("voice name (default: the owner's); an unknown voice gets the list of valid ones"),
  speed: z.number().nullish().describe("speaking speed, 0.25-4 (default 1)"),
});

const EXTENSION: Record<string, string> = { wav: "wav", mp3: "mp3", opus: "opus", aac: "aac", flac: "flac", pcm: "pcm", unknown: "bin" };

export class TextToSpeechTool extends StructuredTool<typeof schema> {
  static override lc_name() {
    return "TextToSpeechTool";
  }
  name = "text_to_speech";
  description = "Turn text into speech. Saves the audio and returns its file path, format and duration in seconds.";
  schema = schema;
  override responseFormat = "content_and_artifact" as const;
  readonly client: ServiceClient;
  readonly outputDir?: string;
  readonly model: string;
  readonly format: SpeechFormat;
  private readonly voice?: string;
  private voices?: Promise<string[]>;

  constructor(options: TextToSpeechToolOptions = {}) {
    super(options.toolParams);
    this.client = clientOf(options);
    this.outputDir = outputDirOption(options.outputDir);
    this.model = options.model ?? "tts-kokoro";
    this.format = options.format ?? "wav";
    if (!SPEECH_FORMATS.includes(this.format)) throw new ValidationError(`format must be one of ${SPEECH_FORMATS.join(", ")}`);
    if (options.voices !== undefined) {
      if (!Array.isArray(options.voices) || options.voices.some((v) => typeof v !== "string" || !v))
        throw new ValidationError("voices must be an array of voice names");
      this.voices = Promise.resolve([...options.voices]);
    }
    this.voice = options.voice;
  }

  /** The model's voices (asked once; a failed ask is asked again next time). */
  private modelVoices(signal?: AbortSignal): Promise<string[]> {
    // asked once for every run, with no run's signal (see awaitShared)
    this.voices ??= listVoices(this.client, this.model).then((voices) => {
      if (voices === undefined) throw new ValidationError(`the service lists no TTS model ${this.model} (GET /models?type=tts)`);
      return voices;
    });
    this.voices.catch(() => (this.voices = undefined));
    return awaitShared(this.voices, signal);
  }

  protected async _call(input: z.infer<typeof schema>, _run?: unknown, config?: ToolRunnableConfig): Promise<ToolResult> {
    const signal = config?.signal;
    return guard(async () => {
      const text = typeof input.text === "string" ? input.text : "";
      if (!text.trim()) throw new ToolInputError("INVALID_PARAMS", "text must not be empty");
      if (text.length > 4096) throw new ToolInputError("INVALID_PARAMS", `text is at most 4096 characters (got ${text.length}); split it`);
      const speed = input.speed ?? undefined;
      if (speed !== undefined && !(typeof speed === "number" && speed >= 0.25 && speed <= 4))
        throw new ToolInputError("INVALID_PARAMS", "speed must be 0.25 to 4");
      const voices = await this.modelVoices(signal);
      const voice = input.voice || this.voice || voices[0];
      if (voice && !voice.startsWith("vv_") && voices.length > 0 && !voices.includes(voice)) {
        throw new ToolInputError(
          "INVALID_VOICE",
          `voice ${JSON.stringify(voice)} is not a voice of ${this.model}; choose one of: ${voices.join(", ")}`,
        );
      }
      const res = await createSpeech(
        this.client,
        { input: text, model: this.model, ...(voice ? { voice } : {}), format: this.format, ...(speed !== undefined ? { speed } : {}) },
        { signal },
      );
      const durationSeconds = res.durationSeconds === undefined ? undefined : Math.round(res.durationSeconds * 1000) / 1000;
      const meta = {
        model: this.model,
        voice,
        format: res.format,
        contentType: res.contentType,
        bytes: res.audio.length,
        durationSeconds,
        ...balanceOf(res.headers),
      };
      const summary = { format: res.format, durationSeconds: durationSeconds ?? null, voice, characters: text.length };
      if (this.outputDir) {
        const path = await writeOutputFile(this.outputDir, "speech", EXTENSION[res.format] ?? "bin", res.audio);
        return [JSON.stringify({ path, ...summary }), { ...meta, path }];
      }
      const dataUrl = `data:${res.contentType || "application/octet-stream"};base64,${bytesToBase64(res.audio)}`;
      return [
        JSON.stringify({ audio: "attached to this tool message as a data URL (artifact.dataUrl)", ...summary }),
        { ...meta, dataUrl },
      ];
    });
  }
}
