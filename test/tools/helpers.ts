/** Shared setup for the tool tests: clients over loopback that count what reaches the wire, and file checks. */
import { inflateSync } from "node:zlib";
import type { Emulator } from "langchain-service-emulator";
import { countingClient as countingRpcClient, type CountingClient } from "../crypto-rpc/helpers.js";
import { crc32 } from "../../packages/langchain-service-emulator/src/media/png.js";

export type { CountingClient };

/** The crypto tests' counting client, with the options (key or wallet) in one object. */
export function countingClient(emu: Emulator, options: Record<string, unknown> = {}): CountingClient {
  return countingRpcClient(emu, options.apiKey as string, options);
}

/** Invokes a tool as an agent would (a tool call) and returns its ToolMessage's parsed content and artifact. */
export async function callTool(
  tool: { invoke(input: unknown, config?: unknown): Promise<unknown> },
  name: string,
  args: Record<string, unknown>,
  config?: unknown,
) {
  const message = (await tool.invoke({ type: "tool_call", id: `call_${name}`, name, args }, config)) as { content: string; artifact: any };
  return { text: message.content, json: JSON.parse(message.content), artifact: message.artifact };
}

export interface DecodedPng {
  width: number;
  height: number;
  bitDepth: number;
  colorType: number;
  /** inflated IDAT: one filter byte + width*3 (RGB) or width*4 (RGBA, colour type 6) bytes per row */
  raw: Buffer;
  chunks: string[];
}

/** Decodes a PNG for real: signature, every chunk's CRC, IHDR, IDAT inflated to the size IHDR implies. Throws otherwise. */
export function decodePng(bytes: Uint8Array): DecodedPng {
  const b = Buffer.from(bytes);
  if (!b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) throw new Error("bad PNG signature");
  const chunks: string[] = [];
  const idat: Buffer[] = [];
  let ihdr: Buffer | undefined;
  let at = 8;
  while (at < b.length) {
    const length = b.readUInt32BE(at);
    const type = b.toString("latin1", at + 4, at + 8);
    const data = b.subarray(at + 8, at + 8 + length);
    const crc = b.readUInt32BE(at + 8 + length);
    if (crc32(b.subarray(at + 4, at + 8 + length)) !== crc) throw new Error(`bad CRC in ${type}`);
    chunks.push(type);
    if (type === "IHDR") ihdr = Buffer.from(data);
    if (type === "IDAT") idat.push(Buffer.from(data));
    at += 12 + length;
    if (type === "IEND") break;
  }
  if (!ihdr || chunks[0] !== "IHDR" || chunks.at(-1) !== "IEND") throw new Error("IHDR first and IEND last are required");
  const width = ihdr.readUInt32BE(0);
  const height = ihdr.readUInt32BE(4);
  const channels = ihdr[9] === 6 ? 4 : 3;
  const raw = inflateSync(Buffer.concat(idat));
  if (raw.length !== (width * channels + 1) * height)
    throw new Error(`IDAT inflates to ${raw.length}, expected ${(width * channels + 1) * height}`);
  return { width, height, bitDepth: ihdr[8]!, colorType: ihdr[9]!, raw, chunks };
}

export interface DecodedWav {
  channels: number;
  sampleRate: number;
  bitsPerSample: number;
  byteRate: number;
  dataBytes: number;
  durationSeconds: number;
}

/** Reads a RIFF/WAVE header field by field (PCM), checking the sizes add up. */
export function decodeWav(bytes: Uint8Array): DecodedWav {
  const b = Buffer.from(bytes);
  if (b.toString("latin1", 0, 4) !== "RIFF" || b.toString("latin1", 8, 12) !== "WAVE") throw new Error("not RIFF/WAVE");
  if (b.readUInt32LE(4) !== b.length - 8) throw new Error("RIFF size does not match the file");
  if (b.toString("latin1", 12, 16) !== "fmt " || b.readUInt16LE(20) !== 1) throw new Error("not PCM");
  const channels = b.readUInt16LE(22);
  const sampleRate = b.readUInt32LE(24);
  const byteRate = b.readUInt32LE(28);
  const blockAlign = b.readUInt16LE(32);
  const bitsPerSample = b.readUInt16LE(34);
  if (byteRate !== (sampleRate * channels * bitsPerSample) / 8 || blockAlign !== (channels * bitsPerSample) / 8)
    throw new Error("inconsistent fmt");
  if (b.toString("latin1", 36, 40) !== "data") throw new Error("no data chunk");
  const dataBytes = b.readUInt32LE(40);
  if (dataBytes !== b.length - 44) throw new Error("data size does not match");
  return { channels, sampleRate, bitsPerSample, byteRate, dataBytes, durationSeconds: dataBytes / byteRate };
}
