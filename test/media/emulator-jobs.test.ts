/**
 * The emulator's long-running job routes on the wire (video and asynchronous audio): published shapes, closed bodies
 * (an unknown member 400, another content type 415), the model's constraints, the charge at queue time under the
 * queue id, progress while the job runs, real media once it is done (an MP4 whose H.264 decodes, a WAV), deletion,
 * the failure knob (a REFUND row at the failure, the error on retrieve), funds short of the quote, and the
 * lost-answer fault (the route runs and charges, the connection dies before the answer).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { decodeWav } from "../tools/helpers.js";
import { decodeMp4 } from "./mp4-reader.js";
import { testClock } from "../emulator/helpers.js";

let emu: Emulator;
// the jobs' processing time passes on the emulator's clock, when a test moves it on
const clock = testClock();
beforeAll(async () => {
  emu = await startEmulator({
    now: clock.now,
    apiKeys: [
      { key: "rich", usd: 20, diem: 0 },
      { key: "poor", usd: 0.15, diem: 0 },
      { key: "other", usd: 5, diem: 0 },
    ],
    // long enough that "still running" holds on a busy machine (the clock is moved on, never waited for)
    jobs: { processingMs: { video: 1_000, audio: 600 } },
    rateLimits: { abuseMaxFailures: 10_000 },
  });
});
afterAll(async () => {
  await emu?.close();
});

async function post(path: string, body: unknown, key = "rich", headers: Record<string, string> = {}) {
  const res = await fetch(`${emu.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  const type = res.headers.get("content-type") ?? "";
  return {
    status: res.status,
    headers: res.headers,
    type,
    bytes,
    json: type.includes("json") ? JSON.parse(bytes.toString("utf8")) : undefined,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rows = (key: string) => emu.account(key)!.entries;

describe("/models of the new types", () => {
  it("video (constraints and per-second pricing), music (options), asr, inpaint and upscale models, in the published shape", async () => {
    const list = async (type: string) => (await (await fetch(`${emu.url}/models?type=${type}`)).json()).data;
    const [videoModel] = await list("video");
    expect(videoModel).toMatchObject({
      id: "emu-video",
      type: "video",
      model_spec: { traits: ["default"], pricing: { per_second: { "480p": { usd: 0.05 } } } },
    });
    expect(videoModel.model_spec.constraints).toEqual({
      aspect_ratios: ["16:9", "9:16", "1:1"],
      resolutions: ["480p", "720p"],
      durations: ["2s", "4s", "5s", "6s", "8s", "10s"],
      model_type: "text-to-video",
      audio: true,
      audio_configurable: true,
      prompt_character_limit: 2500,
    });
    const music = await list("music");
    expect(music.map((m: { id: string }) => m.id)).toEqual(["emu-music", "emu-narrator"]);
    expect(music[0].model_spec).toMatchObject({
      min_duration: 3,
      max_duration: 60,
      default_duration: 10,
      supports_loop: true,
      supports_lyrics: false,
    });
    expect(music[1].model_spec).toMatchObject({ voices: ["Aria", "Roger", "Sarah"], pricing: { per_thousand_characters: { usd: 0.3 } } });
    expect((await list("asr")).map((m: { id: string }) => m.id)).toEqual(["nvidia/parakeet-tdt-0.6b-v3", "openai/whisper-large-v3"]);
    expect((await list("inpaint"))[0].model_spec.constraints).toMatchObject({ combineImages: true, maxInputImages: 3 });
    expect((await list("upscale"))[0].model_spec.pricing).toEqual({
      upscale: { "2x": { usd: 0.02, diem: 0.02 }, "4x": { usd: 0.08, diem: 0.08 } },
    });
  });
});

describe("/video/quote and /video/queue", () => {
  it("quotes the model's price per second at the resolution asked (nothing charged), and refuses what the model does not take", async () => {
    const before = rows("rich").length;
    expect((await post("/video/quote", { model: "emu-video", duration: "5s", resolution: "720p" })).json).toEqual({ quote: 0.35 });
    expect((await post("/video/quote", { model: "emu-video", duration: "4s" })).json).toEqual({ quote: 0.2 });
    const duration = await post("/video/quote", { model: "emu-video", duration: "7s" });
    expect(duration.status).toBe(400);
    expect(JSON.stringify(duration.json.details)).toContain("2s, 4s, 5s, 6s, 8s, 10s");
    expect((await post("/video/quote", { model: "emu-video", duration: "5s", resolution: "4k" })).status).toBe(400);
    expect((await post("/video/quote", { model: "nope", duration: "5s" })).status).toBe(404);
    expect((await post("/video/quote", { model: "emu-video", duration: "5s", prompt: "x" })).status).toBe(400); // closed: prompt is the queue's
    expect((await post("/video/quote", "model=emu-video", "rich", { "content-type": "application/x-www-form-urlencoded" })).status).toBe(
      415,
    );
    expect(rows("rich").length).toBe(before);
  });

  it("queues: {model, queue_id}, one CHARGE of the quote whose requestId is the queue id; the body is closed and checked against the model", async () => {
    const r = await post("/video/queue", {
      model: "emu-video",
      prompt: "waves on a beach",
      duration: "4s",
      resolution: "480p",
      aspect_ratio: "16:9",
    });
    expect(r.status).toBe(200);
    expect(Object.keys(r.json).sort()).toEqual(["model", "queue_id"]);
    expect(r.json.model).toBe("emu-video");
    expect(r.headers.get("x-service-model-id")).toBe("emu-video");
    const charge = rows("rich").find((e) => e.requestId === r.json.queue_id)!;
    expect(charge).toMatchObject({ type: "CHARGE", amount: -0.2, modelId: "emu-video", kind: "video" });
    expect((await post("/video/queue", { model: "emu-video", prompt: "x", duration: "4s", colour: "red" })).status).toBe(400);
    expect((await post("/video/queue", { model: "emu-video", duration: "4s" })).status).toBe(400); // prompt required
    expect((await post("/video/queue", { model: "emu-video", prompt: "x", duration: "4s", aspect_ratio: "21:9" })).status).toBe(400);
    expect((await post("/video/queue", { model: "emu-video-i2v", prompt: "x", duration: "4s" })).json.error).toMatch(
      /image_url is required/,
    );
    expect(
      (
        await post("/video/queue", {
          model: "emu-video",
          prompt: "x",
          duration: "4s",
          reference_image_urls: Array(10).fill("https://example.org/a.png"),
        })
      ).status,
    ).toBe(400);
  });

  it("a caller whose funds are short of the quote gets the live service's plain 402 (no code), nothing queued or charged", async () => {
    const before = rows("poor").length;
    const r = await post("/video/queue", { model: "emu-video", prompt: "x", duration: "4s" }, "poor");
    expect(r.status).toBe(402);
    expect(r.json.code).toBeUndefined();
    expect(r.json.error).toMatch(/^Insufficient USD or Diem balance/);
    expect(rows("poor").length).toBe(before);
  });
});

describe("/video/retrieve and /video/complete", () => {
  it("answers PROCESSING with the service's estimate while the job runs, then a real MP4 whose H.264 decodes; delete_media_on_completion leaves nothing", async () => {
    const { json } = await post("/video/queue", {
      model: "emu-video",
      prompt: "a sunset over the sea",
      duration: "5s",
      aspect_ratio: "9:16",
    });
    const running = await post("/video/retrieve", { model: "emu-video", queue_id: json.queue_id });
    expect(running.status).toBe(200);
    expect(running.json).toEqual({
      status: "PROCESSING",
      average_execution_time: expect.any(Number),
      execution_duration: expect.any(Number),
    });
    expect(running.json.average_execution_time).toBeGreaterThan(1_000);
    clock.advance(1_000); // the video's processing time
    const done = await post("/video/retrieve", { model: "emu-video", queue_id: json.queue_id, delete_media_on_completion: true });
    expect(done.type).toBe("video/mp4");
    const video = decodeMp4(done.bytes);
    expect(video).toMatchObject({ brand: "isom", width: 90, height: 160, durationSeconds: 5, fps: 8 });
    expect(video.sps).toMatchObject({ profile: 66 });
    expect(video.frames).toHaveLength(40);
    const keyframes = video.frames.filter((f) => f.idr);
    expect(keyframes).toHaveLength(5);
    // the camera pans: each second's picture differs from the last
    expect(Buffer.compare(Buffer.from(keyframes[0]!.luma!), Buffer.from(keyframes[1]!.luma!))).not.toBe(0);
    const gone = await post("/video/retrieve", { model: "emu-video", queue_id: json.queue_id });
    expect(gone.status).toBe(404);
  });

  it("complete refuses every queue id live (the media stays); jobs.videoComplete: \"delete\" (seed) deletes it; another caller's or an unknown queue id is 400 'Request ID is invalid.'", async () => {
    const { json } = await post("/video/queue", { model: "emu-video", prompt: "rain", duration: "2s" });
    expect((await post("/video/retrieve", { model: "emu-video", queue_id: json.queue_id }, "other")).json).toEqual({
      error: "Request ID is invalid.",
    });
    expect((await post("/video/retrieve", { model: "emu-video", queue_id: "no-such-id" })).status).toBe(400);
    expect((await post("/video/retrieve", { model: "emu-video-private", queue_id: json.queue_id })).status).toBe(400);
    clock.advance(1_000); // the video's processing time
    const refused = await post("/video/complete", { model: "emu-video", queue_id: json.queue_id });
    expect(refused.status).toBe(400);
    expect(refused.json.error).toMatch(/delete_media_on_completion/);
    expect((await post("/video/retrieve", { model: "emu-video", queue_id: json.queue_id })).type).toBe("video/mp4");
    const jobs = (emu.context.options.jobs ??= {});
    jobs.videoComplete = "delete";
    try {
      expect((await post("/video/complete", { model: "emu-video", queue_id: json.queue_id })).json).toEqual({ success: true });
      expect((await post("/video/retrieve", { model: "emu-video", queue_id: json.queue_id })).status).toBe(404);
    } finally {
      delete jobs.videoComplete;
    }
  });

  it("a privately hosted model answers a download_url at queue time and only COMPLETED on retrieve; the URL serves the MP4", async () => {
    const { json } = await post("/video/queue", { model: "emu-video-private", prompt: "a harbour", duration: "2s" });
    expect(json.download_url).toMatch(new RegExp(`^${emu.origin}/api/v1/video/download/[0-9a-f]{32}$`));
    expect((await fetch(json.download_url)).status).toBe(404); // not done yet
    clock.advance(1_000); // the video's processing time
    expect((await post("/video/retrieve", { model: "emu-video-private", queue_id: json.queue_id })).json).toEqual({ status: "COMPLETED" });
    const file = await fetch(json.download_url);
    expect(file.headers.get("content-type")).toBe("video/mp4");
    expect(decodeMp4(new Uint8Array(await file.arrayBuffer())).durationSeconds).toBe(2);
  });
});

describe("the failure knob", () => {
  it("a failing job is refunded when it fails (a REFUND row, before anyone asks) and retrieve answers the error every time", async () => {
    const { json } = await post("/video/queue", { model: "emu-video", prompt: "a storm [[emu:fail=422]]", duration: "4s" });
    const id = json.queue_id;
    expect(
      rows("rich")
        .filter((e) => e.requestId === id)
        .map((e) => e.type),
    ).toEqual(["CHARGE"]);
    // the job's end passes with no request: its timer refunds it (waited for, not timed: timers run late on a busy machine)
    clock.advance(1_000);
    for (const until = Date.now() + 10_000; !rows("rich").some((e) => e.requestId === id && e.type === "REFUND") && Date.now() < until; )
      await sleep(50);
    expect(
      rows("rich")
        .filter((e) => e.requestId === id)
        .map((e) => [e.type, e.amount]),
    ).toEqual([
      ["CHARGE", -0.2],
      ["REFUND", 0.2],
    ]);
    for (let i = 0; i < 2; i++) {
      const r = await post("/video/retrieve", { model: "emu-video", queue_id: id });
      expect(r.status).toBe(422);
      expect(r.json).toMatchObject({ error: expect.stringMatching(/content policy/), suggested_prompt: expect.any(String) });
    }
    expect(rows("rich").filter((e) => e.type === "REFUND" && e.requestId === id)).toHaveLength(1);
  });

  it("jobs.failures fails the first N queued with the status asked (default 500)", async () => {
    const own = testClock();
    const failing = await startEmulator({
      now: own.now,
      apiKeys: [{ key: "k", usd: 5, diem: 0 }],
      jobs: { processingMs: 50, failures: { first: 1 } },
    });
    try {
      const q = async () =>
        (
          await fetch(`${failing.url}/audio/queue`, {
            method: "POST",
            headers: { authorization: "Bearer k", "content-type": "application/json" },
            body: JSON.stringify({ model: "emu-music", prompt: "a short drum loop", duration_seconds: 3 }),
          })
        ).json();
      const first = await q();
      const second = await q();
      own.advance(50);
      const retrieve = (id: string) =>
        fetch(`${failing.url}/audio/retrieve`, {
          method: "POST",
          headers: { authorization: "Bearer k", "content-type": "application/json" },
          body: JSON.stringify({ model: "emu-music", queue_id: id }),
        });
      expect((await retrieve(first.queue_id)).status).toBe(500);
      expect((await retrieve(second.queue_id)).headers.get("content-type")).toBe("audio/wav");
      expect(failing.ledger.totals(failing.account("k")!)).toMatchObject({ charges: 2, refunds: 1, refunded: 0.03 });
    } finally {
      await failing.close();
    }
  });

  it("refuses bad job options at start", async () => {
    await expect(startEmulator({ jobs: { processingMs: -1 } })).rejects.toThrow(/processingMs/);
    await expect(startEmulator({ jobs: { failures: { status: 418 as 400 } } })).rejects.toThrow(/status/);
  });
});

describe("asynchronous audio: /audio/quote, /audio/queue, /audio/retrieve, /audio/complete", () => {
  it("quotes without credentials; duration_seconds only for models with durations; character_count for character-priced ones", async () => {
    const anon = await fetch(`${emu.url}/audio/quote`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "emu-music", duration_seconds: 20 }),
    });
    expect(await anon.json()).toEqual({ quote: 0.2 });
    expect((await post("/audio/quote", { model: "emu-music", duration_seconds: "30" })).json).toEqual({ quote: 0.3 });
    expect((await post("/audio/quote", { model: "emu-music" })).json).toEqual({ quote: 0.1 }); // the default 10 s
    expect((await post("/audio/quote", { model: "emu-narrator", duration_seconds: 5 })).status).toBe(400);
    expect((await post("/audio/quote", { model: "emu-narrator" })).status).toBe(400);
    expect((await post("/audio/quote", { model: "emu-narrator", character_count: 2000 })).json).toEqual({ quote: 0.6 });
    expect((await post("/audio/quote", { model: "emu-music", tempo: 120 })).status).toBe(400);
  });

  it("queues {model, queue_id, status: QUEUED}; an option the model lacks is a 400 (voices listed); the result is a real WAV with its headers", async () => {
    expect((await post("/audio/queue", { model: "emu-music", prompt: "too short" })).status).toBe(400); // min 10 characters
    expect((await post("/audio/queue", { model: "emu-music", prompt: "a slow piano piece", lyrics_prompt: "la la" })).status).toBe(400);
    expect((await post("/audio/queue", { model: "emu-music", prompt: "a slow piano piece", duration_seconds: 61 })).status).toBe(400);
    const voice = await post("/audio/queue", { model: "emu-narrator", prompt: "Hello", voice: "Nobody" });
    expect(voice.json.details.supported_voices).toEqual(["Aria", "Roger", "Sarah"]);
    const r = await post("/audio/queue", { model: "emu-music", prompt: "a slow piano piece", duration_seconds: 4, loop: true });
    expect(r.json).toEqual({ model: "emu-music", queue_id: expect.any(String), status: "QUEUED" });
    expect(rows("rich").find((e) => e.requestId === r.json.queue_id)).toMatchObject({ type: "CHARGE", amount: -0.04, kind: "audio-job" });
    expect((await post("/audio/retrieve", { model: "emu-music", queue_id: r.json.queue_id })).json.status).toBe("PROCESSING");
    clock.advance(600); // the audio's processing time
    const done = await post("/audio/retrieve", { model: "emu-music", queue_id: r.json.queue_id });
    expect(done.type).toBe("audio/wav");
    expect(done.headers.get("x-service-audio-format")).toBe("wav");
    expect(decodeWav(done.bytes).durationSeconds).toBeCloseTo(4, 3);
    expect((await post("/audio/complete", { model: "emu-music", queue_id: r.json.queue_id })).json).toEqual({ success: true });
    expect((await post("/audio/retrieve", { model: "emu-music", queue_id: r.json.queue_id })).status).toBe(404);
  });
});

describe("the lost-answer fault", () => {
  it("loseAnswers on /video/queue: the job is queued and charged, then the connection dies before a byte of the answer", async () => {
    emu.setFaults({ paths: ["/video/queue"], loseAnswers: { first: 1 } });
    try {
      const before = rows("rich").length;
      await expect(post("/video/queue", { model: "emu-video", prompt: "lost", duration: "2s" })).rejects.toThrow();
      const charge = rows("rich").slice(before);
      expect(charge.map((e) => [e.type, e.modelId])).toEqual([["CHARGE", "emu-video"]]);
      // only the first: the next answer arrives
      expect((await post("/video/queue", { model: "emu-video", prompt: "found", duration: "2s" })).status).toBe(200);
    } finally {
      emu.setFaults({});
    }
  });
});
