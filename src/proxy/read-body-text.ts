/**
 * Read a request body as UTF-8 text, refusing it as soon as it passes the limit (the rest is
 * never buffered).
 */
import { BadInputError, SelfGcError } from '../core/errors.js';

function tooLarge(limitBytes: number): SelfGcError {
  return new SelfGcError('payload-too-large', `request body is larger than the ${limitBytes}-byte limit`);
}

export async function readBodyText(request: Request, limitBytes: number): Promise<string> {
  const declared = Number(request.headers.get('content-length') ?? Number.NaN);
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
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch (error) {
    throw new BadInputError('request body is not valid UTF-8', { cause: error });
  }
}
