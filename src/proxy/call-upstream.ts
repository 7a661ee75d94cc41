/**
 * One call to the upstream: the client's headers minus hop-by-hop ones (auth headers go through
 * as they came), a timeout until the answer's headers (and, for buffered answers, its body), and
 * network failures turned into `UpstreamError`s. The call goes through a transport: node:http(s)
 * by default (`node-upstream.ts`), or a `fetch` the proxy was given.
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

/** Headers of the upstream's answer that the transport already acted on (it decodes and de-chunks). */
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

/** What a transport sends. */
export interface TransportRequest {
  url: string;
  method: string;
  headers: Headers;
  body: string | Uint8Array | ReadableStream<Uint8Array> | null;
  /** Aborts the call, including an answer still being read. */
  signal: AbortSignal;
}

/** The upstream's answer once its headers are in; the body is read through `body` or `text()`. */
export interface UpstreamAnswer {
  status: number;
  /** Status 200–299. */
  ok: boolean;
  /** Without the transfer details (`content-encoding` is already decoded). */
  headers: Headers;
  /** The body as a web stream, or null when the answer has none. Read it or cancel it. */
  readonly body: ReadableStream<Uint8Array> | null;
  /** The whole body as UTF-8 text. */
  text(): Promise<string>;
  /** The whole body's bytes (a content coding decoded). */
  bytes(): Promise<Uint8Array>;
}

/** Sends one request upstream; rejects when no answer arrives (network failure, abort). */
export type UpstreamTransport = (request: TransportRequest) => Promise<UpstreamAnswer>;

/** A transport over a `fetch` (given in the proxy's options, for example in tests). */
export function fetchTransport(fetchImpl: typeof fetch): UpstreamTransport {
  return async (request) => {
    const init: RequestInit & { duplex?: 'half' } = {
      method: request.method,
      headers: request.headers,
      body: request.body,
      signal: request.signal,
      redirect: 'manual',
    };
    if (request.body instanceof ReadableStream) init.duplex = 'half';
    const response = await fetchImpl(request.url, init);
    return {
      status: response.status,
      ok: response.ok,
      headers: response.headers,
      get body() {
        return response.body;
      },
      text: () => response.text(),
      bytes: async () => new Uint8Array(await response.arrayBuffer()),
    };
  };
}

export interface UpstreamRequest extends Omit<TransportRequest, 'signal'> {
  transport: UpstreamTransport;
  timeoutMs: number;
  /** The client's signal: when the client goes away, so does the upstream call. */
  signal: AbortSignal;
}

export interface UpstreamCall {
  answer: UpstreamAnswer;
  /** Stop the timeout clock (for an answer streamed to the client from here on). */
  settle(): void;
  /** Read the whole answer as text within the timeout, then settle. */
  text(): Promise<string>;
  /** Read the whole answer's bytes within the timeout, then settle. */
  bytes(): Promise<Uint8Array>;
}

function timeoutError(timeoutMs: number, cause?: unknown): UpstreamError {
  return new UpstreamError(`upstream did not answer within ${timeoutMs} ms`, { timeout: true, cause });
}

export async function callUpstream(request: UpstreamRequest): Promise<UpstreamCall> {
  // One controller for both reasons to stop: the timeout and the client leaving.
  const controller = new AbortController();
  let timedOut = false;
  const handle = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, request.timeoutMs);
  const clientLeft = () => controller.abort(request.signal.reason);
  if (request.signal.aborted) clientLeft();
  else request.signal.addEventListener('abort', clientLeft, { once: true });
  const settle = () => clearTimeout(handle);
  const wrap = (error: unknown): unknown => {
    if (timedOut) return timeoutError(request.timeoutMs, error);
    if (request.signal.aborted) return error;
    const reason =
      error instanceof Error
        ? error.cause instanceof Error
          ? error.cause.message
          : error.message
        : String(error);
    return new UpstreamError(`upstream unreachable: ${reason}`, { cause: error });
  };
  let answer: UpstreamAnswer;
  try {
    answer = await request.transport({
      url: request.url,
      method: request.method,
      headers: request.headers,
      body: request.body,
      signal: controller.signal,
    });
  } catch (error) {
    settle();
    request.signal.removeEventListener('abort', clientLeft);
    throw wrap(error);
  }
  const readWhole = async <T>(read: () => Promise<T>): Promise<T> => {
    try {
      return await read();
    } catch (error) {
      throw wrap(error);
    } finally {
      settle();
      request.signal.removeEventListener('abort', clientLeft);
    }
  };
  return {
    answer,
    settle,
    text: () => readWhole(() => answer.text()),
    bytes: () => readWhole(() => answer.bytes()),
  };
}
