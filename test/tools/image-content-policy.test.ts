/**
 * A picture the service withholds for its content policy is a 200 whose `x-<brand>-is-content-violation` header
 * is `true` (image generation does not use the 422). `generateImage`, `simpleGenerateImage` and
 * `ServiceClient.generateImage` throw a `ContentViolationError` (a `ContentPolicyError`) instead of handing back
 * what came; `generate_image` and `edit_image` (whose routes refuse with the 422) tell the model it was refused,
 * in text it can act on, and write no file. Against the emulator in live mode (`[[emu:blocked]]` in a prompt).
 */
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { pictureFor } from "../../packages/langchain-service-emulator/src/media/png.js";
import {
  ContentPolicyError,
  ContentViolationError,
  ImageEditTool,
  ImageGenerationTool,
  ServiceClient,
  generateImage,
  simpleGenerateImage,
} from "../../src/index.js";
import { callTool } from "./helpers.js";

const KEY = "k-policy";
const BLOCKED = "a street at night [[emu:blocked]]";
let emu: Emulator;
let root: string;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: [{ key: KEY, usd: 5, diem: 0 }] });
  root = await mkdtemp(join(tmpdir(), "image-policy-"));
});
afterAll(async () => {
  await emu?.close();
  await rm(root, { recursive: true, force: true });
});

const client = () => new ServiceClient({ baseUrl: emu.url, apiKey: KEY });
const files = (dir: string) => readdir(dir).catch(() => [] as string[]);

describe("a withheld picture", () => {
  it("is a ContentViolationError from /image/generate and /images/generations, never an image", async () => {
    const c = client();
    for (const call of [
      () => generateImage(c, { model: "emu-image", prompt: BLOCKED, width: 32, height: 32 }),
      () => c.generateImage({ model: "emu-image", prompt: BLOCKED, width: 32, height: 32 }),
      () => simpleGenerateImage(c, { prompt: BLOCKED, size: "256x256" }),
    ]) {
      const err = await call().catch((e) => e);
      expect(err).toBeInstanceOf(ContentViolationError);
      expect(err).toBeInstanceOf(ContentPolicyError);
      expect(err).toMatchObject({ status: 200 });
      expect(err.headers.contentPolicy.isContentViolation).toBe(true);
    }
    // an ordinary prompt is drawn, with the header false
    const ok = await generateImage(c, { model: "emu-image", prompt: "a street at night", width: 32, height: 32 });
    expect(ok.images[0]!.mimeType).toBe("image/png");
    expect(ok.headers.contentPolicy?.isContentViolation).toBe(false);
  });

  it("generate_image tells the model it was refused and writes no file", async () => {
    const outputDir = join(root, "generated");
    const tool = new ImageGenerationTool({ client: client(), outputDir, width: 32, height: 32, model: "emu-image" });
    const refused = await callTool(tool, "generate_image", { prompt: BLOCKED });
    expect(refused.json.error).toMatchObject({
      code: "CONTENT_POLICY",
      message: expect.stringMatching(/content policy; nothing was made/),
    });
    expect(refused.json.path).toBeUndefined();
    expect(await files(outputDir)).toEqual([]);
    const drawn = await callTool(tool, "generate_image", { prompt: "a street at night" });
    expect(drawn.json.path).toBeDefined();
    expect(await files(outputDir)).toHaveLength(1);
  });

  it("edit_image tells the model an edit was refused (the 422) and writes no file", async () => {
    const input = join(root, "in");
    const outputDir = join(root, "edited");
    await mkdir(input, { recursive: true });
    await writeFile(join(input, "pic.png"), pictureFor("hills", 256, 256));
    const tool = new ImageEditTool({ client: client(), inputDir: input, outputDir });
    const refused = await callTool(tool, "edit_image", { path: "pic.png", prompt: `add a moon [[emu:blocked]]` });
    expect(refused.json.error.code).toBe("CONTENT_POLICY");
    expect(await files(outputDir)).toEqual([]);
  });
});
