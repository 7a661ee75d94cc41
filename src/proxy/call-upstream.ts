/**
 * One call to the upstream: the client's headers minus hop-by-hop ones (auth headers go through
 * as they came), a timeout until the answer's headers (and, for buffered answers, its body), and
 * network failures turned into `UpstreamError`s.
 */
import { UpstreamError } from '../core/errors.js';

/** Headers that describe one connection, or that this proxy owns, and so are not forwarded. */
const REQUEST_HEADERS_DROPPED = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'accept-encoding',
  'expect',
]);

/** Headers of the upstream's answer that `fetch` already acted on (it decompresses and de-chunks). */
const RESPONSE_HEADERS_DROPPED = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-encoding',
  'content-length',
]);

export function upstreamRequestHeaders(headers: Headers): Headers {
  const forwarded = new Headers();
  headers.forEach((value, name) => {
    if (!REQUEST_HEADERS_DROPPED.has(name) && !name.startsWith('x-selfgc-')) forwarded.set(name, value);
  });
  return forwarded;
}

export function clientResponseHeaders(headers: Headers): Headers {
  const forwarded = new Headers();
  headers.forEach((value, name) => {
    if (!RESPONSE_HEADERS_DROPPED.has(name) && name !== 'set-cookie') forwarded.set(name, value);
  });
  for (const cookie of headers.getSetCookie()) forwarded.append('set-cookie', cookie);
  return forwarded;
}

export interface UpstreamRequest {
  fetch: typeof fetch;
  url: string;
  method: string;
  headers: Headers;
  body: string | ReadableStream<Uint8Array> | null;
  timeoutMs: number;
  /** The client's signal: when the client goes away, so does the upstream call. */
  signal: AbortSignal;
}

export interface UpstreamCall {
  response: Response;
  /** Stop the timeout clock (for an answer streamed to the client from here on). */
  settle(): void;
  /** Read the whole answer as text within the timeout, then settle. */
  text(): Promise<string>;
}

function timeoutError(timeoutMs: number, cause?: unknown): UpstreamError {
  return new UpstreamError(`upstream did not answer within ${timeoutMs} ms`, { timeout: true, cause });
}

export async function callUpstream(request: UpstreamRequest): Promise<UpstreamCall> {
  const timer = new AbortController();
  const handle = setTimeout(() => timer.abort(), request.timeoutMs);
  const settle = () => clearTimeout(handle);
  const signal = AbortSignal.any([timer.signal, request.signal]);
  const wrap = (error: unknown): unknown => {
    if (timer.signal.aborted) return timeoutError(request.timeoutMs, error);
    if (request.signal.aborted) return error;
    const reason =
      error instanceof Error
        ? error.cause instanceof Error
          ? error.cause.message
          : error.message
        : String(error);
    return new UpstreamError(`upstream unreachable: ${reason}`, { cause: error });
  };
  let response: Response;
  try {
    const init: RequestInit & { duplex?: 'half' } = {
      method: request.method,
      headers: request.headers,
      body: request.body,
      signal,
      redirect: 'manual',
    };
    if (request.body instanceof ReadableStream) init.duplex = 'half';
    response = await request.fetch(request.url, init);
  } catch (error) {
    settle();
    throw wrap(error);
  }
  return {
    response,
    settle,
    async text() {
      try {
        return await response.text();
      } catch (error) {
        throw wrap(error);
      } finally {
        settle();
      }
    },
  };
}
