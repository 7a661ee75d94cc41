import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { EvalSummary } from '../eval/eval-summary.js';
import {
  isNextStepRequest,
  isPairRequest,
  isScorecardRequest,
  scorecardAnswer,
  userText,
} from '../eval/testing/scripted-judge.js';
import type { ScriptedReply, ScriptedRequest } from '../testing/scripted-reply.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../testing/scripted-upstream.js';
import { runCommand, runMain } from './run-main.js';
import { captureIo } from './testing/capture-io.js';

const SAMPLE = new URL('../../samples/selfgc-sessions.jsonl', import.meta.url).pathname;
/** Every sample session has this read (message 13), before its automatic cuts. */
const OLD_READ = 'function:read_file:6';

let upstream: ScriptedUpstream | undefined;
afterEach(async () => {
  await upstream?.close();
  upstream = undefined;
});

const isForkPlanner = (request: ScriptedRequest) => request.rawBody.includes('SELF-GC CONTEXT PLANNER.');
const isLedgerPlanner = (request: ScriptedRequest) => request.rawBody.includes('LEDGER VIEW');
const isPlanner = (request: ScriptedRequest) => isForkPlanner(request) || isLedgerPlanner(request);

const PLAN: ScriptedReply = {
  json: {
    operations: [
      {
        id: OLD_READ,
        operation: 'fold',
        reason: 'read long ago; later steps did not use it',
        summary: 'an early source file read',
      },
    ],
  },
};

async function evalWith(
  script: (request: ScriptedRequest) => ScriptedReply,
  extra: string[],
  apiKey?: string,
) {
  upstream = await startScriptedUpstream({ script, ...(apiKey ? { apiKey } : {}) });
  const folder = mkdtempSync(join(tmpdir(), 'selfgc-llm-'));
  const json = join(folder, 'summary.json');
  const { io, out } = captureIo();
  const code = await runCommand(
    [
      'eval',
      SAMPLE,
      '--modes',
      'cut',
      '--workers',
      '2',
      '--llm-url',
      `${upstream.url}/v1`,
      '--llm-model',
      'scripted-model',
      '--json',
      json,
      ...extra,
    ],
    io,
  );
  return { code, out: out(), summary: JSON.parse(readFileSync(json, 'utf8')) as EvalSummary };
}

const byName = (summary: EvalSummary, name: string) =>
  summary.cutMode.find((result) => result.strategy === name);

const plansOf = (summary: EvalSummary, name: string) => {
  const result = byName(summary, name)!;
  return result.own.cuts + result.sweep.reduce((sum, point) => sum + point.cuts, 0);
};

describe('selfgc eval with an LLM endpoint (scripted, on loopback)', () => {
  it('runs selfgc-llm in worker threads, each reading the key from the environment', async () => {
    process.env.SELFGC_EVAL_TEST_KEY = 'sk-loopback';
    try {
      const { code, summary } = await evalWith(
        (request) => (isPlanner(request) ? PLAN : { error: { status: 400, message: 'not a plan request' } }),
        ['--strategies', 'none,selfgc-llm', '--llm-key-env', 'SELFGC_EVAL_TEST_KEY'],
        'sk-loopback',
      );
      expect(code).toBe(0);
      expect(summary.cutMode.map((result) => result.strategy)).toEqual(['none', 'selfgc-llm']);
      const llm = byName(summary, 'selfgc-llm')!;
      expect(llm.own.cuts).toBe(24);
      expect(llm.llmPlannerFallbacks).toBe(0);
      // The fold the model proposed frees tokens at the own budget.
      expect(llm.own.pruneRate).toBeGreaterThan(0);
      expect(byName(summary, 'none')?.llmPlannerFallbacks).toBeUndefined();
      expect(summary.llm).toEqual({ provider: 'openai', model: 'scripted-model', plannerMode: 'fork' });
      // One planner request per cut and budget, each a fork of the view naming the folded read.
      const requests = upstream!.requests;
      expect(requests).toHaveLength(plansOf(summary, 'selfgc-llm'));
      expect(requests.every(isForkPlanner)).toBe(true);
      expect(requests.every((request) => request.rawBody.includes(OLD_READ))).toBe(true);
      expect(requests.every((request) => request.headers.authorization === 'Bearer sk-loopback')).toBe(true);
    } finally {
      delete process.env.SELFGC_EVAL_TEST_KEY;
    }
  }, 120_000);

  it('still gives views when the endpoint fails: the embedded planner stands in, and few calls are wasted', async () => {
    const { code, out, summary } = await evalWith(
      () => ({ error: { status: 500, message: 'model down' }, headers: { 'retry-after': '0' } }),
      ['--strategies', 'none,selfgc,selfgc-llm'],
    );
    expect(code).toBe(0);
    const llm = byName(summary, 'selfgc-llm')!;
    const embedded = byName(summary, 'selfgc')!;
    expect(llm.own.cuts).toBe(24);
    expect(llm.llmPlannerFallbacks).toBe(plansOf(summary, 'selfgc-llm'));
    expect(llm.own.pruneRate).toBeCloseTo(embedded.own.pruneRate, 10);
    expect(llm.own.strictNoImpact).toEqual(embedded.own.strictNoImpact);
    // Each worker gives up on the endpoint after three failed calls (each tried three times).
    expect(upstream!.requests.length).toBeLessThanOrEqual(2 * 3 * 3);
    // Why, too: an endpoint that is down fails every plan alike.
    expect(out).toContain(
      `selfgc-llm: the llm planner failed for ${llm.llmPlannerFallbacks} plan(s); the embedded planner stood in (last: llm planner (openai scripted-model) failed: `,
    );
    expect(llm.llmPlannerLastFallback).toMatch(/model down|endpoint not asked/);
  }, 120_000);

  it('adds the LLM judge next to the anchor judge with --judge llm, on the same sampled cuts', async () => {
    // The scripted judge passes a view that changed nothing and fails any other, blaming the
    // first object the prompt labels as changed; it answers A/B comparisons always with slot A.
    const { code, out, summary } = await evalWith(
      (request) => {
        if (isScorecardRequest(request)) {
          if (request.rawBody.includes('(none: the view shows the whole prefix)'))
            return { json: scorecardAnswer(5) };
          const labelled = /\[prefix \d+ · ([^\],]+)/.exec(userText(request))?.[1] ?? 'other';
          return {
            json: scorecardAnswer(4, {
              scores: { information_sufficiency: 2 },
              culprit: labelled,
              category: 'missing-file-content',
            }),
          };
        }
        if (isNextStepRequest(request)) return { text: 'read_file(path="src/app.py")' };
        if (isPairRequest(request)) return { json: { better: 'A', reason: 'first' } };
        return { error: { status: 400, message: 'not a judge request' } };
      },
      [
        '--strategies',
        'none,tool-prune,selfgc',
        '--judge',
        'llm',
        '--judge-sample',
        '5',
        '--judge-pairs',
        '2',
      ],
    );
    expect(code).toBe(0);
    expect(summary.llm).toEqual({
      provider: 'openai',
      model: 'scripted-model',
      judgeSample: 5,
      judgePairs: 2,
    });
    const none = byName(summary, 'none')!;
    const pruned = byName(summary, 'tool-prune')!;
    expect(none.llmNoImpact).toMatchObject({ hits: 5, total: 5, value: 1 });
    expect(none.llmAgreement).toMatchObject({ total: 5 });
    expect(none.llmScorecard).toMatchObject({
      judged: 5,
      means: { task_progress: 5, information_sufficiency: 5, action_consistency: 5, correctness: 5 },
      culprits: { objects: 0, other: 0, none: 0, unknown: 0 },
    });
    expect(pruned.llmNoImpact?.total).toBe(5);
    const failed = 5 - pruned.llmNoImpact!.hits;
    expect(failed).toBeGreaterThan(0);
    // Every failing scorecard: the scripted category, and a culprit the view really removed.
    expect(pruned.llmScorecard?.failureCategories['missing-file-content']).toBe(failed);
    expect(pruned.llmScorecard?.culprits).toEqual({ objects: failed, other: 0, none: 0, unknown: 0 });
    expect(pruned.llmScorecard?.means.information_sufficiency).toBeCloseTo(
      (5 * (5 - failed) + 2 * failed) / 5,
      10,
    );
    expect(none.llmJudgeFailures).toBe(0);
    // A/B: none changes nothing, so it has no pairs; a judge that always says A flips every pair.
    expect(none.llmCalibration).toBeUndefined();
    const pairs = pruned.llmCalibration!;
    expect(pairs.pairs).toBeGreaterThan(0);
    expect(pairs.flips).toMatchObject({ hits: pairs.pairs, total: pairs.pairs, value: 1 });
    expect(pairs.slotA).toMatchObject({ hits: 2 * pairs.pairs, total: 2 * pairs.pairs });
    expect(pairs.consistent).toEqual({ governed: 0, full: 0, tie: 0 });
    const requests = upstream!.requests;
    expect(requests.filter(isScorecardRequest)).toHaveLength(15);
    const changedPairs = pairs.pairs + (byName(summary, 'selfgc')!.llmCalibration?.pairs ?? 0);
    // One step from the view per pair, and one from the full prefix per pair cut (two cuts),
    // written once for every strategy: no request is sent twice.
    const steps = requests.filter(isNextStepRequest).map((request) => request.rawBody);
    expect(new Set(steps).size).toBe(steps.length);
    expect(steps.length).toBeGreaterThan(changedPairs);
    expect(steps.length).toBeLessThanOrEqual(changedPairs + 2);
    expect(requests.filter(isPairRequest)).toHaveLength(2 * changedPairs);
    // The latest-turn audit of selfgc's plans and commits: none reached the latest turn.
    expect(byName(summary, 'selfgc')?.latestTurnAudit).toMatchObject({ applied: 0 });
    expect(byName(summary, 'selfgc')!.latestTurnAudit!.plans).toBe(plansOf(summary, 'selfgc'));
    expect(pruned.latestTurnAudit).toBeUndefined();
    expect(out).toContain('llm judge (scripted-model, own budget, sampled cuts)');
    expect(out).toContain('failure taxonomy (failing scorecards)');
    expect(out).toMatch(/\n {2}tool-prune +missing-file-content \d/);
    expect(out).toContain('llm judge A/B calibration');
    expect(out).toMatch(/\n {2}selfgc \(cut\) +\d+ +\d+ +\d+ +0 +–\n/);
  }, 120_000);

  it('writes the scorecards, the calibration and the audit into the report', async () => {
    const reportFolder = mkdtempSync(join(tmpdir(), 'selfgc-report-'));
    const report = join(reportFolder, 'r.html');
    await evalWith(
      (request) =>
        isPairRequest(request)
          ? { json: { better: 'tie' } }
          : isNextStepRequest(request)
            ? { text: 'done' }
            : { json: scorecardAnswer(5) },
      [
        '--strategies',
        'none,tool-prune',
        '--judge',
        'llm',
        '--judge-sample',
        '3',
        '--judge-pairs',
        '1',
        '--report',
        report,
      ],
    );
    const html = readFileSync(report, 'utf8');
    expect(html).toContain('data-column="llm-no-impact"');
    expect(html).toContain('data-table="llm-scorecard"');
    expect(html).toContain('<td data-column="mean-correctness">5.00</td>');
    expect(html).toContain('data-table="llm-calibration"');
    expect(html).toContain('<td data-column="consistent">0 / 0 / 1</td>');
    expect(html).toContain('data-chart="tradeoff"');
  }, 120_000);
});

describe('selfgc replay with an LLM endpoint', () => {
  it('emits selfgc-llm views in both modes', async () => {
    upstream = await startScriptedUpstream({ script: () => PLAN });
    const folder = mkdtempSync(join(tmpdir(), 'selfgc-llm-'));
    for (const mode of ['cut', 'session']) {
      const emit = join(folder, `${mode}.jsonl`);
      const { io, err } = captureIo();
      const code = await runCommand(
        [
          'replay',
          SAMPLE,
          '--strategy',
          'selfgc-llm',
          '--mode',
          mode,
          ...(mode === 'session' ? ['--window', '6000'] : []),
          '--llm-url',
          `${upstream.url}/v1`,
          '--llm-model',
          'scripted-model',
          '--emit',
          emit,
        ],
        io,
      );
      expect(code).toBe(0);
      expect(err()).not.toContain('llm planner failed');
      const lines = readFileSync(emit, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { strategy: string; recoverable: Record<string, number[]> });
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.every((line) => line.strategy === 'selfgc-llm')).toBe(true);
      // The model's fold is recoverable from the sidecar: alone, or inside the span fold that a
      // deep commit made of its step.
      if (mode === 'cut') expect(lines.some((line) => OLD_READ in line.recoverable)).toBe(true);
      expect(lines.some((line) => Object.values(line.recoverable).some((held) => held.includes(13)))).toBe(
        true,
      );
    }
    expect(upstream.requests.every(isForkPlanner)).toBe(true);
  }, 120_000);

  it('asks with a ledger view under --planner-mode ledger', async () => {
    upstream = await startScriptedUpstream({ script: () => PLAN });
    const emit = join(mkdtempSync(join(tmpdir(), 'selfgc-llm-')), 'out.jsonl');
    const { io, err } = captureIo();
    const args = ['replay', SAMPLE, '--strategy', 'selfgc-llm', '--keep', '0.5', '--emit', emit];
    const endpoint = ['--llm-url', `${upstream.url}/v1`, '--llm-model', 'scripted-model'];
    expect(await runCommand([...args, ...endpoint, '--planner-mode', 'ledger'], io)).toBe(0);
    expect(err()).not.toContain('llm planner failed');
    expect(upstream.requests.length).toBeGreaterThan(0);
    expect(upstream.requests.every(isLedgerPlanner)).toBe(true);
  }, 120_000);

  it('says on stderr when the llm planner fell back', async () => {
    upstream = await startScriptedUpstream({ script: () => ({ json: { plan: 'not the format' } }) });
    const { io, err } = captureIo();
    const emit = join(mkdtempSync(join(tmpdir(), 'selfgc-llm-')), 'out.jsonl');
    const args = ['replay', SAMPLE, '--strategy', 'selfgc-llm', '--keep', '0.5', '--emit', emit];
    expect(
      await runCommand([...args, '--llm-url', `${upstream.url}/v1`, '--llm-model', 'scripted-model'], io),
    ).toBe(0);
    expect(err()).toMatch(
      /^selfgc-llm: the llm planner failed 24 time\(s\) and the embedded planner stood in \(last: llm planner \(openai scripted-model\) failed: answer is not the plan format/m,
    );
  }, 120_000);
});

describe('LLM flags', () => {
  async function runMainCapturing(argv: string[]) {
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    try {
      await runMain(argv);
      return { exitCode: process.exitCode, stderr: written.join('') };
    } finally {
      spy.mockRestore();
      process.exitCode = undefined;
    }
  }

  it('refuses --llm-url without --llm-model in one line, with exit code 2', async () => {
    const { exitCode, stderr } = await runMainCapturing([
      'eval',
      SAMPLE,
      '--llm-url',
      'http://127.0.0.1:9/v1',
    ]);
    expect(exitCode).toBe(2);
    expect(stderr).toBe('selfgc: --llm-url needs --llm-model NAME (the model the endpoint serves)\n');
  });

  it('refuses an unknown provider, stray flags, a bad URL and a judge or strategy without an endpoint', async () => {
    const { io } = captureIo({});
    const url = ['--llm-url', 'http://127.0.0.1:9/v1', '--llm-model', 'm'];
    const cases: Array<[string[], string | RegExp]> = [
      [
        ['eval', SAMPLE, ...url, '--llm-provider', 'gemini'],
        '--llm-provider must be openai or anthropic, got "gemini"',
      ],
      [
        ['replay', SAMPLE, '--strategy', 'none', '--emit', '/tmp/x.jsonl', '--llm-provider', 'x'],
        /--llm-provider must be/,
      ],
      [['eval', SAMPLE, '--llm-model', 'm'], '--llm-model needs --llm-url URL'],
      [['eval', SAMPLE, '--planner-mode', 'ledger'], '--planner-mode needs --llm-url URL'],
      [
        ['eval', SAMPLE, ...url, '--planner-mode', 'tree'],
        '--planner-mode must be fork or ledger, got "tree"',
      ],
      [
        ['eval', SAMPLE, '--llm-url', 'localhost:11434', '--llm-model', 'm'],
        '--llm-url must be an http(s) URL, got "localhost:11434"',
      ],
      [['eval', SAMPLE, '--judge', 'llm'], '--judge llm needs --llm-url URL and --llm-model NAME'],
      [['eval', SAMPLE, '--judge', 'gpt'], '--judge must be anchors or llm, got "gpt"'],
      [['eval', SAMPLE, '--judge-sample', '5'], '--judge-sample needs --judge llm'],
      [['eval', SAMPLE, '--judge-pairs', '5'], '--judge-pairs needs --judge llm'],
      [
        ['eval', SAMPLE, ...url, '--judge', 'llm', '--judge-pairs', '-1'],
        '--judge-pairs must be a non-negative integer, got "-1"',
      ],
      [
        ['eval', SAMPLE, ...url, '--judge', 'llm', '--judge-sample', '4', '--judge-pairs', '5'],
        '--judge-pairs 5 is more than the 4 judged cuts (--judge-sample)',
      ],
      [
        ['eval', SAMPLE, ...url, '--judge', 'llm', '--judge-sample', '0'],
        '--judge-sample must be a positive integer, got "0"',
      ],
      [
        ['eval', SAMPLE, ...url, '--judge', 'llm', '--modes', 'session'],
        '--judge llm judges cut mode: add cut to --modes',
      ],
      [
        ['eval', SAMPLE, ...url, '--llm-key-env', 'SELFGC_NO_SUCH_KEY'],
        '--llm-key-env names SELFGC_NO_SUCH_KEY, which is not set in the environment',
      ],
      [
        ['eval', SAMPLE, '--strategies', 'none,selfgc-llm'],
        /strategy "selfgc-llm" needs an LLM endpoint: pass --llm-url URL and --llm-model NAME/,
      ],
      [['replay', SAMPLE, '--strategy', 'selfgc-llm', '--emit', '/tmp/x.jsonl'], /needs an LLM endpoint/],
    ];
    for (const [argv, message] of cases)
      await expect(runCommand(argv, io), argv.join(' ')).rejects.toThrow(message);
  });

  it('documents the flags in both helps, never taking the key itself', async () => {
    for (const command of ['eval', 'replay']) {
      const { io, out } = captureIo();
      expect(await runCommand([command, '--help'], io)).toBe(0);
      for (const flag of ['--llm-url', '--llm-provider', '--llm-model', '--llm-key-env', '--planner-mode'])
        expect(out(), `${command} ${flag}`).toContain(flag);
      expect(out()).not.toMatch(/--llm-key\b(?!-env)/);
    }
    const { io, out } = captureIo();
    await runCommand(['eval', '--help'], io);
    expect(out()).toContain('--judge anchors|llm');
    expect(out()).toContain('--judge-sample N');
    expect(out()).toContain('--judge-pairs N');
  });
});
