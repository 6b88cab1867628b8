/** The MIME type a transcription upload of each audio container is sent as (the service's accepted list). */
import type { AudioContainer } from "langchain-service";

export const AUDIO_MIME_TYPES: Readonly<Record<AudioContainer, string>> = {
  wav: "audio/wav",
  flac: "audio/flac",
  mp3: "audio/mpeg",
  ogg: "audio/ogg",
  webm: "audio/webm",
  m4a: "audio/mp4",
  aac: "audio/aac",
};
