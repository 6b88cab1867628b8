/**
 * `edit_image` (ImageEditTool): changes a picture the model names by path, read only under the owner's `inputDir`
 * (default: its `outputDir`, so it can rework what `generate_image` drew): `edit` with a prompt (several paths:
 * composed, the first the base; POST /image/edit or /image/multi-edit), `upscale` 2× or 4× (/image/upscale), or
 * `remove_background` (/image/background-remove). The result is written like `generate_image`'s: a new file under
 * `outputDir` named by the tool, or a data URL in the artifact; the model reads its size and path, never its bytes.
 */
import { StructuredTool, type ToolRunnableConfig } from "@langchain/core/tools";
import { z } from "zod";
import type { ServiceClient } from "../client.js";
import { ConfigurationError, ValidationError } from "../http/errors.js";
import { editImage, MAX_IMAGE_BYTES, multiEditImage, removeBackground, upscaleImage, type EditedImage } from "../media/images.js";
import { inputDirsOption, readAllowedFile } from "./input-files.js";
import {
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

export interface ImageEditToolOptions extends ServiceToolConnection {
  /** directory (or directories) the model may name images in (default: `outputDir`) */
  inputDir?: string | string[];
  /** directory the results are written to; without it, the result is a data URL in the artifact */
  outputDir?: string;
  /** edit model (default: the service's) */
  model?: string;
  /** the service's safe mode for edits (default: the service's, on) */
  safeMode?: boolean;
}

const OPERATIONS = ["edit", "upscale", "remove_background"] as const;

const schema = z.object({
  operation: z.enum(OPERATIONS).nullish().describe("edit (with a prompt; the default), upscale, or remove_background"),
  path: z.string().describe("the image to change (png, jpeg, webp), relative to the directory this tool reads from"),
  prompt: z.string().nullish().describe("edit: what to change, short and specific (e.g. 'make the sky a sunrise')"),
  morePaths: z.array(z.string()).nullish().describe("edit: further images to combine with the first (the first is the base)"),
  scale: z.number().nullish().describe("upscale: 2 or 4 (default 2)"),
});

export class ImageEditTool extends StructuredTool<typeof schema> {
  static override lc_name() {
    return "ImageEditTool";
  }
  name = "edit_image";
  description =
    "Change an existing image: edit it with a prompt (optionally combining more images), upscale it 2x or 4x, or remove its background. Returns the new image's size and where it was saved.";
  schema = schema;
  override responseFormat = "content_and_artifact" as const;
  readonly client: ServiceClient;
  readonly inputDirs: string[];
  readonly outputDir?: string;
  private readonly model?: string;
  private readonly safeMode?: boolean;

  constructor(options: ImageEditToolOptions = {}) {
    super(options.toolParams);
    this.client = clientOf(options);
    this.outputDir = outputDirOption(options.outputDir);
    const dirs = options.inputDir ?? this.outputDir;
    if (dirs === undefined) throw new ConfigurationError("ImageEditTool needs an inputDir (or an outputDir to read from)");
    this.inputDirs = inputDirsOption(dirs);
    if (options.model !== undefined && (typeof options.model !== "string" || !options.model))
      throw new ValidationError("model must be a non-empty string");
    this.model = options.model;
    this.safeMode = options.safeMode;
  }

  protected async _call(input: z.infer<typeof schema>, _run?: unknown, config?: ToolRunnableConfig): Promise<ToolResult> {
    const signal = config?.signal;
    return guard(async () => {
      const operation = input.operation ?? "edit";
      const first = await readAllowedFile(this.inputDirs, input.path, MAX_IMAGE_BYTES);
      let result: EditedImage;
      let what: string;
      if (operation === "edit") {
        const prompt = typeof input.prompt === "string" ? input.prompt.trim() : "";
        if (!prompt) throw new ToolInputError("INVALID_PARAMS", "edit needs a prompt saying what to change");
        const more = await Promise.all((input.morePaths ?? []).map((p) => readAllowedFile(this.inputDirs, p, MAX_IMAGE_BYTES)));
        const common = {
          prompt,
          ...(this.model ? { model: this.model } : {}),
          ...(this.safeMode !== undefined ? { safeMode: this.safeMode } : {}),
        };
        result = more.length
          ? await multiEditImage(this.client, { ...common, images: [first.bytes, ...more.map((m) => m.bytes)] }, { signal })
          : await editImage(this.client, { ...common, image: first.bytes }, { signal });
        what = `Edited ${first.name}${more.length ? ` with ${more.length} more image(s)` : ""}: ${prompt.length > 120 ? `${prompt.slice(0, 119)}…` : prompt}`;
      } else if (operation === "upscale") {
        const scale = input.scale ?? 2;
        if (scale !== 2 && scale !== 4) throw new ToolInputError("INVALID_PARAMS", "scale is 2 or 4");
        result = await upscaleImage(this.client, { image: first.bytes, scale }, { signal });
        what = `Upscaled ${first.name} ${scale}x`;
      } else {
        result = await removeBackground(this.client, { image: first.bytes }, { signal });
        what = `Removed the background of ${first.name}`;
      }
      const size = result.width && result.height ? `${result.width}×${result.height}` : "unknown size";
      const kind = result.extension === "jpg" ? "JPEG" : result.extension.toUpperCase();
      const description = `${what} (${size} ${kind}, ${result.bytes.length} bytes)`;
      const meta = {
        operation,
        source: first.path,
        mimeType: result.mimeType,
        width: result.width,
        height: result.height,
        bytes: result.bytes.length,
        ...balanceOf(result.headers),
      };
      if (this.outputDir) {
        const path = await writeOutputFile(
          this.outputDir,
          operation === "edit" ? "edit" : operation === "upscale" ? "upscale" : "cutout",
          result.extension,
          result.bytes,
        );
        return [JSON.stringify({ description, path }), { ...meta, path }];
      }
      const dataUrl = `data:${result.mimeType};base64,${bytesToBase64(result.bytes)}`;
      return [
        JSON.stringify({ description, image: "attached to this tool message as a data URL (artifact.dataUrl); not shown here" }),
        { ...meta, dataUrl },
      ];
    }, policyRefusal); // a refused prompt is the model's to change: it reads why, no file is written
  }
}
