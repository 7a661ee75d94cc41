/**
 * Zstandard frames for tests, on a Node without a zstd encoder (Node 20's zlib has none): raw and
 * RLE blocks (RFC 8878 §3.1.1.2), which every decoder must read, under any header a test needs,
 * checked against a real encoder's output in `content-coding.test.ts`.
 */

/** The largest block a frame may hold (RFC 8878 §3.1.1.2.4). */
const MAX_BLOCK = 128 * 1024;

/**
 * A block's content: bytes as they are (raw), one byte repeated `size` times (RLE), or a compressed
 * block of raw literals (fewer than 32 bytes) and no sequences.
 */
export type ZstdBlock = Uint8Array | { byte: number; size: number } | { literals: Uint8Array };

export interface ZstdFrameOptions {
  /**
   * The content size the header declares (single segment: then no window descriptor); leave it
   * out for a frame that declares none, under `windowLog`.
   */
  contentSize?: number;
  /** The window, as its base-2 logarithm (10 to 41). Default 17: 128 KiB. */
  windowLog?: number;
  /** A dictionary id in the header (4 bytes). */
  dictionary?: number;
  /** Leave out to declare the size in a single segment; false to declare it beside a window. */
  singleSegment?: false;
}

/** One frame of the given blocks, no checksum. */
export function zstdFrame(blocks: readonly ZstdBlock[], options: ZstdFrameOptions = {}): Uint8Array {
  const header: number[] = [0x28, 0xb5, 0x2f, 0xfd];
  const declares = options.contentSize !== undefined;
  const single = declares && options.singleSegment !== false;
  // Frame header descriptor: an 8-byte content size, single segment or not; a 4-byte dictionary id.
  header.push(
    (declares ? 0b1100_0000 : 0) | (single ? 0b10_0000 : 0) | (options.dictionary === undefined ? 0 : 3),
  );
  if (!single) header.push(((options.windowLog ?? 17) - 10) << 3);
  if (options.dictionary !== undefined) header.push(...littleEndian(options.dictionary, 4));
  if (declares) header.push(...littleEndian(options.contentSize!, 8));
  const parts: number[][] = [header];
  blocks.forEach((block, index) => {
    const last = index === blocks.length - 1 ? 1 : 0;
    // Type 0 raw, 1 RLE, 2 compressed; the size is what the block regenerates, but for a compressed one.
    const [type, size, content] =
      block instanceof Uint8Array
        ? [0, block.byteLength, [...block]]
        : 'literals' in block
          ? literalsBlock(block.literals)
          : [1, block.size, [block.byte]];
    parts.push(littleEndian((size << 3) | (type << 1) | last, 3));
    parts.push(content);
  });
  return Uint8Array.from(parts.flat());
}

/** A compressed block: raw literals with a 1-byte header (RFC 8878 §3.1.1.3.1.1), no sequences. */
function literalsBlock(literals: Uint8Array): [number, number, number[]] {
  if (literals.byteLength >= 32) throw new Error('literalsBlock: at most 31 bytes');
  const content = [literals.byteLength << 3, ...literals, 0];
  return [2, content.length, content];
}

function littleEndian(value: number, bytes: number): number[] {
  return Array.from({ length: bytes }, (_, index) => Math.floor(value / 256 ** index) % 256);
}

/** `bytes` as one frame of raw blocks that declares its content size. */
export function zstdRawFrame(bytes: Uint8Array): Uint8Array {
  const blocks: Uint8Array[] = [];
  for (let offset = 0; offset < bytes.byteLength || blocks.length === 0; offset += MAX_BLOCK)
    blocks.push(bytes.subarray(offset, offset + MAX_BLOCK));
  return zstdFrame(blocks, { contentSize: bytes.byteLength });
}

/**
 * A crafted frame that declares 100 bytes and holds one compressed block of `sequences` matches,
 * each far longer than the frame, which fzstd does not check: each costs it a long copy.
 * The block: raw literals of size 0, then all three sequence codes in RLE mode (literal length 0,
 * a repeat offset, match length code 52).
 */
export function zstdSlowFrame(sequences: number): Uint8Array {
  const block: number[] = [0x00];
  if (sequences < 128) block.push(sequences);
  else if (sequences < 0x7f00) block.push((sequences >> 8) + 128, sequences & 0xff);
  else block.push(255, (sequences - 0x7f00) & 0xff, (sequences - 0x7f00) >> 8);
  block.push(0x54, 0, 0, 52, 0xff, 0xff, 0xff, 0xff);
  const header = (block.length << 3) | (2 << 1) | 1;
  return Uint8Array.from([0x28, 0xb5, 0x2f, 0xfd, 0x20, 100, ...littleEndian(header, 3), ...block]);
}
