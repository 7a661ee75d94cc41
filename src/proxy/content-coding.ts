/**
 * Request bodies a client compressed (`content-encoding`: zstd, gzip, deflate, br). Codex CLI
 * signed in with ChatGPT sends its Responses bodies as zstd to whatever `openai_base_url` names;
 * governance reads the JSON, so such bodies are decoded first and go upstream decoded.
 *
 * A body is untrusted: each coding is undone whole, its output held to the body limit. zlib's
 * codings stop at that limit themselves (`maxOutputLength`, off the proxy's thread). Node 20's
 * zlib has no zstd, and fzstd (pure JavaScript) trusts what a frame says: it allocates the window
 * a header declares, and a crafted block can keep it busy for seconds. So a zstd body's frame and
 * block headers are read first (`readZstdFrames`), to bound the buffers decoding allocates, and
 * fzstd runs in a thread of its own (`zstd-thread.ts`) under a deadline, never on the proxy's,
 * counting its output.
 */
import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate } from 'node:zlib';
import { BadInputError } from '../core/errors.js';
import { type BodyChunks, joinChunks, tooLarge } from './read-body-bytes.js';
import { decodeZstdInThread } from './zstd-thread.js';

/** Undoes one coding: its output, or undefined for a valid body it will not decode. */
/** Undoes one coding; `tenant` is whose body it is, for the zstd threads' turns. */
type Decoder = (bytes: Uint8Array, limitBytes: number, tenant: string) => Promise<Uint8Array | undefined>;

function zlibDecoder(
  decode: (bytes: Uint8Array, options: { maxOutputLength: number }) => Promise<Buffer>,
  name: string,
): Decoder {
  return async (bytes, limitBytes) => {
    try {
      return await decode(bytes, { maxOutputLength: limitBytes });
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(limitBytes);
      throw notValid(name, error);
    }
  };
}

function notValid(coding: string, cause?: unknown): BadInputError {
  return new BadInputError(`request body is not valid ${coding} data`, { cause });
}

/** The largest window a zstd decoder must support for HTTP (RFC 9659 §3). */
const MAX_WINDOW = 8 * 1024 * 1024;
/** The largest block a frame may hold (RFC 8878 §3.1.1.2.4). */
const MAX_BLOCK = 128 * 1024;
/** Frames one body may hold: an encoder writes one, a concatenation a few. */
const MAX_FRAMES = 64;
/**
 * Blocks one body may hold, so that reading their headers stays cheap on the proxy's thread: a
 * real encoder writes blocks of up to 128 KiB, and one that flushes often, blocks of some bytes.
 */
const MAX_BLOCKS = 1_000_000;
/**
 * Windows fzstd may allocate for one body, in all: one for each frame decoded block by block.
 * Eight times the largest, so a handful of concatenated frames fit.
 */
const MAX_WINDOWS_BYTES = 8 * MAX_WINDOW;

/** What a zstd body's frames hold, read from their headers alone. */
export interface ZstdFrames {
  /** What the frames that declare their size say they hold: a floor of the output. */
  declared: number;
  /**
   * Every frame declares its size (a size of 0 only in a single segment): fzstd decodes them in
   * place, into buffers of those sizes, and never past them.
   */
  inPlace: boolean;
  /** Their blocks that hold something (compressed, or raw and RLE of some bytes): what costs fzstd. */
  blocks: number;
  /** Window bytes fzstd shifts decoding them block by block: once per such block of each frame. */
  shifted: number;
  /**
   * Whether fzstd can decode them within bounds: no dictionary, at most `MAX_FRAMES` frames and
   * `MAX_BLOCKS` blocks, windows within `MAX_WINDOW` and `MAX_WINDOWS_BYTES` in all.
   */
  decodable: boolean;
}

/**
 * Walk a zstd body's frames and blocks (RFC 8878 §3.1) without decoding them. Throws bad input
 * when the headers are not what the format allows.
 */
export function readZstdFrames(bytes: Uint8Array): ZstdFrames {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (end: number) => {
    if (end > bytes.byteLength) throw notValid('zstd');
  };
  let offset = 0;
  let declared = 0;
  let frames = 0;
  let seen = 0;
  let blocks = 0;
  let shifted = 0;
  let windows = 0;
  let inPlace = true;
  let decodable = true;
  while (offset < bytes.byteLength) {
    frames += 1;
    need(offset + 8);
    const magic = view.getUint32(offset, true);
    if ((magic & 0xfffffff0) === 0x184d2a50) {
      // A skippable frame: its length, then that many bytes.
      offset += 8 + view.getUint32(offset + 4, true);
      need(offset);
      continue;
    }
    if (magic !== 0xfd2fb528) throw notValid('zstd');
    const descriptor = bytes[offset + 4]!;
    if ((descriptor & 0b1000) !== 0) throw notValid('zstd');
    const singleSegment = (descriptor & 0b10_0000) !== 0;
    let position = offset + 5;
    let window = 0;
    if (!singleSegment) {
      const exponent = bytes[position]! >> 3;
      const base = 2 ** (10 + exponent);
      window = base + (base / 8) * (bytes[position]! & 7);
      position += 1;
    }
    const dictionaryBytes = [0, 1, 2, 4][descriptor & 3]!;
    const sizeBytes = [singleSegment ? 1 : 0, 2, 4, 8][descriptor >> 6]!;
    need(position + dictionaryBytes + sizeBytes);
    let dictionary = 0;
    for (let index = 0; index < dictionaryBytes; index += 1)
      dictionary += bytes[position + index]! * 256 ** index;
    position += dictionaryBytes;
    let contentSize: number | undefined;
    if (sizeBytes > 0) {
      contentSize = 0;
      for (let index = 0; index < sizeBytes; index += 1)
        contentSize += bytes[position + index]! * 256 ** index;
      if (sizeBytes === 2) contentSize += 256;
    }
    position += sizeBytes;
    if (singleSegment) window = contentSize!;
    // A block is at most the window and 128 KiB (RFC 8878 §3.1.1.2.4); raw and RLE blocks say
    // what they regenerate, which a declared size must hold.
    const blockMaximum = Math.min(window, MAX_BLOCK);
    let regenerated = 0;
    const firstBlock = blocks;
    for (let last = false; !last; seen += 1) {
      // Past the cap the body is not decoded: the rest need not be read.
      if (seen >= MAX_BLOCKS) return { declared, inPlace: false, blocks, shifted, decodable: false };
      need(position + 3);
      const header = bytes[position]! | (bytes[position + 1]! << 8) | (bytes[position + 2]! << 16);
      last = (header & 1) === 1;
      const type = (header >> 1) & 3;
      const size = header >>> 3;
      if (type === 3 || size > blockMaximum) throw notValid('zstd');
      if (type !== 2) regenerated += size;
      if (type === 2 || size > 0) blocks += 1;
      position += 3 + (type === 1 ? 1 : size);
    }
    if (contentSize !== undefined && regenerated > contentSize) throw notValid('zstd');
    shifted += (blocks - firstBlock) * window;
    if ((descriptor & 0b100) !== 0) position += 4;
    need(position);
    if (contentSize !== undefined && (contentSize > 0 || singleSegment)) declared += contentSize;
    else inPlace = false;
    // Decoded block by block, a frame gets a buffer of its window (a single segment's is its size).
    if (!singleSegment) {
      windows += window;
      if (window > MAX_WINDOW) decodable = false;
    }
    if (dictionary !== 0) decodable = false;
    offset = position;
  }
  return {
    declared,
    inPlace,
    blocks,
    shifted,
    decodable: decodable && frames <= MAX_FRAMES && windows <= MAX_WINDOWS_BYTES,
  };
}

const decodeZstd: Decoder = async (bytes, limitBytes, tenant) => {
  const frames = readZstdFrames(bytes);
  if (frames.declared > limitBytes) throw tooLarge(limitBytes);
  if (!frames.decodable) return undefined;
  const decoded = await decodeZstdInThread(bytes, limitBytes, frames, tenant);
  if (decoded === 'too-large') throw tooLarge(limitBytes);
  if (decoded === 'invalid') throw notValid('zstd');
  // Out of time or memory: passed on as it came.
  if (decoded === 'timed-out' || decoded === 'failed') return undefined;
  return decoded;
};

const DECODERS: Readonly<Record<string, Decoder>> = {
  zstd: decodeZstd,
  gzip: zlibDecoder(promisify(gunzip), 'gzip'),
  'x-gzip': zlibDecoder(promisify(gunzip), 'gzip'),
  deflate: zlibDecoder(promisify(inflate), 'deflate'),
  br: zlibDecoder(promisify(brotliDecompress), 'br'),
};

/** Codings one body may stack; more is no client's, and each costs a pass over the limit. */
const MAX_CODINGS = 3;

/**
 * A request body without its content coding: the same chunks when it has none. Undefined when the
 * proxy does not read it (a coding it does not know, more than `MAX_CODINGS`, a zstd frame it will
 * not decode): the caller passes the body on as it came. Refused as `payload-too-large` once a
 * coding's output would pass `limitBytes`, and as bad input when the bytes are not what the
 * coding says. `tenant` (the client's namespace) takes its turn for the zstd threads with others.
 */
export async function decodeBody(
  body: BodyChunks,
  contentEncoding: string | null,
  limitBytes: number,
  tenant = '',
): Promise<BodyChunks | undefined> {
  if (contentEncoding === null) return body;
  const codings = contentEncoding
    .toLowerCase()
    .split(',')
    .map((coding) => coding.trim())
    .filter((coding) => coding !== '' && coding !== 'identity');
  if (codings.length === 0) return body;
  if (codings.length > MAX_CODINGS || codings.some((coding) => !Object.hasOwn(DECODERS, coding)))
    return undefined;
  // The last coding listed was applied last: it is undone first.
  let bytes: Uint8Array | undefined = joinChunks(body);
  for (const coding of codings.reverse()) {
    bytes = await DECODERS[coding]!(bytes, limitBytes, tenant);
    if (bytes === undefined) return undefined;
  }
  return { chunks: [bytes], byteLength: bytes.byteLength };
}
