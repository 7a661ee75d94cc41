/**
 * The CLI edges as a user meets them: `selfgc` in a child process (run from source, as
 * `proxy-command.test.ts` does), its exit code, its stderr, and that it exits at all.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';

const root = new URL('../..', import.meta.url).pathname;
const SAMPLE = 'samples/selfgc-sessions.jsonl';

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `selfgc …` in a child process; killed (and the test failed) if it has not exited in time. */
function selfgc(args: string[], deadlineMs = 50_000): Promise<Finished> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '-e',
      `import('./src/cli/run-main.ts').then((m) => m.runMain(${JSON.stringify(args)}))`,
    ],
    { cwd: root },
  );
  let stdout = '';
  let stderr = '';
  // Decoded as streams: a character split between two reads stays whole.
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`selfgc ${args.join(' ')} did not exit within ${deadlineMs} ms; stderr: ${stderr}`));
    }, deadlineMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

let occupied: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (occupied ? occupied.close(() => resolve()) : resolve()));
  occupied = undefined;
});

describe('selfgc in a process', { timeout: 60_000 }, () => {
  it('replay --emit into a missing directory: exit 2 with one line, before any replay', async () => {
    const result = await selfgc(['replay', SAMPLE, '--strategy', 'none', '--emit', '/no/such/dir/x.jsonl']);
    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr: 'selfgc: --emit: directory /no/such/dir does not exist\n',
    });
  });

  it('eval --report into a missing directory: exit 2 with one line, before evaluating', async () => {
    const result = await selfgc(['eval', SAMPLE, '--report', '/no/such/dir/r.html']);
    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr: 'selfgc: --report: directory /no/such/dir does not exist\n',
    });
  });

  it('--window -5: the option names its value', async () => {
    const result = await selfgc(['eval', SAMPLE, '--window', '-5']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('selfgc: --window: expected a positive integer, got "-5"\n');
  });

  it('proxy on a port in use: exits non-zero at once with one line', async () => {
    const server = createServer();
    occupied = server;
    const port = await new Promise<number>((resolve) =>
      server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
    );
    const result = await selfgc(['proxy', '--port', String(port), '--store', 'memory:']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `selfgc: --port ${port}: 127.0.0.1:${port} is already in use (another selfgc proxy?)\n`,
    );
  });
});
