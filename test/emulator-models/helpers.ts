/** Plain-fetch helpers for the chat route's HTTP tests (the server is tested, not a client). */
import { startEmulator, type Emulator } from "langchain-service-emulator";
import type { EmulatorOptions } from "../../packages/langchain-service-emulator/src/types.js";

export const KEY = "test-key-models";

export async function startModelsEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  return startEmulator({ apiKeys: [{ key: KEY, usd: 50, diem: 0 }], rateLimits: { enabled: false }, ...options });
}

export async function chat(
  emu: Emulator,
  body: unknown,
  key = KEY,
): Promise<{ status: number; headers: Headers; json: any; text: string }> {
  const res = await fetch(`${emu.url}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, text };
}

/** The `data:` payloads of an SSE body; `[DONE]` stays a string. */
export function sseEvents(text: string): any[] {
  return text
    .split("\n\n")
    .filter((block) => block.startsWith("data: "))
    .map((block) => block.slice(6))
    .map((data) => (data === "[DONE]" ? data : JSON.parse(data)));
}

export async function chatStream(
  emu: Emulator,
  body: Record<string, unknown>,
): Promise<{ status: number; headers: Headers; events: any[] }> {
  const res = await fetch(`${emu.url}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: true }),
  });
  return { status: res.status, headers: res.headers, events: sseEvents(await res.text()) };
}

/** Joins streamed content of choice `index`. */
export function streamedContent(events: any[], index = 0): string {
  return events
    .filter((e) => e !== "[DONE]" && e.choices?.length)
    .flatMap((e) => e.choices.filter((c: any) => c.index === index))
    .map((c: any) => c.delta?.content ?? "")
    .join("");
}

export const user = (content: unknown) => ({ role: "user", content });
