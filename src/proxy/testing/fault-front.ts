/**
 * A loopback server in front of the scripted upstream: it forwards every request there, except
 * the one numbered `at` (0-based), which gets the fault instead.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Fault =
  /** Answer with this status and a body that starts and never ends. */
  | { kind: 'stalled-error-body'; status: number }
  /** Answer the request before it with `connection: close`, and stop listening: this one is refused. */
  | { kind: 'refused' };

export interface FaultFront {
  url: string;
  /** Requests seen. */
  count(): number;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startFaultFront(target: () => string, at: number, fault: Fault): Promise<FaultFront> {
  let seen = 0;
  let server: Server;
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const index = seen++;
    const body = await readBody(req);
    if (index === at && fault.kind === 'stalled-error-body') {
      res.writeHead(fault.status, { 'content-type': 'application/json' });
      res.write('{"error": {"message": "upstream');
      return; // never ends
    }
    const closeAfter = fault.kind === 'refused' && index === at - 1;
    if (closeAfter) server.close();
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === 'string' && name !== 'host' && name !== 'content-length' && name !== 'connection')
        headers[name] = value;
    }
    const answer = await fetch(`${target()}${req.url}`, { method: req.method ?? 'POST', headers, body });
    const out: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      if (
        !['content-length', 'transfer-encoding', 'connection', 'content-encoding', 'keep-alive'].includes(
          name,
        )
      )
        out[name] = value;
    });
    if (closeAfter) out.connection = 'close';
    res.writeHead(answer.status, out);
    if (answer.body === null) return void res.end();
    for await (const chunk of answer.body) res.write(chunk);
    res.end();
  };
  server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    count: () => seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
        // Already closed (the `refused` fault): close() calls back with an error at once.
      }),
  };
}
