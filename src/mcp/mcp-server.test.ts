import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../stores/memory-store.js';
import { createMcpServer, negotiateProtocolVersion, PROTOCOL_VERSIONS } from './mcp-server.js';
import { DEFAULT_PAGE_CHARS, MAX_PAGE_CHARS } from './recovery-tools.js';
import {
  commitFolds,
  LONG_ID,
  longOutput,
  SESSION,
  SHORT_ID,
  SHORT_OUTPUT,
} from './testing/folded-session.js';

async function server() {
  const governor = await commitFolds(createMemoryStore());
  return createMcpServer({ source: governor, sessionId: SESSION, version: '0.0.0-test' });
}

type Answer = {
  id: unknown;
  result?: { content?: Array<{ text: string }>; isError?: boolean } & Record<string, unknown>;
  error?: { code: number; message: string };
};

async function ask(mcp: Awaited<ReturnType<typeof server>>, message: unknown): Promise<Answer> {
  const line = await mcp.handleLine(typeof message === 'string' ? message : JSON.stringify(message));
  if (line === undefined) throw new Error('no answer');
  expect(line).not.toContain('\n');
  return JSON.parse(line) as Answer;
}

/** A lone surrogate does not survive UTF-8 (it becomes U+FFFD). */
const wellFormed = (text: string) => Buffer.from(text, 'utf8').toString('utf8') === text;

const call = (id: number, name: string, args: unknown) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

describe('createMcpServer', () => {
  it('negotiates the protocol version: the client’s when known, else the newest', async () => {
    const mcp = await server();
    for (const version of PROTOCOL_VERSIONS) {
      const answer = await ask(mcp, {
        jsonrpc: '2.0',
        id: 'init',
        method: 'initialize',
        params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 't', version: '1' } },
      });
      expect(answer).toMatchObject({
        id: 'init',
        result: {
          protocolVersion: version,
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: 'selfgc', version: '0.0.0-test' },
        },
      });
    }
    expect(negotiateProtocolVersion('1999-01-01')).toBe(PROTOCOL_VERSIONS[0]);
    const missing = await ask(mcp, { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} });
    expect(missing.error).toMatchObject({ code: -32602 });
    expect(await mcp.handleLine('{"jsonrpc":"2.0","method":"notifications/initialized"}')).toBeUndefined();
    expect(await ask(mcp, { jsonrpc: '2.0', id: 2, method: 'ping' })).toEqual({
      jsonrpc: '2.0',
      id: 2,
      result: {},
    });
  });

  it('answers what it cannot read with the JSON-RPC error the spec names', async () => {
    const mcp = await server();
    const cases: Array<[string, number, unknown]> = [
      ['{"jsonrpc":"2.0","id":1,', -32700, null],
      ['[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600, null],
      ['"ping"', -32600, null],
      ['{"id":3,"method":"ping"}', -32600, 3],
      ['{"jsonrpc":"2.0","id":4,"method":7}', -32600, 4],
      ['{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600, null],
      ['{"jsonrpc":"2.0","id":5,"method":"ping","params":"x"}', -32600, 5],
      ['{"jsonrpc":"2.0","id":6,"method":"resources/list"}', -32601, 6],
      ['{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}', -32602, 7],
      ['{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"fold"}}', -32602, 8],
    ];
    for (const [line, code, id] of cases) {
      const answer = await ask(mcp, line);
      expect(answer, line).toMatchObject({ jsonrpc: '2.0', id, error: { code } });
    }
    // Blank lines, unknown notifications and the client's own answers get no answer.
    for (const line of [
      '',
      '   ',
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}',
    ])
      expect(await mcp.handleLine(line)).toBeUndefined();
    expect(await mcp.handleLine('{"jsonrpc":"2.0","id":9,"result":{}}')).toBeUndefined();
  });

  it('lists expand and search_context with their argument schemas', async () => {
    const answer = await ask(await server(), { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const tools = answer.result?.tools as Array<{ name: string; inputSchema: Record<string, unknown> }>;
    expect(tools.map((tool) => tool.name)).toEqual(['expand', 'search_context']);
    expect(tools[0]?.inputSchema).toMatchObject({
      type: 'object',
      required: ['id'],
      properties: {
        id: { type: 'string' },
        offset: { type: 'integer' },
        max_chars: { maximum: MAX_PAGE_CHARS },
      },
    });
    expect(tools[1]?.inputSchema).toMatchObject({ required: ['query'] });
  });

  it('pages a long payload without splitting a character; the pages join back byte for byte', async () => {
    const mcp = await server();
    const payload = longOutput();
    const pages: string[] = [];
    let offset: number | undefined = 0;
    for (let round = 0; offset !== undefined && round < 10; round += 1) {
      const answer = await ask(mcp, call(round, 'expand', { id: LONG_ID, offset }));
      const [page, note] = answer.result?.content ?? [];
      expect(answer.result?.isError).toBeUndefined();
      expect(wellFormed(page!.text)).toBe(true);
      expect(page!.text.length).toBeLessThanOrEqual(DEFAULT_PAGE_CHARS);
      pages.push(page!.text);
      const next = /"offset": (\d+)/.exec(note!.text)?.[1];
      offset = next === undefined ? undefined : Number(next);
    }
    expect(pages).toHaveLength(3);
    // The emoji at the boundary moved whole to the second page.
    expect(pages[0]).toHaveLength(DEFAULT_PAGE_CHARS - 1);
    expect(pages.join('')).toBe(payload);

    const small = await ask(mcp, call(20, 'expand', { id: LONG_ID, offset: 5, max_chars: 10 }));
    expect(small.result?.content?.[0]?.text).toBe(payload.slice(5, 15));
    expect(small.result?.content?.[1]?.text).toContain(`"offset": 15`);
    const whole = await ask(mcp, call(21, 'expand', { id: SHORT_ID }));
    expect(whole.result).toEqual({ content: [{ type: 'text', text: SHORT_OUTPUT }] });
  });

  it('reports what the model can fix as a tool error it can read', async () => {
    const mcp = await server();
    const failures: Array<[unknown, RegExp]> = [
      [call(1, 'expand', { id: 'function:bash:99' }), /nothing stored for function:bash:99/],
      [call(2, 'expand', {}), /bad arguments for expand: id:/],
      [call(3, 'expand', { id: LONG_ID, offset: -1 }), /offset/],
      [call(4, 'expand', { id: LONG_ID, max_chars: MAX_PAGE_CHARS + 1 }), /max_chars/],
      [call(5, 'expand', { id: SHORT_ID, offset: SHORT_OUTPUT.length }), /past the end/],
      [call(6, 'search_context', { query: '' }), /bad arguments for search_context: query:/],
    ];
    for (const [message, pattern] of failures) {
      const answer = await ask(mcp, message);
      expect(answer.result?.isError, String(pattern)).toBe(true);
      expect(answer.result?.content?.[0]?.text).toMatch(pattern);
    }
  });

  it('searches the removed content', async () => {
    const mcp = await server();
    const found = await ask(mcp, call(1, 'search_context', { query: 'zanzibar_handler' }));
    expect(found.result?.content?.[0]?.text).toMatch(
      /^1 match for "zanzibar_handler".*\nfunction:read_file:2: /,
    );
    const none = await ask(mcp, call(2, 'search_context', { query: 'quokka' }));
    expect(none.result).toEqual({
      content: [{ type: 'text', text: 'no removed content matches "quokka".' }],
    });
  });
});
