/**
 * Zstandard frames for tests, on a Node without a zstd encoder (Node 20's zlib has none): the
 * bytes as raw blocks (RFC 8878 §3.1.1.2), which every decoder must read, checked against a real
 * encoder's output in `content-coding.test.ts`.
 */

/** The largest block a frame may hold (RFC 8878 §3.1.1.2.4). */
const MAX_BLOCK = 128 * 1024;

/** `bytes` as one zstd frame of raw blocks, with its content size and no checksum. */
export function zstdRawFrame(bytes: Uint8Array): Uint8Array {
  const blocks = Math.max(1, Math.ceil(bytes.byteLength / MAX_BLOCK));
  const frame = new Uint8Array(4 + 1 + 8 + blocks * 3 + bytes.byteLength);
  const view = new DataView(frame.buffer);
  view.setUint32(0, 0xfd2fb528, true);
  // Frame header descriptor: an 8-byte content size, single segment (no window descriptor).
  frame[4] = 0b1110_0000;
  view.setBigUint64(5, BigInt(bytes.byteLength), true);
  let offset = 13;
  for (let block = 0; block < blocks; block += 1) {
    const part = bytes.subarray(block * MAX_BLOCK, (block + 1) * MAX_BLOCK);
    // Block header: last-block bit, type 0 (raw), then the size.
    const header = (part.byteLength << 3) | (block === blocks - 1 ? 1 : 0);
    frame[offset] = header & 0xff;
    frame[offset + 1] = (header >> 8) & 0xff;
    frame[offset + 2] = (header >> 16) & 0xff;
    frame.set(part, offset + 3);
    offset += 3 + part.byteLength;
  }
  return frame;
}
