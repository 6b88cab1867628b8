/** Media beyond generation: transcription, long-running video and audio jobs, image editing; their errors. */
export * from "./errors.js";
export {
  quoteJob,
  queueJob,
  retrieveJob,
  completeJob,
  VIDEO_DURATIONS,
  VIDEO_ASPECT_RATIOS,
  type VideoDuration,
  type VideoAspectRatio,
  type VideoJobParameters,
  type AudioJobParameters,
  type JobQuote,
  type QueuedJob,
  type JobStatus,
  type JobRef,
} from "./jobs.js";
export { runJob, POLL_FLOOR_MS, type JobProgress, type JobResult, type RunJobOptions } from "./job-runner.js";
export { jobsApi, type JobsApi } from "./jobs-api.js";
export {
  transcribe,
  DEFAULT_TRANSCRIPTION_MODEL,
  MAX_TRANSCRIPTION_BYTES,
  type TranscribeOptions,
  type TranscriptionResult,
  type TimedWord,
  type TimedSegment,
  type TimedChar,
} from "./transcription.js";
export {
  editImage,
  multiEditImage,
  upscaleImage,
  removeBackground,
  IMAGE_EDIT_ASPECT_RATIOS,
  type ImageInput,
  type EditedImage,
  type EditImageParameters,
  type MultiEditImageParameters,
  type UpscaleImageParameters,
  type RemoveBackgroundParameters,
} from "./images.js";
export { sniffAudio, sniffVideo, AUDIO_MIME_TYPES, type AudioContainer } from "./sniff.js";
export type { MediaInput } from "./input.js";
