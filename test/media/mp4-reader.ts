/**
 * Reads an MP4 for real, for the tests: every box's size within its parent, the track's sample table against the
 * bytes of `mdat` (chunk offset, sample sizes, sync samples, durations), the `avcC` parameter sets parsed as H.264
 * (Exp-Golomb, emulation prevention removed), and every sample's slice decoded to the end of its bits: I_PCM
 * macroblocks of an IDR picture (the luma plane reconstructed), or a P picture's skip run. Throws on anything off.
 */

export interface Box {
  type: string;
  start: number;
  end: number;
  /** where the payload starts (after size and type) */
  body: number;
}

/** The boxes directly inside [start, end), each checked to fit. */
export function boxes(b: Buffer, start = 0, end = b.length): Box[] {
  const out: Box[] = [];
  for (let at = start; at < end; ) {
    if (at + 8 > end) throw new Error(`a box header runs past its parent at ${at}`);
    const size = b.readUInt32BE(at);
    const type = b.toString("latin1", at + 4, at + 8);
    if (size < 8 || at + size > end) throw new Error(`box ${type} at ${at} has size ${size} beyond its parent (${end})`);
    out.push({ type, start: at, end: at + size, body: at + 8 });
    at += size;
  }
  return out;
}

function child(b: Buffer, parent: Box, type: string, skip = 0): Box {
  const found = boxes(b, parent.body + skip, parent.end).find((x) => x.type === type);
  if (!found) throw new Error(`no ${type} in ${parent.type}`);
  return found;
}

/** MSB-first bit reader over an RBSP. */
class BitReader {
  pos = 0;
  constructor(readonly data: Uint8Array) {}
  bit(): number {
    if (this.pos >= this.data.length * 8) throw new Error("read past the end of the RBSP");
    const v = (this.data[this.pos >> 3]! >> (7 - (this.pos & 7))) & 1;
    this.pos++;
    return v;
  }
  u(n: number): number {
    let v = 0;
    for (let i = 0; i < n; i++) v = v * 2 + this.bit();
    return v;
  }
  ue(): number {
    let zeros = 0;
    while (this.bit() === 0) if (++zeros > 31) throw new Error("bad Exp-Golomb code");
    return 2 ** zeros - 1 + this.u(zeros);
  }
  se(): number {
    const k = this.ue();
    return k % 2 === 1 ? (k + 1) / 2 : -k / 2;
  }
  aligned(): boolean {
    return (this.pos & 7) === 0;
  }
  /** rbsp_trailing_bits: a 1, zeros to the byte boundary, and nothing after */
  trailing(): void {
    if (this.bit() !== 1) throw new Error("no rbsp stop bit where the syntax ends");
    while (!this.aligned()) if (this.bit() !== 0) throw new Error("non-zero alignment bits");
    if (this.pos !== this.data.length * 8) throw new Error(`${this.data.length - this.pos / 8} bytes after the RBSP's end`);
  }
}

/** A NAL unit's header and RBSP (emulation-prevention bytes removed; a forbidden 00 00 0x sequence throws). */
function rbspOf(nal: Uint8Array): { refIdc: number; type: number; rbsp: Uint8Array } {
  if (nal[0]! & 0x80) throw new Error("forbidden_zero_bit set");
  const out: number[] = [];
  let zeros = 0;
  for (let i = 1; i < nal.length; i++) {
    const byte = nal[i]!;
    if (zeros >= 2 && byte === 3) {
      zeros = 0;
      continue;
    }
    if (zeros >= 2 && byte < 3) throw new Error("a start code inside a NAL unit (emulation prevention missing)");
    out.push(byte);
    zeros = byte === 0 ? zeros + 1 : 0;
  }
  return { refIdc: (nal[0]! >> 5) & 3, type: nal[0]! & 31, rbsp: Uint8Array.from(out) };
}

export interface Sps {
  profile: number;
  level: number;
  log2MaxFrameNum: number;
  mbWidth: number;
  mbHeight: number;
  width: number;
  height: number;
}

function parseSps(nal: Uint8Array): Sps {
  const { type, rbsp } = rbspOf(nal);
  if (type !== 7) throw new Error(`SPS NAL type ${type}`);
  const r = new BitReader(rbsp);
  const profile = r.u(8);
  r.u(8);
  const level = r.u(8);
  if (r.ue() !== 0) throw new Error("sps id");
  if (profile >= 100) throw new Error("high profiles are not expected here");
  const log2MaxFrameNum = r.ue() + 4;
  const pocType = r.ue();
  if (pocType !== 2) throw new Error(`pic_order_cnt_type ${pocType}`);
  r.ue(); // max_num_ref_frames
  r.u(1);
  const mbWidth = r.ue() + 1;
  const mbHeight = r.ue() + 1;
  if (r.u(1) !== 1) throw new Error("frame_mbs_only_flag must be 1");
  r.u(1);
  let width = mbWidth * 16;
  let height = mbHeight * 16;
  if (r.u(1)) {
    const [left, right, top, bottom] = [r.ue(), r.ue(), r.ue(), r.ue()];
    width -= 2 * (left + right);
    height -= 2 * (top + bottom);
  }
  if (r.u(1)) throw new Error("no VUI expected");
  r.trailing();
  return { profile, level, log2MaxFrameNum, mbWidth, mbHeight, width, height };
}

function parsePps(nal: Uint8Array): { deblockingControl: boolean } {
  const { type, rbsp } = rbspOf(nal);
  if (type !== 8) throw new Error(`PPS NAL type ${type}`);
  const r = new BitReader(rbsp);
  r.ue();
  r.ue();
  if (r.u(1) !== 0) throw new Error("CABAC not expected");
  r.u(1);
  if (r.ue() !== 0) throw new Error("slice groups not expected");
  r.ue();
  r.ue();
  r.u(1);
  r.u(2);
  r.se();
  r.se();
  r.se();
  const deblockingControl = r.u(1) === 1;
  r.u(1);
  if (r.u(1)) throw new Error("redundant_pic_cnt not expected");
  r.trailing();
  return { deblockingControl };
}

export interface DecodedFrame {
  idr: boolean;
  frameNum: number;
  /** the luma plane (coded size) of an IDR picture; undefined for a skipped P picture */
  luma?: Uint8Array;
}

function decodeSlice(nal: Uint8Array, sps: Sps, deblockingControl: boolean): DecodedFrame {
  const { refIdc, type, rbsp } = rbspOf(nal);
  if (type !== 5 && type !== 1) throw new Error(`slice NAL type ${type}`);
  const r = new BitReader(rbsp);
  if (r.ue() !== 0) throw new Error("first_mb_in_slice");
  const sliceType = r.ue() % 5;
  r.ue();
  const frameNum = r.u(sps.log2MaxFrameNum);
  const idr = type === 5;
  if (idr) r.ue(); // idr_pic_id
  if (sliceType === 0) {
    if (r.u(1)) throw new Error("num_ref_idx_active_override not expected");
    if (r.u(1)) throw new Error("ref list modification not expected");
  }
  if (refIdc !== 0) {
    if (idr) r.u(2);
    else if (r.u(1)) throw new Error("adaptive marking not expected");
  }
  r.se(); // slice_qp_delta
  if (deblockingControl && r.ue() !== 1) throw new Error("deblocking expected off");
  const mbs = sps.mbWidth * sps.mbHeight;
  if (sliceType === 0) {
    if (idr) throw new Error("an IDR picture must be intra");
    const run = r.ue();
    if (run !== mbs) throw new Error(`skip run ${run}, expected ${mbs}`);
    r.trailing();
    return { idr, frameNum };
  }
  if (sliceType !== 2) throw new Error(`slice type ${sliceType}`);
  const cw = sps.mbWidth * 16;
  const luma = new Uint8Array(cw * sps.mbHeight * 16);
  for (let mb = 0; mb < mbs; mb++) {
    const mbType = r.ue();
    if (mbType !== 25) throw new Error(`mb_type ${mbType}, expected I_PCM`);
    while (!r.aligned()) if (r.bit() !== 0) throw new Error("pcm alignment bit set");
    const mx = mb % sps.mbWidth;
    const my = Math.floor(mb / sps.mbWidth);
    for (let j = 0; j < 16; j++) for (let i = 0; i < 16; i++) luma[(my * 16 + j) * cw + mx * 16 + i] = r.u(8);
    for (let k = 0; k < 128; k++) r.u(8);
  }
  r.trailing();
  return { idr, frameNum, luma };
}

export interface DecodedMp4 {
  brand: string;
  width: number;
  height: number;
  durationSeconds: number;
  fps: number;
  sps: Sps;
  frames: DecodedFrame[];
}

/** Reads and decodes an MP4 written by the emulator (one H.264 track); throws when anything does not add up. */
export function decodeMp4(bytes: Uint8Array): DecodedMp4 {
  const b = Buffer.from(bytes);
  const top = boxes(b);
  if (top[0]?.type !== "ftyp") throw new Error("ftyp must come first");
  const brand = b.toString("latin1", top[0].body, top[0].body + 4);
  const moovBox = top.find((x) => x.type === "moov");
  const mdat = top.find((x) => x.type === "mdat");
  if (!moovBox || !mdat) throw new Error("moov and mdat are required");
  const mvhd = child(b, moovBox, "mvhd");
  const movieScale = b.readUInt32BE(mvhd.body + 12);
  const movieDuration = b.readUInt32BE(mvhd.body + 16);
  const trak = child(b, moovBox, "trak");
  const tkhd = child(b, trak, "tkhd");
  const width = b.readUInt32BE(tkhd.end - 8) / 65536;
  const height = b.readUInt32BE(tkhd.end - 4) / 65536;
  const mdia = child(b, trak, "mdia");
  const mdhd = child(b, mdia, "mdhd");
  const scale = b.readUInt32BE(mdhd.body + 12);
  const mediaDuration = b.readUInt32BE(mdhd.body + 16);
  const hdlr = child(b, mdia, "hdlr");
  if (b.toString("latin1", hdlr.body + 8, hdlr.body + 12) !== "vide") throw new Error("not a video handler");
  const stbl = child(b, child(b, mdia, "minf"), "stbl");
  const stsd = child(b, stbl, "stsd");
  const avc1 = child(b, stsd, "avc1", 8);
  const avcC = child(b, avc1, "avcC", 78);
  const c = avcC.body;
  if (b[c] !== 1 || (b[c + 4]! & 3) !== 3 || (b[c + 5]! & 31) !== 1) throw new Error("avcC: version 1, 4-byte lengths, one SPS");
  const spsLen = b.readUInt16BE(c + 6);
  const spsNal = b.subarray(c + 8, c + 8 + spsLen);
  const ppsLen = b.readUInt16BE(c + 9 + spsLen);
  const ppsNal = b.subarray(c + 11 + spsLen, c + 11 + spsLen + ppsLen);
  const sps = parseSps(spsNal);
  const { deblockingControl } = parsePps(ppsNal);
  if (sps.width !== width || sps.height !== height) throw new Error(`tkhd says ${width}×${height}, the SPS ${sps.width}×${sps.height}`);
  if (b.readUInt16BE(avc1.body + 24) !== width || b.readUInt16BE(avc1.body + 26) !== height) throw new Error("avc1 size differs");
  // the sample table against mdat
  const stts = child(b, stbl, "stts");
  let samples = 0;
  let ticks = 0;
  for (let i = 0, n = b.readUInt32BE(stts.body + 4); i < n; i++) {
    const count = b.readUInt32BE(stts.body + 8 + i * 8);
    samples += count;
    ticks += count * b.readUInt32BE(stts.body + 12 + i * 8);
  }
  if (ticks !== mediaDuration) throw new Error("stts durations do not add up to mdhd's");
  if (Math.abs(ticks / scale - movieDuration / movieScale) > 0.01) throw new Error("track and movie durations differ");
  const stsz = child(b, stbl, "stsz");
  if (b.readUInt32BE(stsz.body + 8) !== samples) throw new Error("stsz count differs from stts");
  const sizes = Array.from({ length: samples }, (_, i) => b.readUInt32BE(stsz.body + 12 + i * 4));
  const stco = child(b, stbl, "stco");
  if (b.readUInt32BE(stco.body + 4) !== 1) throw new Error("one chunk expected");
  let at = b.readUInt32BE(stco.body + 8);
  if (at !== mdat.body) throw new Error(`chunk offset ${at} is not mdat's payload (${mdat.body})`);
  const stss = child(b, stbl, "stss");
  const sync = new Set(Array.from({ length: b.readUInt32BE(stss.body + 4) }, (_, i) => b.readUInt32BE(stss.body + 8 + i * 4)));
  const frames: DecodedFrame[] = [];
  for (let s = 0; s < samples; s++) {
    const end = at + sizes[s]!;
    if (end > mdat.end) throw new Error("a sample runs past mdat");
    const len = b.readUInt32BE(at);
    if (at + 4 + len !== end) throw new Error("one NAL unit per sample expected");
    const frame = decodeSlice(b.subarray(at + 4, end), sps, deblockingControl);
    if (frame.idr !== sync.has(s + 1)) throw new Error(`sample ${s + 1}: sync table and picture type disagree`);
    frames.push(frame);
    at = end;
  }
  if (at !== mdat.end) throw new Error("bytes left in mdat after the last sample");
  if (!frames[0]?.idr) throw new Error("the first picture must be an IDR");
  return { brand, width, height, durationSeconds: ticks / scale, fps: scale / (ticks / samples), sps, frames };
}
