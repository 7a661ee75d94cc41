import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import {
  callUpstream,
  fetchTransport,
  type TransportRequest,
  type UpstreamTransport,
} from './call-upstream.js';
import { nodeTransport } from './node-upstream.js';
import { conversationBody } from './testing/agent-conversation.js';
import { startProxyFixture } from './testing/proxy-fixture.js';

interface Seen {
  method: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A server that records each request and answers it with `answer`. */
async function serve(
  answer: (res: ServerResponse, seen: Seen) => void,
): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const entry = {
        method: req.method ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      seen.push(entry);
      answer(res, entry);
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, seen };
}

function request(url: string, init: Partial<TransportRequest> = {}): TransportRequest {
  return {
    url,
    method: 'POST',
    headers: new Headers({ 'content-type': 'application/json' }),
    body: '{"ok":true}',
    signal: new AbortController().signal,
    ...init,
  };
}

const TRANSPORTS: Array<[string, UpstreamTransport]> = [
  ['node', nodeTransport],
  ['fetch', fetchTransport(fetch)],
];

describe.each(TRANSPORTS)('%s transport', (_name, transport) => {
  it('sends the body with its length and reads the answer as text', async () => {
    const { url, seen } = await serve((res) => {
      res.writeHead(201, { 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'] });
      res.end('{"answer":"é€😀"}');
    });
    const answer = await transport(request(`${url}/v1/chat/completions?x=1`, { body: '{"q":"é"}' }));
    expect(answer.status).toBe(201);
    expect(answer.ok).toBe(true);
    expect(answer.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await answer.text()).toBe('{"answer":"é€😀"}');
    expect(seen[0]).toMatchObject({ method: 'POST', body: '{"q":"é"}' });
    expect(seen[0]?.headers['content-length']).toBe(String(Buffer.byteLength('{"q":"é"}')));
  });

  it('sends a body given as bytes as they are, with their length', async () => {
    const { url, seen } = await serve((res) => res.end('ok'));
    const bytes = new TextEncoder().encode('{ "q": "é€😀" }');
    const answer = await transport(request(`${url}/v1/messages`, { body: bytes }));
    expect(await answer.text()).toBe('ok');
    expect(seen[0]).toMatchObject({ method: 'POST', body: '{ "q": "é€😀" }' });
    expect(seen[0]?.headers['content-length']).toBe(String(bytes.byteLength));
  });

  it.each([
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ] as const)('decodes a %s answer, as it asked for one', async (coding, compress) => {
    const { url, seen } = await serve((res) => {
      res.writeHead(200, { 'content-encoding': coding, 'content-type': 'text/plain' });
      res.end(compress(Buffer.from('x'.repeat(10_000))));
    });
    const answer = await transport(request(url));
    expect(await answer.text()).toBe('x'.repeat(10_000));
    expect(seen[0]?.headers['accept-encoding']).toMatch(/gzip/);
  });

  it('reads the answer as the bytes it came in, even bytes that are not UTF-8', async () => {
    const sent = Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xfe]), Buffer.from('é"}')]);
    const { url } = await serve((res) => {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'application/json' });
      res.end(gzipSync(sent));
    });
    const answer = await transport(request(url));
    expect(Buffer.from(await answer.bytes()).equals(sent)).toBe(true);
  });

  it('streams a body it is given as a stream, chunked, and the answer as a stream', async () => {
    const { url, seen } = await serve((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
      setTimeout(() => res.end('data: 2\n\n'), 20);
    });
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"a":'));
        controller.enqueue(new TextEncoder().encode('1}'));
        controller.close();
      },
    });
    const answer = await transport(request(url, { body }));
    expect(await new Response(answer.body).text()).toBe('data: 1\n\ndata: 2\n\n');
    expect(seen[0]?.body).toBe('{"a":1}');
    expect(seen[0]?.headers['transfer-encoding']).toBe('chunked');
  });

  it('follows no redirect and gives no body for HEAD or 204', async () => {
    const { url } = await serve((res, seen) => {
      if (seen.method === 'GET') res.writeHead(302, { location: '/elsewhere' }).end('moved');
      else res.writeHead(seen.method === 'HEAD' ? 200 : 204).end();
    });
    const redirect = await transport(request(url, { method: 'GET', body: null }));
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe('/elsewhere');
    expect(await redirect.text()).toBe('moved');
    expect((await transport(request(url, { method: 'HEAD', body: null }))).body).toBeNull();
    expect((await transport(request(url, { method: 'DELETE', body: null }))).body).toBeNull();
  });

  it('rejects when the upstream cannot be reached, and when aborted', async () => {
    await expect(transport(request('http://127.0.0.1:9'))).rejects.toThrow();
    const { url } = await serve(() => undefined);
    const controller = new AbortController();
    const pending = transport(request(url, { signal: controller.signal }));
    setTimeout(() => controller.abort(), 20);
    await expect(pending).rejects.toThrow();
  });
});

describe('callUpstream over the node transport', () => {
  it('times out while the answer is still being read, and the connection is dropped', async () => {
    const { url } = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"partial":');
    });
    const call = await callUpstream({
      ...request(url),
      transport: nodeTransport,
      timeoutMs: 100,
      signal: new AbortController().signal,
    });
    await expect(call.text()).rejects.toMatchObject({ code: 'upstream-timeout' });
  });

  it('stops the upstream answer when the client leaves mid-stream', async () => {
    let closed = false;
    const { url } = await serve((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const timer = setInterval(() => res.write('data: tick\n\n'), 5);
      res.on('close', () => {
        closed = true;
        clearInterval(timer);
      });
    });
    const client = new AbortController();
    const call = await callUpstream({
      ...request(url),
      transport: nodeTransport,
      timeoutMs: 5_000,
      signal: client.signal,
    });
    call.settle();
    const reader = call.answer.body!.getReader();
    await reader.read();
    client.abort();
    await expect(
      (async () => {
        for (;;) if ((await reader.read()).done) return;
      })(),
    ).rejects.toThrow();
    for (let waited = 0; !closed && waited < 2_000; waited += 10) await new Promise((r) => setTimeout(r, 10));
    expect(closed).toBe(true);
  });
});

describe('a proxy given a fetch', () => {
  it('calls the upstream through it', async () => {
    const urls: string[] = [];
    const countingFetch: typeof fetch = (input, init) => {
      urls.push(String(input));
      return fetch(input, init);
    };
    const fixture = await startProxyFixture({
      script: () => ({ text: 'ok' }),
      proxy: { fetch: countingFetch },
    });
    try {
      const response = await fixture.post('chat', conversationBody('chat', { turns: 1 }));
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ choices: [{ message: { content: 'ok' } }] });
      expect(urls).toEqual([`${fixture.upstream.url}/v1/chat/completions`]);
    } finally {
      await fixture.close();
    }
  });
});
