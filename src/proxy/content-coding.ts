/**
 * HTTP content codings (`content-encoding`: gzip, deflate, br, zstd) as the proxy reads them: on
 * upstream answers, and on request bodies a client compressed. Codex CLI signed in with ChatGPT
 * sends its Responses bodies as zstd, to whatever `openai_base_url` names; governance reads the
 * JSON, so those bodies are decoded first and go upstream decoded. Node 20's zlib has no zstd:
 * fzstd (pure JavaScript) decodes it.
 */
import { pipeline, Readable, Transform, Writable } from 'node:stream';
import { constants, createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { Decompress } from 'fzstd';
import { BadInputError, SelfGcError } from '../core/errors.js';
import { type BodyChunks, tooLarge } from './read-body-bytes.js';

/** A zstd decoder as a stream, like zlib's own. */
function createZstdDecompress(): Transform {
  const decoder = new Decompress();
  const transform = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      try {
        decoder.push(chunk);
        callback();
      } catch (error) {
        callback(error as Error);
      }
    },
    flush(callback) {
      try {
        decoder.push(new Uint8Array(0), true);
        callback();
      } catch (error) {
        callback(error as Error);
      }
    },
  });
  decoder.ondata = (data) => {
    transform.push(data);
  };
  return transform;
}

/**
 * Decoders for a `content-encoding` list, in the order they apply (the last coding listed was
 * applied last, so it is undone first); undefined when a coding is unknown. `lenient` accepts a
 * gzip or deflate stream that stops early (an answer cut off is passed on as far as it came).
 */
export function decodersFor(
  contentEncoding: string | null | undefined,
  lenient = false,
): Transform[] | undefined {
  if (contentEncoding === null || contentEncoding === undefined) return [];
  const zlib = lenient ? { flush: constants.Z_SYNC_FLUSH, finishFlush: constants.Z_SYNC_FLUSH } : {};
  const decoders: Transform[] = [];
  for (const coding of contentEncoding.toLowerCase().split(',').reverse()) {
    const name = coding.trim();
    if (name === 'gzip' || name === 'x-gzip') decoders.push(createGunzip(zlib));
    else if (name === 'deflate') decoders.push(createInflate(zlib));
    else if (name === 'br') decoders.push(createBrotliDecompress());
    else if (name === 'zstd') decoders.push(createZstdDecompress());
    else if (name !== '' && name !== 'identity') return undefined;
  }
  return decoders;
}

/**
 * A request body without its content coding: the same chunks when it has none; undefined when a
 * coding is unknown (the caller passes the body on as it came). Refused as `payload-too-large`
 * once the decoded bytes pass `limitBytes`, without decoding the rest, and as bad input when the
 * bytes are not what the coding says.
 */
export async function decodeBody(
  body: BodyChunks,
  contentEncoding: string | null,
  limitBytes: number,
): Promise<BodyChunks | undefined> {
  const decoders = decodersFor(contentEncoding);
  if (decoders === undefined || decoders.length === 0) return decoders && body;
  const chunks: Uint8Array[] = [];
  let byteLength = 0;
  const collect = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      byteLength += chunk.byteLength;
      if (byteLength > limitBytes) return callback(tooLarge(limitBytes));
      chunks.push(chunk);
      callback();
    },
  });
  await new Promise<void>((resolve, reject) => {
    pipeline([Readable.from(body.chunks), ...decoders, collect], (error) => {
      if (error === null || error === undefined) resolve();
      else if (error instanceof SelfGcError) reject(error);
      else reject(new BadInputError(`request body is not valid ${contentEncoding} data`, { cause: error }));
    });
  });
  return { chunks, byteLength };
}
