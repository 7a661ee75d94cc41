/**
 * Comparisons of byte ranges, done natively (`Buffer#compare`): ranges that agree are compared
 * in blocks that double, and a block that differs is halved until the first difference is found,
 * so finding where two bodies part takes a few dozen native calls whatever their size.
 */

const FIRST_BLOCK = 4096;
const BYTEWISE = 64;

function bufferOf(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Whether two byte ranges hold the same bytes. */
export function sameBytes(left: Uint8Array, right: Uint8Array): boolean {
  return left.byteLength === right.byteLength && bufferOf(left).equals(bufferOf(right));
}

/**
 * How many of `length` positions agree before the first that does not, `agrees(from, to)`
 * telling whether positions `[from, to)` do and `agreesAt(index)` whether one does.
 */
function agreeing(
  length: number,
  agrees: (from: number, to: number) => boolean,
  agreesAt: (index: number) => boolean,
): number {
  let shared = 0;
  let block = FIRST_BLOCK;
  while (shared < length) {
    const size = Math.min(block, length - shared);
    if (size <= BYTEWISE) {
      while (shared < length && agreesAt(shared)) shared += 1;
      return shared;
    }
    if (agrees(shared, shared + size)) {
      shared += size;
      block = size * 2;
    } else {
      block = size >> 1;
    }
  }
  return shared;
}

/** How many bytes two buffers share from the start. */
export function sharedPrefix(left: Uint8Array, right: Uint8Array): number {
  const [a, b] = [bufferOf(left), bufferOf(right)];
  return agreeing(
    Math.min(a.length, b.length),
    (from, to) => a.compare(b, from, to, from, to) === 0,
    (index) => a[index] === b[index],
  );
}

/** How many bytes two buffers share at the end, at most `limit`. */
export function sharedSuffix(left: Uint8Array, right: Uint8Array, limit: number): number {
  const [a, b] = [bufferOf(left), bufferOf(right)];
  return agreeing(
    limit,
    (from, to) => a.compare(b, b.length - to, b.length - from, a.length - to, a.length - from) === 0,
    (index) => a[a.length - 1 - index] === b[b.length - 1 - index],
  );
}
