/**
 * `selfgc mcp` as an agent starts it: a child process speaking MCP over its stdin and stdout,
 * against a SQLite store filled through the library (folds committed by an agent's plan).
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  commitFolds,
  LONG_ID,
  longOutput,
  SESSION,
  SHORT_ID,
  SHORT_OUTPUT,
} from '../mcp/testing/folded-session.js';
import { hashApiKey } from '../proxy/session-identity.js';
import { createSqliteStore } from '../stores/sqlite-store.js';

const root = new URL('../..', import.meta.url).pathname;

/** The newest modification time under `folder`'s .ts files (tests excluded). */
function newestSource(folder: string): number {
  return Math.max(
    ...readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))
      .map((name) => statSync(join(root, folder, name)).mtimeMs),
  );
}

/**
 * `node bin/selfgc.js` when `dist/` is built from the current sources (npx tsc -p
 * tsconfig.build.json), else the same entry through tsx, so a stale build is never tested.
 */
function selfgcCommand(): { argv: string[]; label: string } {
  const built = join(root, 'dist/mcp/mcp-server.js');
  const fresh =
    existsSync(built) &&
    statSync(built).mtimeMs >=
      Math.max(newestSource('src/mcp'), newestSource('src/cli'), newestSource('src/core'));
  if (fresh) return { argv: [join(root, 'bin/selfgc.js')], label: 'node bin/selfgc.js' };
  return {
    argv: [
      '--import',
      'tsx',
      '-e',
      "import('./src/cli/run-main.ts').then((m) => m.runMain(process.argv.slice(1)))",
      '--',
    ],
    label: 'run-main through tsx (dist/ is missing or older than src/)',
  };
}

type Answer = {
  id: unknown;
  result?: Record<string, unknown> & { content?: Array<{ type: string; text: string }>; isError?: boolean };
  error?: { code: number; message: string };
};

/** An MCP client on a child's stdio: one JSON line per message, answers matched by id. */
class StdioClient {
  readonly lines: string[] = [];
  stderr = '';
  readonly exited: Promise<number | null>;
  #waiting = new Map<unknown, (answer: Answer) => void>();

  constructor(readonly child: ChildProcessWithoutNullStreams) {
    createInterface({ input: child.stdout }).on('line', (line) => {
      this.lines.push(line);
      const answer = JSON.parse(line) as Answer;
      this.#waiting.get(answer.id)?.(answer);
      this.#waiting.delete(answer.id);
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  }

  send(line: string): void {
    this.child.stdin.write(`${line}\n`);
  }

  request(id: number, method: string, params?: unknown): Promise<Answer> {
    const answered = new Promise<Answer>((resolve, reject) => {
      this.#waiting.set(id, resolve);
      setTimeout(() => reject(new Error(`no answer to ${method} #${id}; stderr: ${this.stderr}`)), 20_000);
    });
    this.send(JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }));
    return answered;
  }
}

const command = selfgcCommand();
let storePath: string;
const clients: StdioClient[] = [];

function start(args: string[], env: Record<string, string> = {}): StdioClient {
  const child = spawn(process.execPath, [...command.argv, 'mcp', ...args], {
    cwd: root,
    env: { ...process.env, ...env },
  });
  const client = new StdioClient(child);
  clients.push(client);
  return client;
}

beforeAll(async () => {
  storePath = join(mkdtempSync(join(tmpdir(), 'selfgc-mcp-')), 'selfgc.db');
  const store = createSqliteStore({ path: storePath });
  await commitFolds(store);
  await store.close();
});

afterAll(() => {
  for (const client of clients) if (client.child.exitCode === null) client.child.kill('SIGKILL');
});

const call = (name: string, args: unknown) => ({ name, arguments: args });

describe(`selfgc mcp (${command.label})`, () => {
  it('initializes, lists its tools, recovers a fold byte for byte in pages, searches, and exits on EOF', {
    timeout: 60_000,
  }, async () => {
    const mcp = start(['--store', `sqlite:${storePath}`, '--session', SESSION]);
    const init = await mcp.request(1, 'initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'test-client', version: '1.0.0' },
    });
    expect(init.result).toMatchObject({
      protocolVersion: '2025-06-18',
      capabilities: { tools: {} },
      serverInfo: { name: 'selfgc' },
    });
    mcp.send('{"jsonrpc":"2.0","method":"notifications/initialized"}');

    const list = await mcp.request(2, 'tools/list');
    expect((list.result!.tools as Array<{ name: string }>).map((tool) => tool.name)).toEqual([
      'expand',
      'search_context',
    ]);

    const short = await mcp.request(3, 'tools/call', call('expand', { id: SHORT_ID }));
    expect(short.result).toEqual({ content: [{ type: 'text', text: SHORT_OUTPUT }] });

    // Paging: follow the offsets the answers name until the last page.
    let text = '';
    let offset: number | undefined = 0;
    for (let id = 10; offset !== undefined && id < 20; id += 1) {
      const page = await mcp.request(id, 'tools/call', call('expand', { id: LONG_ID, offset }));
      const [content, note] = page.result?.content ?? [];
      text += content?.text ?? '';
      const next = /"offset": (\d+)/.exec(note?.text ?? '')?.[1];
      offset = next === undefined ? undefined : Number(next);
    }
    expect(text).toBe(longOutput());

    const search = await mcp.request(4, 'tools/call', call('search_context', { query: 'zanzibar_handler' }));
    expect(search.result?.content?.[0]?.text).toContain(`${SHORT_ID}: def zanzibar_handler`);

    // Bad input: answered, never a crash.
    mcp.send('this is not json');
    mcp.send('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope"}}');
    const unknown = await mcp.request(6, 'tools/call', call('expand', { id: 'function:bash:404' }));
    expect(unknown.result).toMatchObject({ isError: true });
    const method = await mcp.request(7, 'prompts/list');
    expect(method.error).toMatchObject({ code: -32601 });
    const parsed = mcp.lines.map((line) => JSON.parse(line) as Answer);
    expect(parsed.find((answer) => answer.error?.code === -32700)).toMatchObject({ id: null });
    expect(parsed.find((answer) => answer.id === 5)?.error).toMatchObject({ code: -32602 });

    mcp.child.stdin.end();
    expect(await mcp.exited).toBe(0);
    // stdout held only MCP messages; the log went to stderr.
    expect(mcp.lines.every((line) => (JSON.parse(line) as { jsonrpc: string }).jsonrpc === '2.0')).toBe(true);
    expect(mcp.stderr).toContain(`session ${SESSION}`);
  });

  it('builds the proxy’s session id from --key-hash or --api-key-env', { timeout: 60_000 }, async () => {
    const [keyHash, session] = SESSION.split(':') as [string, string];
    const byHash = start(['--store', `sqlite:${storePath}`, '--key-hash', keyHash, '--session', session]);
    const found = await byHash.request(1, 'tools/call', call('expand', { id: SHORT_ID }));
    expect(found.result?.content?.[0]?.text).toBe(SHORT_OUTPUT);
    byHash.child.stdin.end();
    expect(await byHash.exited).toBe(0);

    // Another key reaches another store session, where nothing is stored.
    const otherHash = hashApiKey(new Headers({ authorization: 'Bearer sk-other' }));
    const byKey = start(
      ['--store', `sqlite:${storePath}`, '--api-key-env', 'TEST_KEY', '--session', session],
      {
        TEST_KEY: 'sk-other',
      },
    );
    const missing = await byKey.request(1, 'tools/call', call('expand', { id: SHORT_ID }));
    expect(missing.result).toMatchObject({ isError: true });
    byKey.child.stdin.end();
    expect(await byKey.exited).toBe(0);
    expect(byKey.stderr).toContain(`session ${otherHash}:${session} is not in this sqlite store yet`);
  });

  it('refuses bad options with one line and an exit code', { timeout: 60_000 }, async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--store', `sqlite:${storePath}`], /needs --session/],
      [['--store', 'sqlite:./no-such-selfgc.db', '--session', 's'], /no such file/],
      [['--store', `sqlite:${storePath}`, '--session', 's', '--key-hash', 'XYZ'], /--key-hash must be 32/],
      [
        ['--store', `sqlite:${storePath}`, '--session', 's', '--api-key-env', 'SELFGC_UNSET_VARIABLE'],
        /not set/,
      ],
      [['--store', 'ftp://x', '--session', 's'], /unknown store URL scheme/],
    ];
    await Promise.all(
      cases.map(async ([args, pattern]) => {
        const mcp = start(args);
        mcp.child.stdin.end();
        expect(await mcp.exited, args.join(' ')).toBe(2);
        expect(mcp.stderr).toMatch(pattern);
        expect(mcp.stderr).not.toContain('    at ');
        expect(mcp.lines).toEqual([]);
      }),
    );
  });
});
