/**
 * A recording relay between a CLI and the proxy: it forwards every request as it came and every
 * answer as it goes (streamed chunk by chunk), and keeps a copy of both. The suite needs what
 * the client itself sent to tell content the client sent from content the proxy added.
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decompress } from 'fzstd';

export interface RecordedExchange {
  index: number;
  /** Milliseconds since the relay started, when the request was read whole. */
  at: number;
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The request body as text (decoded from zstd). */
  body: string;
  /** Undefined when the answer never came (the relay could not reach the proxy). */
  status?: number;
  /** The proxy's id for the request (its `x-selfgc-request-id` answer header), as its log names it. */
  requestId?: string;
  /** The session the proxy governed the request in (its `x-selfgc-session` answer header). */
  session?: string;
  /** The commits governance made for the request (its `x-selfgc-commit` answer header). */
  commit?: string;
  /** The codes of the request's warnings (its `x-selfgc-warnings` answer header). */
  warnings?: string[];
  /** The answer as text (streams included), cut after `ANSWER_LIMIT` bytes. */
  answer: string;
}

export interface RecordingRelay {
  url: string;
  /** When the relay started (epoch milliseconds): what each exchange's `at` counts from. */
  startedAt: number;
  exchanges: RecordedExchange[];
  close(): Promise<void>;
}

/**
 * The header a relay adds to every request it forwards, naming the client behind it
 * (`startRecordingRelay`'s `client`): the proxy passes it on like any client header, so each
 * request the scripted upstream gets names the CLI process it serves.
 */
export const CLIENT_HEADER = 'x-e2e-client';

/** Bytes of each answer kept. */
const ANSWER_LIMIT = 1_000_000;

function flatten(headers: IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

/**
 * A request body as text: a zstd body (Codex signed in with ChatGPT) decoded with fzstd's one-shot
 * decoder rather than the proxy's own streaming one, so that what the client sent is read
 * without the code under test.
 */
function bodyText(body: Buffer, contentEncoding: string | undefined): string {
  if (contentEncoding?.trim().toLowerCase() !== 'zstd') return body.toString('utf8');
  try {
    return Buffer.from(decompress(body)).toString('utf8');
  } catch (error) {
    // Recorded as sent; the proxy's answer says what it made of it.
    return `relay: not zstd (${(error as Error).message}): ${body.toString('utf8')}`;
  }
}

/**
 * Listen on 127.0.0.1 (ephemeral port) and relay to `target` (`http://host:port`), adding
 * `CLIENT_HEADER: client` to each request (not to what is recorded of it).
 */
export async function startRecordingRelay(target: string, client: string): Promise<RecordingRelay> {
  const exchanges: RecordedExchange[] = [];
  const started = Date.now();
  const destination = new URL(target);
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      const exchange: RecordedExchange = {
        index: exchanges.length,
        at: Date.now() - started,
        method: incoming.method ?? 'GET',
        path: incoming.url ?? '/',
        headers: flatten(incoming.headers),
        body: bodyText(body, incoming.headers['content-encoding']),
        answer: '',
      };
      exchanges.push(exchange);
      const forwarded = httpRequest(
        {
          host: destination.hostname,
          port: destination.port,
          method: exchange.method,
          path: exchange.path,
          headers: { ...incoming.headers, host: destination.host, [CLIENT_HEADER]: client },
        },
        (answer) => {
          exchange.status = answer.statusCode ?? 0;
          const requestId = answer.headers['x-selfgc-request-id'];
          if (typeof requestId === 'string') exchange.requestId = requestId;
          const session = answer.headers['x-selfgc-session'];
          if (typeof session === 'string') exchange.session = session;
          const commit = answer.headers['x-selfgc-commit'];
          if (typeof commit === 'string') exchange.commit = commit;
          const warnings = answer.headers['x-selfgc-warnings'];
          if (typeof warnings === 'string') exchange.warnings = warnings.split(',');
          outgoing.writeHead(exchange.status, answer.rawHeaders);
          const kept: Buffer[] = [];
          let keptBytes = 0;
          const keep = () => {
            exchange.answer = Buffer.concat(kept).toString('utf8');
          };
          answer.on('data', (chunk: Buffer) => {
            if (keptBytes < ANSWER_LIMIT) {
              kept.push(chunk);
              keptBytes += chunk.length;
            }
            outgoing.write(chunk);
          });
          answer.on('end', () => {
            keep();
            outgoing.end();
          });
          answer.on('close', keep);
          answer.on('error', () => outgoing.destroy());
        },
      );
      forwarded.on('error', (error) => {
        exchange.answer = `relay: ${error.message}`;
        if (outgoing.headersSent) return void outgoing.destroy();
        outgoing.writeHead(502, { 'content-type': 'application/json' });
        outgoing.end(JSON.stringify({ error: { message: `relay: ${error.message}` } }));
      });
      outgoing.on('close', () => {
        if (!outgoing.writableFinished) forwarded.destroy();
      });
      forwarded.end(body);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    startedAt: started,
    exchanges,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
