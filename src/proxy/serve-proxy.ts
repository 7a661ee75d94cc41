/**
 * Bind a proxy to node:http: request bodies are streamed in (or read whole, for the routes that
 * need them whole), answers are streamed out chunk by chunk with backpressure, and a client that
 * disconnects aborts the request (and with it the upstream call). A proxy from `createProxy` is
 * served through its `answer` (no web `Request`/`Response` per request); any other through
 * `handle`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SelfGcProxy } from './create-proxy.js';
import type { ProxyAnswer, ProxyRequest } from './proxy-exchange.js';
import { readIncomingChunks } from './read-body-bytes.js';

export interface ServeOptions {
  /** 0 picks a free port. */
  port: number;
  /** Default `127.0.0.1`. */
  host?: string;
}

export interface ServedProxy {
  /** `http://host:port`. */
  url: string;
  close(): Promise<void>;
}

/**
 * The request body as a web stream, paused while the consumer is behind. A consumer that stops
 * reading (a body over the limit) leaves the rest to be drained, so its answer still goes out.
 */
function bodyStream(req: IncomingMessage): ReadableStream<Uint8Array> {
  let onData: ((chunk: Buffer) => void) | undefined;
  let cancelled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      onData = (chunk) => {
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 0) <= 0) req.pause();
      };
      req.on('data', onData);
      let ended = false;
      req.once('end', () => {
        ended = true;
        if (!cancelled) controller.close();
      });
      // An upload cut short (client gone) ends in 'error' or 'close' without 'end'.
      const broken = (error: Error) => {
        if (!ended && !cancelled) controller.error(error);
        ended = true;
      };
      req.on('error', broken);
      req.once('close', () => broken(new Error('client disconnected during upload')));
    },
    pull() {
      req.resume();
    },
    cancel() {
      cancelled = true;
      if (onData !== undefined) req.off('data', onData);
      req.resume();
    },
  });
}

function headersOf(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (let index = 0; index + 1 < req.rawHeaders.length; index += 2) {
    const name = req.rawHeaders[index]!;
    // HTTP/2 pseudo headers and `host` are connection details, not request headers.
    if (!name.startsWith(':')) headers.append(name, req.rawHeaders[index + 1]!);
  }
  return headers;
}

function toRequest(req: IncomingMessage, base: string, signal: AbortSignal): Request {
  const method = req.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD';
  const init: RequestInit & { duplex?: 'half' } = { method, headers: headersOf(req), signal };
  if (hasBody) {
    init.body = bodyStream(req);
    init.duplex = 'half';
  }
  return new Request(new URL(req.url ?? '/', base), init);
}

function toProxyRequest(req: IncomingMessage, base: string, signal: AbortSignal): ProxyRequest {
  const method = req.method ?? 'GET';
  const { pathname, search } = new URL(req.url ?? '/', base);
  return {
    method,
    pathname,
    search,
    headers: headersOf(req),
    signal,
    ...(req.socket.remoteAddress === undefined ? {} : { remoteAddress: req.socket.remoteAddress }),
    body: () => (method === 'GET' || method === 'HEAD' ? null : bodyStream(req)),
    chunks: (limitBytes) => readIncomingChunks(req, limitBytes),
  };
}

function plainHeaders(headers: Headers): Record<string, string | string[]> {
  const plain: Record<string, string | string[]> = {};
  headers.forEach((value, name) => {
    if (name !== 'set-cookie') plain[name] = value;
  });
  const cookies = headers.getSetCookie();
  if (cookies.length > 0) plain['set-cookie'] = cookies;
  return plain;
}

async function writeAnswer(answer: ProxyAnswer, res: ServerResponse, signal: AbortSignal): Promise<void> {
  const headers = plainHeaders(answer.headers);
  const { body } = answer;
  if (typeof body === 'string' || body instanceof Uint8Array) {
    // Whole answers go out in one write, with their length.
    const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    headers['content-length'] = String(bytes.byteLength);
    res.writeHead(answer.status, headers);
    return void res.end(bytes);
  }
  res.writeHead(answer.status, headers);
  if (body === null) return void res.end();
  await writeStream(answer.headers, body, res, signal);
}

async function writeResponse(response: Response, res: ServerResponse, signal: AbortSignal): Promise<void> {
  res.writeHead(response.status, plainHeaders(response.headers));
  if (response.body === null) return void res.end();
  await writeStream(response.headers, response.body, res, signal);
}

async function writeStream(
  headers: Headers,
  body: ReadableStream<Uint8Array>,
  res: ServerResponse,
  signal: AbortSignal,
): Promise<void> {
  // Event streams show their headers at once; other answers send headers with the first bytes
  // (one packet instead of two, which delayed ACKs would otherwise hold up).
  if ((headers.get('content-type') ?? '').includes('text/event-stream')) res.flushHeaders();
  const reader = body.getReader();
  const cancel = () => void reader.cancel(signal.reason).catch(() => undefined);
  signal.addEventListener('abort', cancel, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) {
        await new Promise<void>((resolve) => {
          const finish = () => {
            res.off('drain', finish);
            res.off('close', finish);
            resolve();
          };
          res.on('drain', finish);
          res.on('close', finish);
        });
      }
      if (signal.aborted) return;
    }
    res.end();
  } catch {
    // The upstream broke off mid-answer: the client sees the connection end early, as it would.
    res.destroy();
  } finally {
    signal.removeEventListener('abort', cancel);
  }
}

export async function serveProxy(proxy: SelfGcProxy, options: ServeOptions): Promise<ServedProxy> {
  const host = options.host ?? '127.0.0.1';
  // Set once listening; requests are resolved against the proxy's own address, not `host` headers.
  let base = 'http://127.0.0.1';
  const server = createServer((req, res) => {
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gone.abort(new Error('client disconnected'));
    });
    const answer = (async () => {
      if (proxy.answer !== undefined) {
        const answered = await proxy.answer(toProxyRequest(req, base, gone.signal));
        return writeAnswer(answered, res, gone.signal);
      }
      const response = await proxy.handle(toRequest(req, base, gone.signal));
      await writeResponse(response, res, gone.signal);
    })();
    answer.catch(() => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: { message: 'proxy failure', type: 'server_error', param: null, code: null },
        }),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  base = `http://${shownHost}:${port}`;
  return {
    url: base,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
