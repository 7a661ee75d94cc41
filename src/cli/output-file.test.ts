import { spawn, spawnSync } from 'node:child_process';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BadInputError } from '../core/errors.js';
import { openOutputStream, writeOutputFile } from './output-file.js';

const folder = () => mkdtempSync(join(tmpdir(), 'selfgc-output-'));

describe('writeOutputFile', () => {
  it('replaces a file with the whole text, keeps its mode, and leaves nothing beside it', () => {
    const directory = folder();
    const path = join(directory, 'summary.json');
    writeFileSync(path, 'old', { mode: 0o600 });
    writeOutputFile(path, 'new', '--json');
    expect(readFileSync(path, 'utf8')).toBe('new');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(directory)).toEqual(['summary.json']);
  });

  it('writes through a symbolic link, which stays a link', () => {
    const directory = folder();
    const real = join(directory, 'real.md');
    writeFileSync(real, 'old');
    const link = join(directory, 'RESULTS.md');
    symlinkSync(real, link);
    writeOutputFile(link, 'new', '--markdown');
    expect(readFileSync(real, 'utf8')).toBe('new');
    expect(readdirSync(directory).sort()).toEqual(['RESULTS.md', 'real.md']);
  });

  it('writes through a link whose file does not exist yet, which stays a link', () => {
    const directory = folder();
    const link = join(directory, 'RESULTS.md');
    symlinkSync('results/latest.md', link);
    mkdirSync(join(directory, 'results'));
    writeOutputFile(link, 'new', '--markdown');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(directory, 'results', 'latest.md'), 'utf8')).toBe('new');
  });

  it('never writes through a file planted at the temporary name (a shared directory such as /tmp)', () => {
    const directory = folder();
    const victim = join(directory, 'victim');
    writeFileSync(victim, 'kept');
    const path = join(directory, 'summary.json');
    // Another user can guess a name made of the output's and the process id.
    symlinkSync(victim, `${path}.${process.pid}.tmp`);
    writeOutputFile(path, 'new', '--json');
    expect(readFileSync(victim, 'utf8')).toBe('kept');
    expect(readFileSync(path, 'utf8')).toBe('new');
  });
});

/** Bind-mount `source` over `target` (a file a container mounts alone), or false where that cannot be done. */
function bindMount(source: string, target: string): boolean {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return false;
  return spawnSync('mount', ['--bind', source, target]).status === 0;
}

describe('writeOutputFile on a file mounted alone', () => {
  it('writes the file in place, where it cannot be renamed over (docker run -v results.json:…)', (context) => {
    const directory = folder();
    const host = join(directory, 'host.json');
    const path = join(directory, 'summary.json');
    writeFileSync(host, 'old');
    writeFileSync(path, '');
    if (!bindMount(host, path)) return context.skip();
    try {
      writeOutputFile(path, 'new', '--json');
      expect(readFileSync(host, 'utf8')).toBe('new');
      expect(readdirSync(directory).sort()).toEqual(['host.json', 'summary.json']);
    } finally {
      spawnSync('umount', [path]);
    }
  });
});

describe('openOutputStream', () => {
  it('leaves the previous file as it was when the output is discarded', async () => {
    const directory = folder();
    const path = join(directory, 'views.jsonl');
    writeFileSync(path, 'previous\n');
    const output = openOutputStream(path, '--emit');
    output.stream.write('half a line');
    await new Promise<void>((resolve) => output.stream.end(resolve));
    expect(readFileSync(path, 'utf8')).toBe('previous\n');
    output.discard();
    expect(readdirSync(directory)).toEqual(['views.jsonl']);
  });

  it('names the option of an output it cannot put in place, and leaves no temporary file', async () => {
    const directory = folder();
    const path = join(directory, 'views.jsonl');
    writeFileSync(path, 'previous\n');
    const output = openOutputStream(path, '--emit');
    output.stream.write('a line\n');
    await new Promise<void>((resolve) => output.stream.end(resolve));
    // Something took the file's place meanwhile: the rename cannot go over a directory.
    rmSync(path);
    mkdirSync(path);
    expect(() => output.commit()).toThrow(BadInputError);
    expect(() => output.commit()).toThrow(new RegExp(`^--emit: cannot write ${path} \\(`));
    expect(readdirSync(directory)).toEqual(['views.jsonl']);
  });

  it('removes its temporary file when the run is interrupted (Ctrl-C), and still ends on the signal', async () => {
    const directory = folder();
    const path = join(directory, 'views.jsonl');
    writeFileSync(path, 'previous\n');
    const module = new URL('./output-file.ts', import.meta.url).href;
    const script = `
      const { openOutputStream } = await import(${JSON.stringify(module)});
      const output = openOutputStream(${JSON.stringify(path)}, '--emit');
      output.stream.write('half a line', () => process.kill(process.pid, 'SIGINT'));
      setTimeout(() => undefined, 10_000);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script]);
    const signal = await new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('exit', (_code, received) => resolve(received)),
    );
    expect(signal).toBe('SIGINT');
    expect(readdirSync(directory)).toEqual(['views.jsonl']);
    expect(readFileSync(path, 'utf8')).toBe('previous\n');
  }, 30_000);
});
