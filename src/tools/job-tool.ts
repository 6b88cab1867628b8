/**
 * Agent tools over long-running jobs (JobTool): `generate_video` (VideoGenerationTool) and `generate_audio`
 * (AudioGenerationTool: music, sound effects, narration). Each call runs one job as `runJob` does: quote, the
 * owner's limits (`maxQuoteUsd`; the wallet's payment policy, topping up first when its credit is short), queue
 * once, find a lost queue answer in the ledger instead of queueing again, poll with backoff within the route's
 * rate limit. Progress goes to the run's callbacks (custom event `job_progress`) and to `onProgress`; the run's
 * signal cancels the wait. The result is written to a new file under `outputDir` (the tool names it) and the model
 * reads its path, size and cost. A quote over the limits or a job the provider refused (400, 422) goes back to the
 * model as `{error}` (with the refund); the rest is thrown.
 */
import { StructuredTool, type ToolRunnableConfig } from "@langchain/core/tools";
import type { CallbackManagerForToolRun } from "@langchain/core/callbacks/manager";
import { z } from "zod";
import type { ServiceClient } from "../client.js";
import { ConfigurationError, ValidationError } from "../http/errors.js";
import { JobFailedError, QuoteRefusedError, type JobKind } from "../media/errors.js";
import { runJob, type JobProgress, type JobResult, type RunJobOptions } from "../media/job-runner.js";
import {
  VIDEO_ASPECT_RATIOS,
  VIDEO_DURATIONS,
  type AudioJobParameters,
  type VideoAspectRatio,
  type VideoDuration,
  type VideoJobParameters,
} from "../media/jobs.js";
import { audioExtension, sniffVideo } from "../media/sniff.js";
import {
  awaitShared,
  balanceOf,
  clientOf,
  errorContent,
  guard,
  outputDirOption,
  writeOutputFile,
  type ServiceToolConnection,
  type ToolResult,
} from "./shared.js";

/** The LangChain custom event of job progress (`handleCustomEvent(JOB_PROGRESS_EVENT, progress)`). */
export const JOB_PROGRESS_EVENT = "job_progress";

export interface JobToolOptions
  extends ServiceToolConnection,
    Pick<RunJobOptions, "maxQuoteUsd" | "pollIntervalMs" | "recoverWithinMs" | "timeoutMs"> {
  /** the model (default: the one `GET /models?type=…` marks `default`, else its first) */
  model?: string;
  /** where the results are written (required: media files are too large for the model's context or an artifact) */
  outputDir: string;
  /** each step of each job (quoted, queued, every poll, completed) */
  onProgress?: (progress: JobProgress) => void;
}

/** The model's mistakes of a job: a quote over the limits, a job the provider refused (refunded). */
function jobMistake(err: unknown): ToolResult | undefined {
  if (err instanceof QuoteRefusedError) {
    return errorContent("QUOTE_REFUSED", err.message, { quoteUsd: err.quoteUsd, limitUsd: err.limitUsd });
  }
  if (err instanceof JobFailedError && (err.status === 400 || err.status === 422)) {
    return errorContent(err.status === 422 ? "CONTENT_POLICY" : "JOB_REJECTED", err.message, {
      ...(err.refund ? { refundedUsd: err.refund.amountUsd } : {}),
    });
  }
  return undefined;
}

/** One job per call; the kinds say what the model may ask and how the file is named. */
export abstract class JobTool<S extends z.ZodObject<z.ZodRawShape>> extends StructuredTool<S, z.infer<S>> {
  override responseFormat = "content_and_artifact" as const;
  readonly client: ServiceClient;
  readonly outputDir: string;
  abstract readonly kind: JobKind;
  protected readonly model?: string;
  private readonly runOptions: Omit<RunJobOptions, "signal" | "onProgress">;
  private readonly onProgress?: (progress: JobProgress) => void;
  private defaultModel?: Promise<string>;

  constructor(options: JobToolOptions) {
    super(options?.toolParams);
    this.client = clientOf(options);
    const dir = outputDirOption(options?.outputDir);
    if (!dir) throw new ConfigurationError(`${new.target.name} needs an outputDir (the files are written there)`);
    this.outputDir = dir;
    if (options.model !== undefined && (typeof options.model !== "string" || !options.model))
      throw new ValidationError("model must be a non-empty string");
    this.model = options.model;
    if (options.maxQuoteUsd !== undefined && !(Number.isFinite(options.maxQuoteUsd) && options.maxQuoteUsd >= 0))
      throw new ConfigurationError("maxQuoteUsd must be a non-negative number");
    this.runOptions = {
      ...(options.maxQuoteUsd !== undefined ? { maxQuoteUsd: options.maxQuoteUsd } : {}),
      ...(options.pollIntervalMs ? { pollIntervalMs: options.pollIntervalMs } : {}),
      ...(options.recoverWithinMs !== undefined ? { recoverWithinMs: options.recoverWithinMs } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    };
    this.onProgress = options.onProgress;
  }

  /** The job's queue parameters from the model's input. */
  protected abstract parameters(input: z.infer<S>, model: string): VideoJobParameters | AudioJobParameters;
  /** What the model reads of a finished job (besides path and cost). */
  protected abstract summary(input: z.infer<S>, result: JobResult): Record<string, unknown>;

  /** The model to use: the owner's, else the one the service marks `default` for the kind (asked once). */
  private modelId(signal?: AbortSignal): Promise<string> {
    if (this.model) return Promise.resolve(this.model);
    const type = this.kind === "video" ? "video" : "music";
    this.defaultModel ??= this.client.listModels({ type }).then((models) => {
      const chosen = models.find((m) => m.model_spec?.traits?.includes("default")) ?? models[0];
      if (!chosen) throw new ValidationError(`the service lists no ${type} model; set \`model\``);
      return chosen.id;
    });
    this.defaultModel.catch(() => (this.defaultModel = undefined));
    return awaitShared(this.defaultModel, signal);
  }

  protected async _call(input: z.infer<S>, runManager?: CallbackManagerForToolRun, config?: ToolRunnableConfig): Promise<ToolResult> {
    const signal = config?.signal;
    return guard(async () => {
      const model = await this.modelId(signal);
      const parameters = this.parameters(input, model);
      const result = await runJob(this.client, this.kind, parameters, {
        ...this.runOptions,
        signal,
        onProgress: async (progress) => {
          this.onProgress?.(progress);
          await runManager?.handleCustomEvent(JOB_PROGRESS_EVENT, progress).catch(() => undefined);
        },
      });
      const video = this.kind === "video" ? sniffVideo(result.bytes) : undefined;
      const ext = video?.extension ?? (this.kind === "video" ? "mp4" : audioExtension(result.contentType, result.bytes));
      const path = await writeOutputFile(this.outputDir, this.kind, ext, result.bytes);
      const content = { path, ...this.summary(input, result), bytes: result.bytes.length, costUsd: result.quoteUsd };
      return [
        JSON.stringify(content),
        {
          ...content,
          model: result.model,
          queueId: result.queueId,
          contentType: result.contentType,
          polls: result.polls,
          elapsedMs: result.elapsedMs,
          recovered: result.recovered,
          ...balanceOf(result.headers),
        },
      ];
    }, jobMistake);
  }
}

const videoSchema = z.object({
  prompt: z.string().describe("what happens in the video: subject, action, setting, camera, style"),
  duration: z
    .string()
    .nullish()
    .describe(`length, one of ${VIDEO_DURATIONS.slice(0, 10).join(", ")}, … (default: the owner's)`),
  aspectRatio: z
    .string()
    .nullish()
    .describe(`frame shape, one of ${VIDEO_ASPECT_RATIOS.join(", ")} (default: the owner's)`),
});

export interface VideoGenerationToolOptions extends JobToolOptions {
  /** default length (default `5s`) */
  duration?: VideoDuration;
  /** default resolution (default: the model's first) */
  resolution?: string;
  /** default frame shape (default `16:9`) */
  aspectRatio?: VideoAspectRatio;
  /** generate sound (default: the service's, on) */
  audio?: boolean;
}

/** `generate_video`: a short video from a description, saved as a file (see JobTool). */
export class VideoGenerationTool extends JobTool<typeof videoSchema> {
  static override lc_name() {
    return "VideoGenerationTool";
  }
  name = "generate_video";
  description =
    "Generate a short video from a text description. It takes a while; returns where the video file was saved, its length and its cost.";
  schema = videoSchema;
  readonly kind = "video" as const;
  private readonly defaults: Pick<VideoGenerationToolOptions, "duration" | "resolution" | "aspectRatio" | "audio">;

  constructor(options: VideoGenerationToolOptions) {
    super(options);
    this.defaults = {
      duration: options.duration ?? "5s",
      resolution: options.resolution,
      aspectRatio: options.aspectRatio ?? "16:9",
      audio: options.audio,
    };
  }

  protected parameters(input: z.infer<typeof videoSchema>, model: string): VideoJobParameters {
    const duration = (input.duration ?? this.defaults.duration) as VideoDuration;
    const aspectRatio = (input.aspectRatio ?? this.defaults.aspectRatio) as VideoAspectRatio;
    return {
      model,
      prompt: typeof input.prompt === "string" ? input.prompt : "",
      duration,
      aspectRatio,
      ...(this.defaults.resolution ? { resolution: this.defaults.resolution } : {}),
      ...(this.defaults.audio !== undefined ? { audio: this.defaults.audio } : {}),
    };
  }

  protected summary(input: z.infer<typeof videoSchema>): Record<string, unknown> {
    return { duration: input.duration ?? this.defaults.duration, aspectRatio: input.aspectRatio ?? this.defaults.aspectRatio };
  }
}

const audioSchema = z.object({
  prompt: z.string().describe("the music or sound to make (style, instruments, mood), or for a voice model the words to speak"),
  durationSeconds: z.number().nullish().describe("length in seconds, for models that take one"),
  voice: z.string().nullish().describe("voice name, for voice models"),
});

export interface AudioGenerationToolOptions extends JobToolOptions {
  /** keep the music instrumental (models that support it) */
  forceInstrumental?: boolean;
}

/** `generate_audio`: music, a sound effect or long narration, saved as a file (see JobTool). */
export class AudioGenerationTool extends JobTool<typeof audioSchema> {
  static override lc_name() {
    return "AudioGenerationTool";
  }
  name = "generate_audio";
  description =
    "Generate music, a sound effect or a long narration from a description. It takes a while; returns where the audio file was saved and its cost.";
  schema = audioSchema;
  readonly kind = "audio" as const;
  private readonly forceInstrumental?: boolean;

  constructor(options: AudioGenerationToolOptions) {
    super(options);
    this.forceInstrumental = options.forceInstrumental;
  }

  protected parameters(input: z.infer<typeof audioSchema>, model: string): AudioJobParameters {
    return {
      model,
      prompt: typeof input.prompt === "string" ? input.prompt : "",
      ...(input.durationSeconds != null ? { durationSeconds: input.durationSeconds } : {}),
      ...(input.voice ? { voice: input.voice } : {}),
      ...(this.forceInstrumental !== undefined ? { forceInstrumental: this.forceInstrumental } : {}),
    };
  }

  protected summary(input: z.infer<typeof audioSchema>, result: JobResult): Record<string, unknown> {
    return {
      format: audioExtension(result.contentType, result.bytes),
      ...(input.durationSeconds != null ? { durationSeconds: input.durationSeconds } : {}),
    };
  }
}
