/**
 * The emulator's deterministic "video model": the prompt's picture (./png.ts) panned across a few seconds, as a
 * real MP4 (ISO BMFF: ftyp, moov with one H.264 track, mdat) that players open.
 *
 * Written by hand: no kept dependency encodes video, and a valid H.264 stream needs no transform coding when every
 * macroblock is I_PCM (raw samples; the standard's lossless escape). Each second starts with an IDR picture of the
 * panned frame; the pictures between are P pictures whose macroblocks are all skipped (they repeat the last
 * picture), so a 5 s clip at 160×90 is about 120 KB. Constrained Baseline, CAVLC, deblocking off, 8 fps.
 */
import { drawPicture } from "./png.js";

export const VIDEO_FPS = 8;

/** The frame size of an aspect ratio (the long side 160 pixels; even sizes, as 4:2:0 needs). */
export function frameSize(aspectRatio: string | undefined): { width: number; height: number } {
  const sizes: Record<string, [number, number]> = {
    "16:9": [160, 90],
    "9:16": [90, 160],
    "1:1": [120, 120],
    "4:3": [160, 120],
    "3:4": [120, 160],
    "3:2": [150, 100],
    "2:3": [100, 150],
    "21:9": [168, 72],
  };
  const [width, height] = sizes[aspectRatio ?? "16:9"] ?? sizes["16:9"]!;
  return { width, height };
}

// --- H.264 bitstream ---------------------------------------------------------------------------------------

/** MSB-first bit writer with Exp-Golomb codes (H.264 7.2 / 9.1). */
class Bits {
  readonly out: number[] = [];
  #cur = 0;
  #n = 0;

  bit(b: number): void {
    this.#cur = (this.#cur << 1) | (b & 1);
    if (++this.#n === 8) {
      this.out.push(this.#cur);
      this.#cur = 0;
      this.#n = 0;
    }
  }
  u(value: number, bits: number): void {
    for (let i = bits - 1; i >= 0; i--) this.bit(Math.floor(value / 2 ** i) % 2);
  }
  ue(value: number): void {
    const x = value + 1;
    const len = 32 - Math.clz32(x);
    this.u(0, len - 1);
    this.u(x, len);
  }
  se(value: number): void {
    this.ue(value <= 0 ? -2 * value : 2 * value - 1);
  }
  align(): void {
    while (this.#n !== 0) this.bit(0);
  }
  /** bytes once aligned */
  bytes(data: ArrayLike<number>): void {
    if (this.#n !== 0) throw new Error("not byte aligned");
    for (let i = 0; i < data.length; i++) this.out.push(data[i]!);
  }
  /** rbsp_trailing_bits: a stop bit, then zeros to the byte boundary */
  trailing(): Uint8Array {
    this.bit(1);
    this.align();
    return Uint8Array.from(this.out);
  }
}

/** A NAL unit: its header byte, then the RBSP with emulation prevention (00 00 0x -> 00 00 03 0x for x ≤ 3). */
function nal(refIdc: number, type: number, rbsp: Uint8Array): Buffer {
  const out: number[] = [(refIdc << 5) | type];
  let zeros = 0;
  for (const b of rbsp) {
    if (zeros >= 2 && b <= 3) {
      out.push(3);
      zeros = 0;
    }
    out.push(b);
    zeros = b === 0 ? zeros + 1 : 0;
  }
  return Buffer.from(out);
}

interface Geometry {
  width: number;
  height: number;
  mbWidth: number;
  mbHeight: number;
}

function sps(g: Geometry): Buffer {
  const w = new Bits();
  w.u(66, 8); // profile_idc: Baseline
  w.u(0xc0, 8); // constraint_set0 and set1: Constrained Baseline
  w.u(30, 8); // level_idc 3.0
  w.ue(0); // seq_parameter_set_id
  w.ue(4); // log2_max_frame_num_minus4: frame_num has 8 bits
  w.ue(2); // pic_order_cnt_type 2: output order is decoding order
  w.ue(1); // max_num_ref_frames
  w.u(0, 1); // gaps_in_frame_num_value_allowed_flag
  w.ue(g.mbWidth - 1);
  w.ue(g.mbHeight - 1);
  w.u(1, 1); // frame_mbs_only_flag
  w.u(1, 1); // direct_8x8_inference_flag
  const cropRight = g.mbWidth * 16 - g.width;
  const cropBottom = g.mbHeight * 16 - g.height;
  if (cropRight || cropBottom) {
    w.u(1, 1); // frame_cropping_flag, in units of 2 luma samples (4:2:0)
    w.ue(0);
    w.ue(cropRight / 2);
    w.ue(0);
    w.ue(cropBottom / 2);
  } else w.u(0, 1);
  w.u(0, 1); // vui_parameters_present_flag
  return nal(3, 7, w.trailing());
}

function pps(): Buffer {
  const w = new Bits();
  w.ue(0); // pic_parameter_set_id
  w.ue(0); // seq_parameter_set_id
  w.u(0, 1); // entropy_coding_mode_flag: CAVLC
  w.u(0, 1); // bottom_field_pic_order_in_frame_present_flag
  w.ue(0); // num_slice_groups_minus1
  w.ue(0); // num_ref_idx_l0_default_active_minus1
  w.ue(0); // num_ref_idx_l1_default_active_minus1
  w.u(0, 1); // weighted_pred_flag
  w.u(0, 2); // weighted_bipred_idc
  w.se(0); // pic_init_qp_minus26
  w.se(0); // pic_init_qs_minus26
  w.se(0); // chroma_qp_index_offset
  w.u(1, 1); // deblocking_filter_control_present_flag (the slices turn it off)
  w.u(0, 1); // constrained_intra_pred_flag
  w.u(0, 1); // redundant_pic_cnt_present_flag
  return nal(3, 8, w.trailing());
}

/** A frame in 4:2:0: Y (coded width × height), then Cb and Cr at half size. */
interface Yuv {
  y: Uint8Array;
  cb: Uint8Array;
  cr: Uint8Array;
}

/** BT.601 limited range, 2×2 chroma averages; the picture's edge is repeated into the coded area past the crop. */
function toYuv(rgb: Uint8Array, g: Geometry): Yuv {
  const cw = g.mbWidth * 16;
  const ch = g.mbHeight * 16;
  const y = new Uint8Array(cw * ch);
  const cb = new Uint8Array((cw / 2) * (ch / 2));
  const cr = new Uint8Array((cw / 2) * (ch / 2));
  const px = (x: number, yy: number) => (Math.min(yy, g.height - 1) * g.width + Math.min(x, g.width - 1)) * 3;
  // samples stay within 1..254: the oldest decoders refuse a PCM sample of 0
  const clamp = (v: number) => Math.max(1, Math.min(254, Math.round(v)));
  for (let j = 0; j < ch; j++) {
    for (let i = 0; i < cw; i++) {
      const p = px(i, j);
      y[j * cw + i] = clamp(16 + (65.738 * rgb[p]! + 129.057 * rgb[p + 1]! + 25.064 * rgb[p + 2]!) / 256);
    }
  }
  for (let j = 0; j < ch / 2; j++) {
    for (let i = 0; i < cw / 2; i++) {
      let r = 0;
      let gg = 0;
      let b = 0;
      for (const [dx, dy] of [
        [0, 0],
        [1, 0],
        [0, 1],
        [1, 1],
      ] as const) {
        const p = px(2 * i + dx, 2 * j + dy);
        r += rgb[p]!;
        gg += rgb[p + 1]!;
        b += rgb[p + 2]!;
      }
      r /= 4;
      gg /= 4;
      b /= 4;
      cb[j * (cw / 2) + i] = clamp(128 + (-37.945 * r - 74.494 * gg + 112.439 * b) / 256);
      cr[j * (cw / 2) + i] = clamp(128 + (112.439 * r - 94.154 * gg - 18.285 * b) / 256);
    }
  }
  return { y, cb, cr };
}

/** An IDR picture of I_PCM macroblocks. */
function idrSlice(frame: Yuv, g: Geometry, idrPicId: number): Buffer {
  const w = new Bits();
  w.ue(0); // first_mb_in_slice
  w.ue(7); // slice_type: I (every slice of the picture)
  w.ue(0); // pic_parameter_set_id
  w.u(0, 8); // frame_num
  w.ue(idrPicId);
  w.u(0, 1); // no_output_of_prior_pics_flag
  w.u(0, 1); // long_term_reference_flag
  w.se(0); // slice_qp_delta
  w.ue(1); // disable_deblocking_filter_idc: off
  const cw = g.mbWidth * 16;
  const block = new Uint8Array(384);
  for (let my = 0; my < g.mbHeight; my++) {
    for (let mx = 0; mx < g.mbWidth; mx++) {
      w.ue(25); // mb_type I_PCM
      w.align(); // pcm_alignment_zero_bits
      let k = 0;
      for (let j = 0; j < 16; j++) for (let i = 0; i < 16; i++) block[k++] = frame.y[(my * 16 + j) * cw + mx * 16 + i]!;
      for (const plane of [frame.cb, frame.cr]) {
        for (let j = 0; j < 8; j++) for (let i = 0; i < 8; i++) block[k++] = plane[(my * 8 + j) * (cw / 2) + mx * 8 + i]!;
      }
      w.bytes(block);
    }
  }
  return nal(3, 5, w.trailing());
}

/** A P picture whose macroblocks are all skipped: it repeats the picture before it. */
function skipSlice(g: Geometry, frameNum: number): Buffer {
  const w = new Bits();
  w.ue(0); // first_mb_in_slice
  w.ue(5); // slice_type: P (every slice of the picture)
  w.ue(0); // pic_parameter_set_id
  w.u(frameNum % 256, 8); // frame_num
  w.u(0, 1); // num_ref_idx_active_override_flag
  w.u(0, 1); // ref_pic_list_modification_flag_l0
  w.u(0, 1); // adaptive_ref_pic_marking_mode_flag: sliding window
  w.se(0); // slice_qp_delta
  w.ue(1); // disable_deblocking_filter_idc: off
  w.ue(g.mbWidth * g.mbHeight); // mb_skip_run: every macroblock
  return nal(2, 1, w.trailing());
}

// --- MP4 (ISO/IEC 14496-12 and -15) --------------------------------------------------------------------------

function u8(n: number): Buffer {
  return Buffer.from([n & 0xff]);
}
function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n & 0xffff);
  return b;
}
function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}
function box(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  return Buffer.concat([u32(8 + body.length), Buffer.from(type, "latin1"), body]);
}
function fullBox(type: string, version: number, flags: number, ...parts: Buffer[]): Buffer {
  return box(type, u32(((version & 0xff) << 24) | (flags & 0xffffff)), ...parts);
}
const MATRIX = Buffer.concat([0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000].map(u32));

interface Track {
  width: number;
  height: number;
  sps: Buffer;
  pps: Buffer;
  samples: Buffer[];
  syncSamples: number[];
  fps: number;
}

function moov(t: Track, mdatOffset: number): Buffer {
  const frames = t.samples.length;
  const durationMs = Math.round((frames * 1000) / t.fps);
  const mvhd = fullBox(
    "mvhd",
    0,
    0,
    u32(0),
    u32(0),
    u32(1000),
    u32(durationMs),
    u32(0x00010000),
    u16(0x0100),
    u16(0),
    u32(0),
    u32(0),
    MATRIX,
    Buffer.alloc(24),
    u32(2),
  );
  const tkhd = fullBox(
    "tkhd",
    0,
    3,
    u32(0),
    u32(0),
    u32(1),
    u32(0),
    u32(durationMs),
    u32(0),
    u32(0),
    u16(0),
    u16(0),
    u16(0),
    u16(0),
    MATRIX,
    u32(t.width * 65536),
    u32(t.height * 65536),
  );
  const mdhd = fullBox("mdhd", 0, 0, u32(0), u32(0), u32(t.fps), u32(frames), u16(0x55c4 /* und */), u16(0));
  const hdlr = fullBox("hdlr", 0, 0, u32(0), Buffer.from("vide", "latin1"), Buffer.alloc(12), Buffer.from("VideoHandler\0", "latin1"));
  const avcC = box("avcC", u8(1), t.sps.subarray(1, 4), u8(0xff), u8(0xe1), u16(t.sps.length), t.sps, u8(1), u16(t.pps.length), t.pps);
  const compressor = Buffer.alloc(32);
  compressor.write("\u0010service emulator", 0, "latin1"); // a Pascal string: its length, then the name
  const avc1 = box(
    "avc1",
    Buffer.alloc(6),
    u16(1), // data_reference_index
    Buffer.alloc(16),
    u16(t.width),
    u16(t.height),
    u32(0x00480000),
    u32(0x00480000),
    u32(0),
    u16(1), // frame_count
    compressor,
    u16(0x0018),
    u16(0xffff),
    avcC,
  );
  const stbl = box(
    "stbl",
    fullBox("stsd", 0, 0, u32(1), avc1),
    fullBox("stts", 0, 0, u32(1), u32(frames), u32(1)),
    fullBox("stss", 0, 0, u32(t.syncSamples.length), ...t.syncSamples.map(u32)),
    fullBox("stsc", 0, 0, u32(1), u32(1), u32(frames), u32(1)),
    fullBox("stsz", 0, 0, u32(0), u32(frames), ...t.samples.map((s) => u32(s.length))),
    fullBox("stco", 0, 0, u32(1), u32(mdatOffset)),
  );
  const minf = box("minf", fullBox("vmhd", 0, 1, Buffer.alloc(8)), box("dinf", fullBox("dref", 0, 0, u32(1), fullBox("url ", 0, 1))), stbl);
  return box("moov", mvhd, box("trak", tkhd, box("mdia", mdhd, hdlr, minf)));
}

/**
 * The emulator's video: `seconds` of the prompt's picture panning left, `aspectRatio` sized (160 pixels on the long
 * side), as MP4 bytes. Same prompt, seconds and aspect ratio: same bytes.
 */
export function videoFor(prompt: string, seconds: number, aspectRatio?: string): Buffer {
  const { width, height } = frameSize(aspectRatio);
  const g: Geometry = { width, height, mbWidth: Math.ceil(width / 16), mbHeight: Math.ceil(height / 16) };
  const picture = drawPicture(prompt, width, height);
  const frames = Math.max(1, Math.round(seconds * VIDEO_FPS));
  const samples: Buffer[] = [];
  const syncSamples: number[] = [];
  const lengthPrefixed = (n: Buffer) => Buffer.concat([u32(n.length), n]);
  for (let f = 0; f < frames; f++) {
    const inGop = f % VIDEO_FPS;
    if (inGop === 0) {
      // the camera pans: each second the picture moves on by a twelfth of its width (wrapping around)
      const shift = Math.round(((f / VIDEO_FPS) * width) / 12) % width;
      const panned = new Uint8Array(picture.length);
      for (let y = 0; y < height; y++) {
        const row = y * width * 3;
        for (let x = 0; x < width; x++)
          panned.set(picture.subarray(row + ((x + shift) % width) * 3, row + ((x + shift) % width) * 3 + 3), row + x * 3);
      }
      samples.push(lengthPrefixed(idrSlice(toYuv(panned, g), g, (f / VIDEO_FPS) % 2)));
      syncSamples.push(f + 1);
    } else {
      samples.push(lengthPrefixed(skipSlice(g, inGop)));
    }
  }
  const track: Track = { width, height, sps: sps(g), pps: pps(), samples, syncSamples, fps: VIDEO_FPS };
  const ftyp = box("ftyp", Buffer.from("isom", "latin1"), u32(0x200), Buffer.from("isomiso2avc1mp41", "latin1"));
  // moov's size does not depend on the offset it carries: measure it once, then write it with mdat's payload offset
  const moovSize = moov(track, 0).length;
  const mdat = box("mdat", ...samples);
  return Buffer.concat([ftyp, moov(track, ftyp.length + moovSize + 8), mdat]);
}
