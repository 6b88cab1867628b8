/**
 * `generate_image` (ImageGenerationTool): draws a picture (POST /image/generate) and puts it where the owner said:
 * a new file under `outputDir` (created if needed; the name is the tool's, never the model's), or, with no
 * `outputDir`, a data URL in the ToolMessage artifact. The model reads only a short description and where the
 * image went, never the image's base64.
 */
import { StructuredTool, type ToolRunnableConfig } from "@langchain/core/tools";
import { z } from "zod";
import type { ServiceClient } from "../client.js";
import { ValidationError } from "../http/errors.js";
import { generateImage } from "./api.js";
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
import { policyRefusal } from "./results.js";
import { bytesToBase64 } from "../runtime/bytes.js";

export interface ImageGenerationToolOptions extends ServiceToolConnection {
  /** image model id (default: the model GET /models?type=image marks `default`) */
  model?: string;
  /** directory the images are written to; without it, the image is a data URL in the artifact */
  outputDir?: string;
  /** size when the model asks for none (default 1024×1024; the service allows 1–1280) */
  width?: number;
  height?: number;
  /** the service's safe mode (blurs adult content; default: the service's, on) */
  safeMode?: boolean;
}

const schema = z.object({
  prompt: z.string().describe("what the picture shows: subject, setting, style, colours (1-7500 characters)"),
  negativePrompt: z.string().nullish().describe("what must not be in the picture"),
  width: z.number().nullish().describe("width in pixels, 64-1280 (default: the owner's)"),
  height: z.number().nullish().describe("height in pixels, 64-1280 (default: the owner's)"),
});

function dimension(value: unknown, name: string, min: number): number {
  if (!(typeof value === "number" && Number.isInteger(value) && value >= min && value <= 1280)) {
    throw new ValidationError(`${name} must be a whole number of pixels, ${min} to 1280`);
  }
  return value;
}

export class ImageGenerationTool extends StructuredTool<typeof schema> {
  static override lc_name() {
    return "ImageGenerationTool";
  }
  name = "generate_image";
  description =
    "Generate an image from a text description. Returns a short description and where the image was saved (a file path, or an attachment); it does not show the pixels.";
  schema = schema;
  override responseFormat = "content_and_artifact" as const;
  readonly client: ServiceClient;
  readonly outputDir?: string;
  private readonly model?: string;
  private readonly width: number;
  private readonly height: number;
  private readonly safeMode?: boolean;
  private defaultModel?: Promise<string>;

  constructor(options: ImageGenerationToolOptions = {}) {
    super(options.toolParams);
    this.client = clientOf(options);
    this.outputDir = outputDirOption(options.outputDir);
    if (options.model !== undefined && (typeof options.model !== "string" || !options.model))
      throw new ValidationError("model must be a non-empty string");
    this.model = options.model;
    this.width = dimension(options.width ?? 1024, "width", 1);
    this.height = dimension(options.height ?? 1024, "height", 1);
    this.safeMode = options.safeMode;
  }

  /** The model to draw with: the owner's, else the one the service marks `default` (asked once). */
  private modelId(signal?: AbortSignal): Promise<string> {
    if (this.model) return Promise.resolve(this.model);
    // asked once for every run, with no run's signal (see awaitShared)
    this.defaultModel ??= this.client.listModels({ type: "image" }).then((models) => {
      const chosen = models.find((m) => m.model_spec?.traits?.includes("default")) ?? models[0];
      if (!chosen) throw new ValidationError("the service lists no image model; set `model`");
      return chosen.id;
    });
    this.defaultModel.catch(() => (this.defaultModel = undefined));
    return awaitShared(this.defaultModel, signal);
  }

  protected async _call(input: z.infer<typeof schema>, _run?: unknown, config?: ToolRunnableConfig): Promise<ToolResult> {
    const signal = config?.signal;
    return guard(async () => {
      const prompt = typeof input.prompt === "string" ? input.prompt.trim() : "";
      if (!prompt) throw new ToolInputError("INVALID_PARAMS", "prompt must describe the picture (it is empty)");
      if (prompt.length > 7500) throw new ToolInputError("INVALID_PARAMS", "prompt is at most 7500 characters");
      const width = input.width == null ? this.width : dimension(input.width, "width", 64);
      const height = input.height == null ? this.height : dimension(input.height, "height", 64);
      const model = await this.modelId(signal);
      const res = await generateImage(
        this.client,
        {
          model,
          prompt,
          ...(input.negativePrompt ? { negativePrompt: input.negativePrompt } : {}),
          width,
          height,
          format: "png",
          ...(this.safeMode !== undefined ? { safeMode: this.safeMode } : {}),
        },
        { signal },
      );
      const image = res.images[0]!;
      const size = image.width && image.height ? `${image.width}×${image.height}` : `${width}×${height}`;
      const kind = image.extension === "jpg" ? "JPEG" : image.extension.toUpperCase();
      const description = `Generated a ${size} ${kind} image (${image.bytes.length} bytes) of: ${prompt.length > 160 ? `${prompt.slice(0, 159)}…` : prompt}`;
      const blurred = res.headers.contentPolicy?.isBlurred === true;
      const meta = {
        id: res.id,
        model,
        mimeType: image.mimeType,
        width: image.width ?? width,
        height: image.height ?? height,
        bytes: image.bytes.length,
        ...balanceOf(res.headers),
      };
      if (this.outputDir) {
        const path = await writeOutputFile(this.outputDir, "image", image.extension, image.bytes);
        return [
          JSON.stringify({ description, path, ...(blurred ? { note: "the service blurred it (safe mode)" } : {}) }),
          { ...meta, path },
        ];
      }
      const dataUrl = `data:${image.mimeType};base64,${bytesToBase64(image.bytes)}`;
      return [
        JSON.stringify({
          description,
          image: "attached to this tool message as a data URL (artifact.dataUrl); not shown here",
          ...(blurred ? { note: "the service blurred it (safe mode)" } : {}),
        }),
        { ...meta, dataUrl },
      ];
    }, policyRefusal); // a refused prompt is the model's to change: it reads why, no file is written
  }
}
