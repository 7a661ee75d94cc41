/**
 * The default upstream transport: node:http and node:https over keep-alive connections. It keeps
 * what the proxy relied on `fetch` for — redirects are not followed; gzip, deflate and br answers
 * (which it asks for, as `fetch` does) are decoded — without `fetch`'s web streams and request
 * objects, which cost more CPU per request than the rest of a forward. Answers read whole never
 * become a web stream; streamed ones do, with backpressure and cancellation through to the socket.
 */
import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { finished, pipeline, Readable, type Transform } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { constants, createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { TransportRequest, UpstreamAnswer, UpstreamTransport } from './call-upstream.js';

// Idle connections are closed after 4 s (as `fetch` does) or before the server's own keep-alive
// timeout, whichever is sooner, so a reused connection is rarely one the server just dropped.
const IDLE_MS = 4_000;
const agents = {
  'http:': new HttpAgent({ keepAlive: true, timeout: IDLE_MS }),
  'https:': new HttpsAgent({ keepAlive: true, timeout: IDLE_MS }),
};

/** Statuses whose answers have no body. */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

const ZLIB_OPTIONS = { flush: constants.Z_SYNC_FLUSH, finishFlush: constants.Z_SYNC_FLUSH };

/** Decoders for a `content-encoding` list, applied last-first; none when a coding is unknown. */
function decodersFor(contentEncoding: string | undefined): Transform[] {
  if (contentEncoding === undefined) return [];
  const decoders: Transform[] = [];
  for (const coding of contentEncoding.toLowerCase().split(',').reverse()) {
    const name = coding.trim();
    if (name === 'gzip' || name === 'x-gzip') decoders.push(createGunzip(ZLIB_OPTIONS));
    else if (name === 'deflate') decoders.push(createInflate(ZLIB_OPTIONS));
    else if (name === 'br') decoders.push(createBrotliDecompress());
    else if (name !== '' && name !== 'identity') return [];
  }
  return decoders;
}

function readAll(source: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    source.on('data', (chunk: Buffer) => chunks.push(chunk));
    finished(source, (error) => {
      if (error) reject(error);
      else resolve(Buffer.concat(chunks));
    });
  });
}

/** Like `Response.text()`: UTF-8, invalid bytes replaced, a byte order mark dropped. */
const textDecoder = new TextDecoder();

/** A node stream as a web stream: paused while the reader is behind, destroyed when it cancels. */
function webStreamOf(source: Readable): ReadableStream<Uint8Array> {
  let closed = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      source.on('data', (chunk: Buffer) => {
        if (closed) return;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 0) <= 0) source.pause();
      });
      finished(source, (error) => {
        if (closed) return;
        closed = true;
        if (error) controller.error(error);
        else controller.close();
      });
    },
    pull() {
      source.resume();
    },
    cancel() {
      closed = true;
      source.destroy();
    },
  });
}

function answerOf(incoming: IncomingMessage, method: string): UpstreamAnswer {
  const headers = new Headers();
  const raw = incoming.rawHeaders;
  for (let index = 0; index + 1 < raw.length; index += 2) headers.append(raw[index]!, raw[index + 1]!);
  const status = incoming.statusCode ?? 502;
  const empty = method === 'HEAD' || NULL_BODY_STATUSES.has(status);
  const decoders = empty ? [] : decodersFor(incoming.headers['content-encoding']);
  let body: Readable = incoming;
  if (decoders.length > 0) {
    // Errors reach the last stream of the pipeline, which is the one read.
    pipeline([incoming, ...decoders], () => undefined);
    body = decoders.at(-1)!;
  } else {
    // A connection lost mid-answer is an 'error' on the answer; without a listener it would throw.
    incoming.on('error', () => undefined);
  }
  let stream: ReadableStream<Uint8Array> | null | undefined;
  // An answer without a body is read to its end all the same, which frees the connection.
  const bytes = async () => {
    const all = await readAll(empty ? incoming : body);
    return empty ? new Uint8Array(0) : all;
  };
  return {
    status,
    ok: status >= 200 && status < 300,
    headers,
    get body() {
      if (stream === undefined) {
        if (empty) {
          incoming.resume();
          stream = null;
        } else {
          stream = webStreamOf(body);
        }
      }
      return stream;
    },
    text: async () => textDecoder.decode(await bytes()),
    bytes,
  };
}

/** Send a streamed request body, with backpressure; a failing body aborts the request. */
function sendStream(body: ReadableStream<Uint8Array>, outgoing: ClientRequest): void {
  pipeline(Readable.fromWeb(body as NodeReadableStream<Uint8Array>), outgoing, () => undefined);
}

export const nodeTransport: UpstreamTransport = (request: TransportRequest) =>
  new Promise((resolve, reject) => {
    const url = new URL(request.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      reject(new TypeError(`unsupported upstream protocol ${url.protocol}`));
      return;
    }
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    headers['accept-encoding'] ??= url.protocol === 'https:' ? 'br, gzip, deflate' : 'gzip, deflate';
    const { body } = request;
    // Encoded once: its length and the bytes sent come from the same pass over the text.
    const bytes =
      typeof body === 'string' ? Buffer.from(body, 'utf8') : body instanceof Uint8Array ? body : undefined;
    if (bytes !== undefined) headers['content-length'] = String(bytes.byteLength);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const outgoing = send(
      url,
      {
        method: request.method,
        headers,
        agent: agents[url.protocol as keyof typeof agents],
        signal: request.signal,
      },
      (incoming) => resolve(answerOf(incoming, request.method)),
    );
    // Errors after the answer arrived also surface on the answer's body.
    outgoing.on('error', reject);
    if (bytes !== undefined) outgoing.end(bytes);
    else if (body === null || typeof body === 'string' || body instanceof Uint8Array) outgoing.end();
    else sendStream(body, outgoing);
  });
