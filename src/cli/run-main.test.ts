import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BadInputError } from '../core/errors.js';
import { COMMIT_VARIANT_NAMES, LLM_STRATEGY_NAMES, STRATEGY_NAMES } from '../eval/strategies/registry.js';
import { REPLAY_HELP } from './replay-command.js';
import { runCommand } from './run-main.js';
import { captureIo } from './testing/capture-io.js';

const SAMPLE = new URL('../../samples/selfgc-sessions.jsonl', import.meta.url).pathname;

describe('selfgc', () => {
  it("prints its version, and a command's help through help <command>", async () => {
    const version = (
      JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
        version: string;
      }
    ).version;
    const { io, out } = captureIo();
    expect(await runCommand(['--version'], io)).toBe(0);
    expect(out()).toBe(`selfgc ${version}\n`);
    const help = captureIo();
    expect(await runCommand(['help', 'replay'], help.io)).toBe(0);
    expect(help.out()).toBe(REPLAY_HELP);
    await expect(runCommand(['help', 'frob'], help.io)).rejects.toThrow('unknown command "frob"');
  });
});

describe('selfgc inspect', () => {
  it('prints the ledger of a session', async () => {
    const { io, out } = captureIo();
    expect(await runCommand(['inspect', SAMPLE, '--session', 'selfgc-sample:ledger'], io)).toBe(0);
    expect(out()).toMatch(/^session selfgc-sample:ledger: \d+ messages, \d+ tokens, \d+ objects/);
    expect(out()).toContain('system:1');
    expect(out()).toContain('pinned (first user request (task goal))');
    expect(out()).toMatch(/function:read_file:\d+\s+function/);
  });

  it('prints JSON with --json', async () => {
    const { io, out } = captureIo();
    await runCommand(['inspect', SAMPLE, '--json'], io);
    const parsed = JSON.parse(out()) as { session: string; objects: Array<{ id: string; tokens: number }> };
    expect(parsed.session).toBe('selfgc-sample:ledger');
    expect(parsed.objects.every((object) => object.tokens >= 0)).toBe(true);
  });

  it('names what is wrong: missing file, unknown session, malformed line', async () => {
    const { io } = captureIo();
    await expect(runCommand(['inspect', '/nonexistent.jsonl'], io)).rejects.toThrow(
      '/nonexistent.jsonl: no such file',
    );
    await expect(runCommand(['inspect', SAMPLE, '--session', 'nope'], io)).rejects.toThrow(
      'no session with id "nope"',
    );
    const bad = join(mkdtempSync(join(tmpdir(), 'selfgc-')), 'bad.jsonl');
    writeFileSync(bad, '\n{"id": 1\n');
    await expect(runCommand(['inspect', bad], io)).rejects.toThrow(/bad\.jsonl: line 2: invalid JSON/);
    await expect(runCommand(['inspect', SAMPLE, '--bogus'], io)).rejects.toThrow(/bogus/);
    await expect(runCommand(['inspect', SAMPLE, '--key-hash', 'a'.repeat(32)], io)).rejects.toThrow(
      '--key-hash names a session of a store: it needs --store URL',
    );
  });

  it('says which session of many it shows, and which ids a file holds; refuses an empty file as eval does', async () => {
    const { io, out, err } = captureIo();
    expect(await runCommand(['inspect', SAMPLE], io)).toBe(0);
    expect(out()).toMatch(/^session selfgc-sample:ledger: /);
    expect(err()).toBe(
      'showing selfgc-sample:ledger, the first of 6 sessions (--session ID for another: selfgc-sample:commit, selfgc-sample:planner, selfgc-sample:stores, selfgc-sample:eval, selfgc-sample:cli)\n',
    );
    await expect(runCommand(['inspect', SAMPLE, '--session', 'selfgc-sample:typo'], io)).rejects.toThrow(
      `${SAMPLE}: no session with id "selfgc-sample:typo" (it holds 6: selfgc-sample:ledger, selfgc-sample:commit, selfgc-sample:planner, selfgc-sample:stores, selfgc-sample:eval, …)`,
    );
    const empty = join(mkdtempSync(join(tmpdir(), 'selfgc-')), 'empty.jsonl');
    writeFileSync(empty, '\n');
    const fromInspect = await runCommand(['inspect', empty], io).catch((error: unknown) => error);
    const fromEval = await runCommand(['eval', empty], io).catch((error: unknown) => error);
    expect(fromInspect).toBeInstanceOf(BadInputError);
    expect(fromInspect).toEqual(fromEval);
  });

  it('refuses leave-one-family-out on one file before anything runs, and agent tools without recovery', async () => {
    const { io, err } = captureIo();
    await expect(runCommand(['eval', SAMPLE, '--leave-one-family-out'], io)).rejects.toThrow(
      /--leave-one-family-out needs sessions from at least two files/,
    );
    expect(err()).not.toContain('evaluating');
    await expect(runCommand(['proxy', '--agent-tools', '--no-recovery'], io)).rejects.toThrow(
      /--agent-tools needs recovery/,
    );
  });
});

describe('selfgc replay', () => {
  it('emits the stable line format', async () => {
    const { io } = captureIo();
    const out = join(mkdtempSync(join(tmpdir(), 'selfgc-')), 'out.jsonl');
    expect(
      await runCommand(['replay', SAMPLE, '--strategy', 'selfgc', '--keep', '0.5', '--emit', out], io),
    ).toBe(0);
    const lines = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      expect(Object.keys(line).sort()).toEqual([
        'cut',
        'prefixTokens',
        'recoverable',
        'session',
        'strategy',
        'view',
        'viewTokens',
      ]);
      expect(line.viewTokens as number).toBeLessThanOrEqual(line.prefixTokens as number);
      const view = line.view as unknown[];
      expect(view.some((item) => typeof item === 'number')).toBe(true);
    }
    expect(lines.some((line) => (line.view as unknown[]).some((item) => typeof item === 'object'))).toBe(
      true,
    );
  });

  it('names in its help every strategy it runs', async () => {
    const { io, out } = captureIo();
    expect(await runCommand(['replay', '--help'], io)).toBe(0);
    for (const name of [...STRATEGY_NAMES, ...COMMIT_VARIANT_NAMES, ...LLM_STRATEGY_NAMES])
      expect(out()).toMatch(new RegExp(`[ ,(]${name}[ ,;()]`));
  });

  it('refuses an unknown strategy and a bad keep share', async () => {
    const { io } = captureIo();
    await expect(
      runCommand(['replay', SAMPLE, '--strategy', 'magic', '--emit', '/tmp/x.jsonl'], io),
    ).rejects.toThrow(/unknown strategy "magic"/);
    await expect(
      runCommand(['replay', SAMPLE, '--strategy', 'none', '--keep', '2', '--emit', '/tmp/x.jsonl'], io),
    ).rejects.toThrow(/--keep/);
  });

  it('names a --cuts file it cannot read, and cuts it cannot replay, instead of writing nothing', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'selfgc-'));
    const out = join(folder, 'out.jsonl');
    const replay = (cuts: string) => ['replay', SAMPLE, '--strategy', 'none', '--cuts', cuts, '--emit', out];
    const { io, err } = captureIo();
    await expect(runCommand(replay(join(folder, 'missing.json')), io)).rejects.toThrow(
      `--cuts ${join(folder, 'missing.json')}: no such file`,
    );
    const unknown = join(folder, 'unknown.json');
    writeFileSync(unknown, '{"selfgc-sample:typo": [20], "selfgc-sample:ledger": [500]}');
    await expect(runCommand(replay(unknown), io)).rejects.toThrow(
      `--cuts ${unknown}: no cut to replay: session "selfgc-sample:typo" is not in the input; session "selfgc-sample:ledger" (33 messages) has no assistant message at or after cut 500`,
    );
    expect(existsSync(out)).toBe(false);
    const partly = join(folder, 'partly.json');
    writeFileSync(partly, '{"selfgc-sample:typo": [20], "selfgc-sample:ledger": [20, 500]}');
    expect(await runCommand(replay(partly), io)).toBe(0);
    expect(readFileSync(out, 'utf8').trim().split('\n')).toHaveLength(1);
    expect(err()).toContain(`--cuts ${partly}: skipped: session "selfgc-sample:typo" is not in the input\n`);
    expect(err()).toContain(
      `--cuts ${partly}: skipped: session "selfgc-sample:ledger" (33 messages) has no assistant message at or after cut 500\n`,
    );
  });

  it('refuses an option of the other mode instead of ignoring it', async () => {
    const { io, progress } = captureIo();
    const out = join(mkdtempSync(join(tmpdir(), 'selfgc-')), 'out.jsonl');
    const replay = ['replay', SAMPLE, '--strategy', 'none', '--emit', out];
    for (const [argv, message] of [
      [
        [...replay, '--mode', 'session', '--keep', '0.5'],
        '--keep applies to cut mode only, not --mode session',
      ],
      [
        [...replay, '--mode', 'session', '--cuts', out],
        '--cuts applies to cut mode only, not --mode session',
      ],
      [[...replay, '--window', '6000'], '--window applies to session mode only, not --mode cut'],
      [
        ['eval', SAMPLE, '--modes', 'cut', '--window', '6000'],
        '--window is the window of session mode: add session to --modes',
      ],
      [
        ['eval', SAMPLE, '--modes', 'session', '--cuts-per-session', '2'],
        '--cuts-per-session sets the cuts of cut mode: add cut to --modes',
      ],
    ] as const)
      await expect(runCommand([...argv], io)).rejects.toThrow(message);
    expect(progress()).toBe(0);
    expect(existsSync(out)).toBe(false);
    // Their default changes nothing: a script may pass it whatever the mode.
    expect(
      await runCommand(
        [...replay, '--mode', 'session', '--window', '6000', '--keep', 'auto', '--cuts', 'auto'],
        io,
      ),
    ).toBe(0);
    expect(existsSync(out)).toBe(true);
  });

  it('refuses the oracle in session mode: it needs the continuation', async () => {
    const { io } = captureIo();
    const out = join(mkdtempSync(join(tmpdir(), 'selfgc-')), 'out.jsonl');
    await expect(
      runCommand(['replay', SAMPLE, '--strategy', 'oracle', '--mode', 'session', '--emit', out], io),
    ).rejects.toThrow(/oracle runs in cut mode only/);
    expect(existsSync(out)).toBe(false);
  });
});

describe('selfgc eval', () => {
  it('evaluates the sample and writes the summary, the report and the results file', async () => {
    const { io, out } = captureIo();
    const folder = mkdtempSync(join(tmpdir(), 'selfgc-'));
    const code = await runCommand(
      [
        'eval',
        SAMPLE,
        '--strategies',
        'none,tool-prune,selfgc,oracle',
        '--window',
        '8000',
        '--workers',
        '1',
        '--json',
        join(folder, 's.json'),
        '--report',
        join(folder, 'r.html'),
        '--markdown',
        join(folder, 'results.md'),
      ],
      io,
    );
    expect(code).toBe(0);
    expect(out()).toContain('strict no-impact');
    const summary = JSON.parse(readFileSync(join(folder, 's.json'), 'utf8')) as {
      sessions: number;
      cutMode: Array<{ strategy: string; own: { cuts: number } }>;
      sessionMode: Array<{
        strategy: string;
        calls: number;
        strictNoImpactChanged: { total: number };
        prefixBands?: Array<{ calls: number; strictNoImpactChanged: { total: number } }>;
      }>;
    };
    expect(summary.sessions).toBe(6);
    expect(summary.cutMode.map((result) => result.strategy)).toEqual([
      'none',
      'tool-prune',
      'selfgc',
      'oracle',
    ]);
    expect(summary.cutMode.every((result) => result.own.cuts > 0)).toBe(true);
    const selfgc = summary.sessionMode.find((result) => result.strategy === 'selfgc');
    expect(selfgc?.calls).toBeGreaterThan(0);
    // The prefix bands come back from the workers and split the calls and the judged ones.
    const bands = selfgc?.prefixBands ?? [];
    expect(bands).toHaveLength(4);
    expect(bands.reduce((sum, band) => sum + band.calls, 0)).toBe(selfgc?.calls);
    expect(bands.reduce((sum, band) => sum + band.strictNoImpactChanged.total, 0)).toBe(
      selfgc?.strictNoImpactChanged.total,
    );
    expect(readFileSync(join(folder, 'r.html'), 'utf8')).toContain('data-chart="tradeoff"');
    const results = readFileSync(join(folder, 'results.md'), 'utf8');
    expect(results).toContain(
      `selfgc eval ${SAMPLE} --strategies none,tool-prune,selfgc,oracle --window 8000`,
    );
    expect(results).toContain(
      `- Strategies: \`none\`, \`tool-prune\`, \`selfgc\`, \`oracle\`.\n- Cut mode: ${summary.cutMode[0]!.own.cuts} cuts (4 per session)`,
    );
    expect(results).toContain('window 8,000 tokens');
    // The same rows the CLI printed, strategy by strategy.
    for (const result of summary.cutMode)
      expect(results).toMatch(new RegExp(`^\\| ${result.strategy}( \\(upper bound\\))? \\| `, 'm'));
    for (const result of summary.sessionMode) expect(results).toContain(`| ${result.strategy} | `);
    expect(results).toContain('## Session mode by prefix length');
  }, 120_000);

  it('refuses a strategy or mode named twice, which would count its cuts twice', async () => {
    const { io, progress } = captureIo();
    await expect(runCommand(['eval', SAMPLE, '--strategies', 'none,selfgc, none'], io)).rejects.toThrow(
      '--strategies names "none" twice',
    );
    await expect(runCommand(['eval', SAMPLE, '--modes', 'cut,cut'], io)).rejects.toThrow(
      '--modes names "cut" twice',
    );
    expect(progress()).toBe(0);
  });

  it('shows help', async () => {
    const { io, out } = captureIo();
    expect(await runCommand(['eval', '--help'], io)).toBe(0);
    expect(out()).toContain('Usage: selfgc eval');
  });
});

describe('selfgc proxy', () => {
  it('refuses a --reserve-output that is not a positive integer before it starts', async () => {
    const { io } = captureIo();
    await expect(runCommand(['proxy', '--reserve-output', 'lots'], io)).rejects.toThrow(
      '--reserve-output: expected a positive integer, got "lots"',
    );
  });

  it('refuses an empty --ab-share, which would read as 0 and govern no one', async () => {
    const { io } = captureIo();
    await expect(
      runCommand(['proxy', '--port', '0', '--store', 'memory:', '--ab-share', ''], io),
    ).rejects.toThrow('--ab-share must be a share in [0, 1], got ""');
  });

  it('refuses a positional argument, such as a port without --port, before it starts', async () => {
    const { io, err } = captureIo();
    await expect(runCommand(['proxy', '9000', '--port', '0', '--store', 'memory:'], io)).rejects.toThrow(
      'proxy takes no positional arguments, got "9000" (--port N for a port; see selfgc proxy --help)',
    );
    expect(err()).not.toContain('listening');
  });

  it('refuses an upstream that is not an http(s) base URL before it starts', async () => {
    const { io, err } = captureIo();
    for (const [argv, message] of [
      [
        ['--upstream-openai', 'api.openai.com'],
        '--upstream-openai must be an http(s) URL such as https://api.openai.com, got "api.openai.com"',
      ],
      [
        ['--upstream-anthropic', 'ftp://example.com'],
        '--upstream-anthropic must be an http(s) URL such as https://api.anthropic.com, got "ftp://example.com"',
      ],
      [
        ['--upstream-openai', 'http://127.0.0.1:9/v1?key=x'],
        '--upstream-openai is a base URL: it takes no ?query or #fragment, got "http://127.0.0.1:9/v1?key=x"',
      ],
    ] as const)
      await expect(runCommand(['proxy', '--port', '0', '--store', 'memory:', ...argv], io)).rejects.toThrow(
        message,
      );
    expect(err()).not.toContain('listening');
  });

  it('refuses a --model it cannot read before it starts, and explains --model in its help', async () => {
    const { io, out } = captureIo();
    await expect(runCommand(['proxy', '--model', '/no/such/model.json'], io)).rejects.toThrow(
      '--model /no/such/model.json: no such file',
    );
    expect(await runCommand(['proxy', '--help'], io)).toBe(0);
    expect(out()).toContain('--model FILE|default');
  });
});
