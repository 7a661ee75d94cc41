import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BadInputError } from '../core/errors.js';
import { defaultEntryModel } from '../core/valuator/entry-model.js';
import { parseDuration, positiveInteger } from './cli-args.js';
import type { CliIo } from './cli-io.js';
import { runCommand } from './run-main.js';
import { captureIo } from './testing/capture-io.js';

const SAMPLE = new URL('../../samples/selfgc-sessions.jsonl', import.meta.url).pathname;

/** An io that records output and counts progress reports (work done). */

async function refusal(argv: string[], io: CliIo): Promise<BadInputError> {
  const error = await runCommand(argv, io).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, argv.join(' ')).toBeInstanceOf(BadInputError);
  return error as BadInputError;
}

describe('output paths are checked before any work', () => {
  it('replay --emit into a missing directory: one clear line, no session replayed', async () => {
    const { io, progress, err } = captureIo();
    const error = await refusal(
      ['replay', SAMPLE, '--strategy', 'none', '--emit', '/no/such/dir/x.jsonl'],
      io,
    );
    expect(error.message).toBe('--emit: directory /no/such/dir does not exist');
    expect(progress()).toBe(0);
    expect(err()).toBe('');
  });

  // /dev/full (Linux) fails every write with ENOSPC.
  it.skipIf(!existsSync('/dev/full'))(
    'replay reports a write that fails midway (a full disk) with one line, not an unhandled error',
    async () => {
      const { io } = captureIo();
      const error = await refusal(['replay', SAMPLE, '--strategy', 'none', '--emit', '/dev/full'], io);
      expect(error.message).toMatch(/^--emit: cannot write \/dev\/full \(ENOSPC/);
    },
  );

  it.skipIf(!existsSync('/dev/full'))(
    'eval and train report an output they cannot write (a full disk) with one line naming the option',
    async () => {
      const { io } = captureIo();
      const fromEval = await refusal(
        ['eval', SAMPLE, '--strategies', 'none', '--modes', 'cut', '--json', '/dev/full'],
        io,
      );
      expect(fromEval.message).toBe('--json: cannot write /dev/full (ENOSPC)');
      const fromTrain = await refusal(['train', SAMPLE, '--out', '/dev/full'], io);
      expect(fromTrain.message).toBe('--out: cannot write /dev/full (ENOSPC)');
    },
  );

  it('eval --report, --json or --markdown into a missing directory, or onto a directory: refused before evaluating', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'selfgc-hygiene-'));
    for (const [flag, path, message] of [
      ['--report', '/no/such/dir/r.html', '--report: directory /no/such/dir does not exist'],
      ['--json', '/no/such/dir/s.json', '--json: directory /no/such/dir does not exist'],
      ['--json', folder, `--json: ${folder} is a directory, not a file`],
      ['--report', join(SAMPLE, 'r.html'), `--report: ${SAMPLE} is not a directory`],
      ['--markdown', '/no/such/dir/RESULTS.md', '--markdown: directory /no/such/dir does not exist'],
      ['--markdown', folder, `--markdown: ${folder} is a directory, not a file`],
    ] as const) {
      const { io, err, progress } = captureIo();
      const error = await refusal(['eval', SAMPLE, '--strategies', 'none', flag, path], io);
      expect(error.message).toBe(message);
      expect(err()).not.toContain('evaluating');
      expect(progress()).toBe(0);
    }
  });
});

describe('an output never overwrites an input or another output', () => {
  it('refuses an output that names an input file, by any path, and leaves the input whole', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'selfgc-hygiene-'));
    const sessions = join(folder, 'sessions.jsonl');
    const content = readFileSync(SAMPLE, 'utf8').split('\n').slice(0, 1).join('\n');
    writeFileSync(sessions, content);
    const cuts = join(folder, 'cuts.json');
    writeFileSync(cuts, '{}');
    for (const [argv, message] of [
      [
        ['eval', sessions, '--strategies', 'none', '--json', sessions],
        `--json: ${sessions} is also an input (${sessions}); writing it would overwrite it`,
      ],
      [
        ['eval', sessions, '--strategies', 'none', '--markdown', join(folder, '.', 'sessions.jsonl')],
        `--markdown: ${join(folder, 'sessions.jsonl')} is also an input (${sessions}); writing it would overwrite it`,
      ],
      [
        ['train', sessions, '--out', sessions],
        `--out: ${sessions} is also an input (${sessions}); writing it would overwrite it`,
      ],
      [
        ['replay', sessions, '--strategy', 'none', '--emit', sessions],
        `--emit: ${sessions} is also an input (${sessions}); writing it would overwrite it`,
      ],
      [
        ['replay', sessions, '--strategy', 'none', '--cuts', cuts, '--emit', cuts],
        `--emit: ${cuts} is also an input (${cuts}); writing it would overwrite it`,
      ],
    ] as const) {
      const { io, progress } = captureIo();
      expect((await refusal([...argv], io)).message).toBe(message);
      expect(progress()).toBe(0);
    }
    expect(readFileSync(sessions, 'utf8')).toBe(content);
    expect(readFileSync(cuts, 'utf8')).toBe('{}');
  });

  it('refuses an eval output that names the --model file it reads', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'selfgc-hygiene-'));
    const model = join(folder, 'model.json');
    const content = `${JSON.stringify(defaultEntryModel())}\n`;
    writeFileSync(model, content);
    const { io, progress } = captureIo();
    const error = await refusal(
      ['eval', SAMPLE, '--strategies', 'none', '--model', model, '--json', model],
      io,
    );
    expect(error.message).toBe(`--json: ${model} is also an input (${model}); writing it would overwrite it`);
    expect(progress()).toBe(0);
    expect(readFileSync(model, 'utf8')).toBe(content);
  });

  it('refuses two outputs on one file, existing or not', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'selfgc-hygiene-'));
    const fresh = join(folder, 'results.out');
    const { io, progress } = captureIo();
    const error = await refusal(
      ['eval', SAMPLE, '--strategies', 'none', '--json', fresh, '--markdown', fresh],
      io,
    );
    expect(error.message).toBe(`--json and --markdown name the same file ${fresh}; give each its own`);
    writeFileSync(fresh, 'kept');
    const again = await refusal(
      [
        'eval',
        SAMPLE,
        '--strategies',
        'none',
        '--report',
        fresh,
        '--markdown',
        join(folder, '.', 'results.out'),
      ],
      io,
    );
    expect(again.message).toMatch(/^--report and --markdown name the same file/);
    expect(progress()).toBe(0);
    expect(readFileSync(fresh, 'utf8')).toBe('kept');
  });

  it.skipIf(!existsSync('/dev/null'))(
    'takes a device for several outputs: it is a stream, not a file',
    async () => {
      const { io } = captureIo();
      expect(
        await runCommand(
          [
            'eval',
            SAMPLE,
            '--strategies',
            'none',
            '--modes',
            'cut',
            '--json',
            '/dev/null',
            '--markdown',
            '/dev/null',
          ],
          io,
        ),
      ).toBe(0);
    },
  );
});

describe('an output is replaced whole or not at all', () => {
  it('replay keeps the previous --emit file until the run has written all of it', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'selfgc-hygiene-'));
    const emit = join(folder, 'views.jsonl');
    writeFileSync(emit, 'the previous run\n');
    const seen: string[] = [];
    const { io } = captureIo();
    // An interruption at any progress report would leave what the file holds then.
    io.progress = () => seen.push(readFileSync(emit, 'utf8'));
    expect(
      await runCommand(
        [
          'replay',
          SAMPLE,
          '--strategy',
          'tool-prune',
          '--mode',
          'session',
          '--window',
          '6000',
          '--emit',
          emit,
        ],
        io,
      ),
    ).toBe(0);
    expect(seen.length).toBeGreaterThan(1);
    expect(new Set(seen)).toEqual(new Set(['the previous run\n']));
    const lines = readFileSync(emit, 'utf8').trim().split('\n');
    expect(lines.length).toBeGreaterThan(1);
    expect(lines.every((line) => (JSON.parse(line) as { strategy: string }).strategy === 'tool-prune')).toBe(
      true,
    );
    expect(readdirSync(folder)).toEqual(['views.jsonl']);
  });
});

describe('numeric options', () => {
  it('names the option of a negative or malformed number instead of "argument is ambiguous"', async () => {
    const { io } = captureIo();
    const out = join(mkdtempSync(join(tmpdir(), 'selfgc-hygiene-')), 'x.jsonl');
    for (const [argv, message] of [
      [
        ['replay', SAMPLE, '--strategy', 'none', '--mode', 'session', '--window', '-5', '--emit', out],
        '--window: expected a positive integer, got "-5"',
      ],
      [['eval', SAMPLE, '--window', '0'], '--window: expected a positive integer, got "0"'],
      [
        ['eval', SAMPLE, '--cuts-per-session', '2.5'],
        '--cuts-per-session: expected a positive integer, got "2.5"',
      ],
      [
        ['proxy', '--upstream-timeout', '-1'],
        '--upstream-timeout: expected a duration such as 600 (seconds), 1500ms, 90s or 10m, got "-1"',
      ],
      [['proxy', '--retain', '7 days'], '--retain: expected a duration such as 30m, 12h or 7d, got "7 days"'],
      [
        ['proxy', '--client-compaction-at', 'never'],
        '--client-compaction-at (tokens, or off): expected a positive integer, got "never"',
      ],
      [
        ['sessions', 'purge', '--older-than', 'soon'],
        '--older-than: expected a duration such as 30m, 12h or 7d, got "soon"',
      ],
    ] as const) {
      expect((await refusal([...argv], io)).message).toBe(message);
    }
  });

  it('reads durations with units, and bare seconds where the option says so', () => {
    expect(parseDuration('30m', '--retain')).toBe(1_800_000);
    expect(parseDuration('12h', '--retain')).toBe(43_200_000);
    expect(parseDuration('7d', '--retain')).toBe(604_800_000);
    expect(parseDuration('1500ms', '--upstream-timeout', 's')).toBe(1500);
    expect(parseDuration('600', '--upstream-timeout', 's')).toBe(600_000);
    expect(parseDuration('0.5s', '--upstream-timeout', 's')).toBe(500);
    expect(() => parseDuration('600', '--retain')).toThrow(/--retain: expected a duration/);
    expect(() => parseDuration('0s', '--retain')).toThrow(BadInputError);
    expect(() => parseDuration('', '--retain')).toThrow(BadInputError);
    expect(() => positiveInteger(' ', '--limit', 1)).toThrow('--limit: expected a positive integer, got " "');
  });
});

describe('one JSONL reader for every command', () => {
  it('inspect --session refuses a malformed line before the session exactly as eval does', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'selfgc-hygiene-')), 'sessions.jsonl');
    const sample = readFileSync(SAMPLE, 'utf8').split('\n');
    writeFileSync(file, [sample[0], '{"id": "broken", "messages": [', sample[1]].join('\n'));
    const target = (JSON.parse(sample[1]!) as { id: string }).id;
    const { io } = captureIo();
    const fromInspect = await refusal(['inspect', file, '--session', target], io);
    const fromEval = await refusal(['eval', file, '--strategies', 'none'], io);
    expect(fromInspect.message).toMatch(/sessions\.jsonl: line 2: invalid JSON/);
    expect(fromInspect.message).toBe(fromEval.message);
  });
});
