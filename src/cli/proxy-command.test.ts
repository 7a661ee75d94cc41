import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEchoScript, startScriptedUpstream } from '../testing/index.js';

const root = new URL('../..', import.meta.url).pathname;

/** `selfgc proxy` in a child process, as a user starts it; resolves with its URL. */
function startCli(args: string[]): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '-e',
      `import('./src/cli/run-main.ts').then((m) => m.runMain(${JSON.stringify(['proxy', ...args])}))`,
    ],
    { cwd: root },
  );
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      stderr += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) resolve({ child, url: match[1]!, stderr: () => stderr });
    });
    child.on('exit', (code) => reject(new Error(`proxy exited with ${code}: ${stderr}`)));
  });
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

describe('selfgc proxy', () => {
  it('serves governed chat completions against the upstream, logs without keys, and stops on SIGTERM', async () => {
    const upstream = await startScriptedUpstream({ script: createEchoScript() });
    const store = `sqlite:${join(mkdtempSync(join(tmpdir(), 'selfgc-cli-')), 'proxy.db')}`;
    const proxy = await startCli([
      '--port',
      '0',
      '--upstream-openai',
      upstream.url,
      '--window',
      '4000',
      '--reserve-output',
      '900',
      '--store',
      store,
    ]);
    children.push(proxy.child);
    const response = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test-secret' },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello there' }] }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-session')).toBeTruthy();
    // The request names no max_tokens: the configured reserve is kept free.
    expect(response.headers.get('x-selfgc-output-reserve')).toBe('900');
    const body = (await response.json()) as { choices: Array<{ message: { content: string } }> };
    expect(body.choices[0]?.message.content).toContain('hello there');
    expect(upstream.requests[0]?.headers.authorization).toBe('Bearer sk-test-secret');
    const exited = new Promise<number | null>((resolve) => proxy.child.on('exit', resolve));
    proxy.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(proxy.stderr()).toContain('selfgc proxy stopped');
    expect(proxy.stderr()).not.toContain('sk-test-secret');
    await upstream.close();
  });

  it('takes the upstream timeout, retention, keyless tenancy and client-compaction threshold from its flags', async () => {
    const upstream = await startScriptedUpstream({
      script: [{ hang: true }, { text: 'ok' }, { text: 'ok' }],
    });
    const proxy = await startCli([
      '--port',
      '0',
      '--upstream-openai',
      upstream.url,
      '--store',
      'memory:',
      '--upstream-timeout',
      '300ms',
      '--retain',
      '1h',
      '--tenant-header',
      'X-Tenant',
      '--client-compaction-at',
      '5',
    ]);
    children.push(proxy.child);
    expect(proxy.stderr()).toMatch(/listening on .*sessions kept 1h/);
    const post = (headers: Record<string, string>) =>
      fetch(`${proxy.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello there' }] }),
      });
    const slow = await post({ 'x-tenant': 'alice' });
    expect(slow.status).toBe(504);
    const requestId = slow.headers.get('x-selfgc-request-id');
    expect(await slow.json()).toMatchObject({
      error: { message: 'upstream did not answer within 300 ms', code: 'selfgc_upstream_timeout' },
      request_id: requestId,
    });
    const signalled = await post({ 'x-tenant': 'bob' });
    expect(signalled.status).toBe(200);
    // Its prompt is over 5 tokens: the answer reports it, for the client to compact.
    expect(Number(signalled.headers.get('x-selfgc-tokens-before'))).toBeGreaterThan(5);
    expect(signalled.headers.get('x-selfgc-warnings')).toContain('client-compaction');
    expect(proxy.stderr()).not.toContain('share one session namespace');
    expect((await post({})).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(proxy.stderr()).toContain('requests without an API key share one session namespace');
    const exited = new Promise<number | null>((resolve) => proxy.child.on('exit', resolve));
    proxy.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    await upstream.close();
  }, 60_000);

  it('says why its store is unavailable when it starts degraded', async () => {
    const proxy = await startCli([
      '--port',
      '0',
      '--governance-threads',
      '0',
      '--store',
      'sqlite:/no/such/directory/selfgc.db',
    ]);
    children.push(proxy.child);
    expect(proxy.stderr()).toContain('store sqlite unavailable: serving degraded');
    await expect.poll(() => proxy.stderr()).toContain('"event":"store"');
    const event = JSON.parse(
      proxy
        .stderr()
        .split('\n')
        .find((line) => line.includes('"event":"store"'))!,
    ) as {
      status: string;
      error?: string;
    };
    expect(event.status).toBe('down');
    expect(event.error).toMatch(
      /\/no\/such\/directory\/selfgc\.db: cannot open \(.*directory does not exist/,
    );
  }, 60_000);

  it('governs a memory store on its own thread, where the store lives, and refuses threads for it', async () => {
    const proxy = await startCli(['--port', '0', '--store', 'memory:']);
    children.push(proxy.child);
    expect(proxy.stderr()).toMatch(/listening on .*\(store memory, .*governing on its own thread\)/);
    await expect(
      startCli(['--port', '0', '--store', 'memory:', '--governance-threads', '2']),
    ).rejects.toThrow(
      /exited with 2: selfgc: --store memory: lives in one thread, and each governance thread would have a store of its own/,
    );
  }, 60_000);

  it('refuses a bad store URL with one line and a non-zero exit', async () => {
    await expect(startCli(['--store', 'ftp://nowhere'])).rejects.toThrow(
      /exited with [1-9]\d*: selfgc: .*ftp/,
    );
  });
});
