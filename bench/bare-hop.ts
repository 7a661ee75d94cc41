/**
 * The least a proxy in Node can add, for the benches: a process that reads each request's body
 * whole, sends it on to the upstream with `node:http` and returns the answer, nothing else. It
 * prints `{"ready":"<url>"}` once listening.
 *
 *   node bench/bare-hop.ts --upstream <url>   (with `--import tsx`)
 */
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { upstream: { type: 'string' } } });
if (values.upstream === undefined) throw new Error('usage: bare-hop --upstream <url>');
const upstream = new URL(values.upstream);

const server = createServer((incoming, outgoing) => {
  const chunks: Buffer[] = [];
  incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
  incoming.on('end', () => {
    const body = Buffer.concat(chunks);
    const headers = { ...incoming.headers, host: upstream.host, 'content-length': String(body.byteLength) };
    const forwarded = request(
      { host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', (error) => {
      outgoing.writeHead(502);
      outgoing.end(error.message);
    });
    forwarded.end(body);
  });
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ ready: `http://127.0.0.1:${port}` })}\n`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
