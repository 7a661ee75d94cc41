/**
 * Read a request body whole, as bytes, refusing it as soon as it passes the limit (the rest is
 * never buffered): from a web `Request`, or straight from node:http. The bytes own their memory
 * (never a slice of Node's shared buffer pool), so they can be handed to a worker thread without
 * a copy, and go upstream as they are when governance leaves them unchanged.
 */
import type { IncomingMessage } from 'node:http';
import { BadInputError, SelfGcError } from '../core/errors.js';

function tooLarge(limitBytes: number): SelfGcError {
  return new SelfGcError('payload-too-large', `request body is larger than the ${limitBytes}-byte limit`);
}

function declaredLength(value: string | null | undefined): number {
  return Number(value ?? Number.NaN);
}

/** The chunks in one buffer of their own. */
function joinChunks(chunks: readonly Uint8Array[], total: number): Uint8Array {
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
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

export async function readBodyBytes(request: Request, limitBytes: number): Promise<Uint8Array> {
  const declared = declaredLength(request.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limitBytes) throw tooLarge(limitBytes);
  if (request.body === null) return new Uint8Array(0);
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
  return joinChunks(chunks, total);
}

/**
 * The same from node:http. A body refused for its size is drained unread, so the answer can
 * still go out; an upload cut short (the client left) rejects.
 */
export function readIncomingBytes(incoming: IncomingMessage, limitBytes: number): Promise<Uint8Array> {
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
      resolve(joinChunks(chunks, total));
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
