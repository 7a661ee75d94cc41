/**
 * Read a request body whole, as the chunks it arrived in, refusing it as soon as it passes the
 * limit (the rest is never buffered): from a web `Request`, or straight from node:http. Joined,
 * the bytes own their memory (never a slice of Node's shared buffer pool), so they can be handed
 * to a worker thread without a copy, and go upstream as they are when governance leaves them
 * unchanged. A body too big to govern is not joined here at all: its chunks move to the lane
 * worker, which joins them, so the proxy's thread never stops to copy tens of megabytes.
 */
import type { IncomingMessage } from 'node:http';
import { BadInputError, SelfGcError } from '../core/errors.js';

/** The refusal of a body past the limit. */
export function tooLarge(limitBytes: number): SelfGcError {
  return new SelfGcError('payload-too-large', `request body is larger than the ${limitBytes}-byte limit`);
}

function declaredLength(value: string | null | undefined): number {
  return Number(value ?? Number.NaN);
}

/** A body as read: its chunks in order, and their length in all. */
export interface BodyChunks {
  chunks: Uint8Array[];
  byteLength: number;
}

/** The chunks in one buffer of their own. */
export function joinChunks(body: BodyChunks): Uint8Array {
  const [only] = body.chunks;
  // A plain Uint8Array over it, never a Node Buffer, whose `slice` would share instead of copy.
  if (body.chunks.length === 1 && only !== undefined && ownsItsBuffer(only))
    return new Uint8Array(only.buffer, 0, only.byteLength);
  const bytes = new Uint8Array(body.byteLength);
  let offset = 0;
  for (const chunk of body.chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/**
 * Whether `bytes` span their whole buffer, so that buffer can move to another thread: a view into
 * memory shared with anything else (Node's buffer pool, a larger read) must be copied, never taken.
 */
export function ownsItsBuffer(bytes: Uint8Array): boolean {
  return (
    bytes.buffer instanceof ArrayBuffer &&
    bytes.byteOffset === 0 &&
    bytes.byteLength === bytes.buffer.byteLength
  );
}

/**
 * The chunks, each owning its whole buffer, so that all of them can move to another thread: one
 * that is a view into a larger buffer is copied (Node's socket reads already own theirs).
 */
export function movableChunks(body: BodyChunks): BodyChunks {
  // `new Uint8Array(chunk)` copies (a Node Buffer's `slice` would share the larger buffer).
  return {
    ...body,
    chunks: body.chunks.map((chunk) => (ownsItsBuffer(chunk) ? chunk : new Uint8Array(chunk))),
  };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A body as UTF-8 text; a `BadInputError` when it is not valid UTF-8. */
export function decodeBodyText(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch (error) {
    throw new BadInputError('request body is not valid UTF-8', { cause: error });
  }
}

const encoder = new TextEncoder();

/** Text as UTF-8 bytes that own their memory (see above). */
export function encodeBodyText(text: string): Uint8Array {
  return encoder.encode(text);
}

export async function readBodyChunks(request: Request, limitBytes: number): Promise<BodyChunks> {
  const declared = declaredLength(request.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limitBytes) throw tooLarge(limitBytes);
  if (request.body === null) return { chunks: [], byteLength: 0 };
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limitBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(limitBytes);
    }
    chunks.push(value);
  }
  return { chunks, byteLength: total };
}

/**
 * The same from node:http. A body refused for its size is drained unread, so the answer can
 * still go out; an upload cut short (the client left) rejects.
 */
export function readIncomingChunks(incoming: IncomingMessage, limitBytes: number): Promise<BodyChunks> {
  const declared = declaredLength(incoming.headers['content-length']);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const stop = () => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('close', onClose);
      incoming.off('error', onClose);
    };
    const refuse = () => {
      stop();
      incoming.resume();
      reject(tooLarge(limitBytes));
    };
    const onData = (chunk: Buffer) => {
      total += chunk.byteLength;
      if (total > limitBytes) refuse();
      else chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      resolve({ chunks, byteLength: total });
    };
    const onClose = () => {
      stop();
      reject(new Error('client disconnected during upload'));
    };
    if (Number.isFinite(declared) && declared > limitBytes) return refuse();
    incoming.on('data', onData);
    incoming.once('end', onEnd);
    incoming.once('close', onClose);
    incoming.once('error', onClose);
  });
}
