/**
 * A request and an answer as the proxy's handlers see them: what `Request` and `Response` offer
 * the handlers, without building either. `createProxy(...).handle` converts from and to the web
 * types; `serveProxy` builds these straight from node:http, which spares each request the web
 * objects and streams (a large share of the proxy's CPU time per request otherwise).
 */
import { type BodyChunks, readBodyChunks } from './read-body-bytes.js';

export interface ProxyRequest {
  method: string;
  /** Path without the query string. */
  pathname: string;
  /** The query string with its `?`, or empty. */
  search: string;
  headers: Headers;
  /** Aborts when the client goes away. */
  signal: AbortSignal;
  /** The client's network address, when the server knows it (node:http does). */
  remoteAddress?: string;
  /** The body as a stream (for routes that pass it on), or null when there is none. */
  body(): ReadableStream<Uint8Array> | null;
  /** The whole body, in the chunks it came in; refused with `payload-too-large` past `limitBytes`. */
  chunks(limitBytes: number): Promise<BodyChunks>;
}

export interface ProxyAnswer {
  status: number;
  headers: Headers;
  /** Text and bytes are sent whole (with their length); a stream chunk by chunk. */
  body: string | Uint8Array | ReadableStream<Uint8Array> | null;
}

export function requestFromWeb(request: Request): ProxyRequest {
  const { pathname, search } = new URL(request.url);
  return {
    method: request.method,
    pathname,
    search,
    headers: request.headers,
    signal: request.signal,
    body: () => request.body,
    chunks: (limitBytes) => readBodyChunks(request, limitBytes),
  };
}

export function answerToWeb(answer: ProxyAnswer): Response {
  return new Response(answer.body, { status: answer.status, headers: answer.headers });
}

/** A JSON answer (error bodies, health). */
export function jsonAnswer(
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): ProxyAnswer {
  return {
    status,
    headers: new Headers({ 'content-type': 'application/json', ...headers }),
    body: JSON.stringify(body),
  };
}
