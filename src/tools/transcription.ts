/**
 * `transcribe_audio` (TranscriptionTool): the text of a speech recording (POST /audio/transcriptions) the model
 * names by path, read only under the owner's `inputDir` (a path outside it is refused before any request). With
 * `timestamps`, when each segment (or word, for models that give only words) was said; at most `maxTimestamps` of
 * them reach the model, all of them the artifact.
 */
import { StructuredTool, type ToolRunnableConfig } from "@langchain/core/tools";
import { z } from "zod";
import type { ServiceClient } from "../client.js";
import { ValidationError } from "../http/errors.js";
import { DEFAULT_TRANSCRIPTION_MODEL, MAX_TRANSCRIPTION_BYTES, transcribe } from "../media/transcription.js";
import { inputDirsOption, readAllowedFile } from "./input-files.js";
import { clientOf, errorContent, guard, ToolInputError, type ServiceToolConnection, type ToolResult } from "./shared.js";

export interface TranscriptionToolOptions extends ServiceToolConnection {
  /** the directory (or directories) the model may name audio files in; relative paths are read from the first */
  inputDir: string | string[];
  /** ASR model (default `nvidia/parakeet-tdt-0.6b-v3`) */
  model?: string;
  /** a language hint (ISO 639-1) when the model gives none */
  language?: string;
  /** most timestamps handed to the model (default 200; the artifact has them all) */
  maxTimestamps?: number;
}

const schema = z.object({
  path: z.string().describe("the audio file (wav, mp3, flac, m4a, ogg, webm), relative to the directory this tool reads from"),
  timestamps: z.boolean().nullish().describe("also say when each segment was spoken (seconds)"),
  language: z.string().nullish().describe("the spoken language as an ISO 639-1 code, e.g. en (optional)"),
});

export class TranscriptionTool extends StructuredTool<typeof schema> {
  static override lc_name() {
    return "TranscriptionTool";
  }
  name = "transcribe_audio";
  description =
    "Transcribe the speech in an audio file. Returns the text, its duration, and with timestamps: true when each part was said.";
  schema = schema;
  override responseFormat = "content_and_artifact" as const;
  readonly client: ServiceClient;
  readonly inputDirs: string[];
  readonly model: string;
  private readonly language?: string;
  private readonly maxTimestamps: number;

  constructor(options: TranscriptionToolOptions) {
    super(options?.toolParams);
    this.client = clientOf(options);
    this.inputDirs = inputDirsOption(options?.inputDir);
    if (options.model !== undefined && (typeof options.model !== "string" || !options.model))
      throw new ValidationError("model must be a non-empty string");
    this.model = options.model ?? DEFAULT_TRANSCRIPTION_MODEL;
    this.language = options.language;
    this.maxTimestamps = options.maxTimestamps ?? 200;
    if (!(Number.isInteger(this.maxTimestamps) && this.maxTimestamps >= 0))
      throw new ValidationError("maxTimestamps must be a non-negative integer");
  }

  protected async _call(input: z.infer<typeof schema>, _run?: unknown, config?: ToolRunnableConfig): Promise<ToolResult> {
    const signal = config?.signal;
    return guard(
      async () => {
        const language = input.language ?? this.language;
        if (language !== undefined && !/^[a-z]{2,3}$/.test(language))
          throw new ToolInputError("INVALID_PARAMS", "language is an ISO 639-1 code such as en");
        const file = await readAllowedFile(this.inputDirs, input.path, MAX_TRANSCRIPTION_BYTES);
        const res = await transcribe(this.client, file.bytes, {
          model: this.model,
          timestamps: input.timestamps === true,
          filename: file.name,
          ...(language ? { language } : {}),
          signal,
        });
        const durationSeconds = res.durationSeconds ?? null;
        const content: Record<string, unknown> = { text: res.text, durationSeconds };
        if (input.timestamps && res.timestamps) {
          const segments = res.timestamps.segment ?? res.timestamps.word?.map((w) => ({ text: w.word, start: w.start, end: w.end })) ?? [];
          content.segments = segments.slice(0, this.maxTimestamps).map((s) => ({ start: s.start, end: s.end, text: s.text }));
          if (segments.length > this.maxTimestamps) content.note = `first ${this.maxTimestamps} of ${segments.length} segments`;
        }
        return [
          JSON.stringify(content),
          { model: res.model, file: file.path, text: res.text, durationSeconds, timestamps: res.timestamps },
        ];
      },
      // the service could not hear speech in the file (silent, corrupt): the model's to know, not a crash
      (err) => ((err as { status?: number })?.status === 422 ? errorContent("UNPROCESSABLE_AUDIO", (err as Error).message) : undefined),
    );
  }
}
