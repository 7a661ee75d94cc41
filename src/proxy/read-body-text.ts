/**
 * Read a request body as UTF-8 text, refusing it as soon as it passes the limit (the rest is
 * never buffered): from a web `Request`, or straight from node:http.
 */
import type { IncomingMessage } from 'node:http';
import { BadInputError, SelfGcError } from '../core/errors.js';

function tooLarge(limitBytes: number): SelfGcError {
  return new SelfGcError('payload-too-large', `request body is larger than the ${limitBytes}-byte limit`);
}

function declaredLength(value: string | null | undefined): number {
  return Number(value ?? Number.NaN);
}

function decodeUtf8(chunks: readonly Uint8Array[]): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch (error) {
    throw new BadInputError('request body is not valid UTF-8', { cause: error });
  }
}

export async function readBodyText(request: Request, limitBytes: number): Promise<string> {
  const declared = declaredLength(request.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limitBytes) throw tooLarge(limitBytes);
  if (request.body === null) return '';
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
  return decodeUtf8(chunks);
}

/**
 * The same from node:http. A body refused for its size is drained unread, so the answer can
 * still go out; an upload cut short (the client left) rejects.
 */
export function readIncomingText(incoming: IncomingMessage, limitBytes: number): Promise<string> {
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
      try {
        resolve(decodeUtf8(chunks));
      } catch (error) {
        reject(error);
      }
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
