/**
 * Agent tools beyond crypto: web search and scrape, image generation and editing, text to speech, transcription,
 * video and audio jobs; the operations under them.
 */
export { WebSearchTool, type WebSearchToolOptions } from "./web-search.js";
export { WebScrapeTool, DEFAULT_SCRAPE_MAX_CHARS, type WebScrapeToolOptions } from "./web-scrape.js";
export { ImageGenerationTool, type ImageGenerationToolOptions } from "./image-generation.js";
export { TextToSpeechTool, type TextToSpeechToolOptions } from "./text-to-speech.js";
export { TranscriptionTool, type TranscriptionToolOptions } from "./transcription.js";
export { ImageEditTool, type ImageEditToolOptions } from "./image-edit.js";
export {
  JobTool,
  VideoGenerationTool,
  AudioGenerationTool,
  JOB_PROGRESS_EVENT,
  type JobToolOptions,
  type VideoGenerationToolOptions,
  type AudioGenerationToolOptions,
} from "./job-tool.js";
export { assertPublicHttpUrl, blockedIPv4, blockedIPv6, UnsafeUrlError } from "./url-guard.js";
export type { ServiceToolConnection } from "./shared.js";
export {
  webSearch,
  webScrape,
  generateImage,
  simpleGenerateImage,
  createSpeech,
  listVoices,
  createClonedVoice,
  sniffImage,
  wavDurationSeconds,
  WEB_SEARCH_PROVIDERS,
  SPEECH_FORMATS,
  type WebSearchParameters,
  type WebSearchProvider,
  type WebSearchResult,
  type WebScrapeResult,
  type GenerateImageParameters,
  type GenerateImageResult,
  type GeneratedImage,
  type SimpleGenerateImageParameters,
  type CreateSpeechParameters,
  type SpeechFormat,
  type SpeechResult,
} from "./api.js";
