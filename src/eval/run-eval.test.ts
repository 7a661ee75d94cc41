import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { toOpenAIChat } from '../adapters/openai-chat/convert-to-openai-chat.js';
import { sampleSession, threeRequestSession } from '../core/testing/sample-session.js';
import { aggregateSessions, buildSummary } from './aggregate.js';
import { type EvaluateOptions, evaluateSessions } from './evaluate-sessions.js';
import { loadSessions } from './load-sessions.js';
import { runEval } from './run-eval.js';
import { quotingSession } from './testing/eval-fixtures.js';

const directory = mkdtempSync(join(tmpdir(), 'selfgc-run-eval-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const options: EvaluateOptions = {
  strategies: ['none', 'tool-prune', 'selfgc'],
  modes: ['cut', 'session'],
  sweep: [0.5],
  window: 2500,
  cutsPerSession: 2,
};

describe('runEval', () => {
  it('spreads sessions over worker threads and aggregates what one thread would', async () => {
    const file = join(directory, 'sessions.jsonl');
    const transcripts = {
      quoting: quotingSession(14),
      sample: sampleSession(),
      three: threeRequestSession(),
    };
    writeFileSync(
      file,
      Object.entries(transcripts)
        .map(([id, messages]) => JSON.stringify({ id, messages: toOpenAIChat(messages).messages }))
        .join('\n'),
    );
    const sessions = loadSessions([file]);
    const now = new Date('2026-03-04T05:06:07Z');
    const progress: Array<[number, number]> = [];
    const summary = await runEval(sessions, {
      ...options,
      inputs: [file],
      command: 'selfgc eval sessions.jsonl',
      workers: 2,
      onProgress: (done, total) => progress.push([done, total]),
      now: () => now,
    });
    expect(progress).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
    ]);
    const alone = await evaluateSessions(sessions, options);
    const expected = buildSummary({
      inputs: [file],
      command: 'selfgc eval sessions.jsonl',
      sessions: 3,
      ...alone,
      window: options.window,
      now,
    });
    expect(summary.sessions).toBe(3);
    expect(summary.createdAt).toBe(now.toISOString());
    expect(
      summary.cutMode.map((entry) => [entry.strategy, entry.own.cuts, entry.own.strictNoImpact.hits]),
    ).toEqual(
      expected.cutMode.map((entry) => [entry.strategy, entry.own.cuts, entry.own.strictNoImpact.hits]),
    );
    for (const [index, entry] of summary.cutMode.entries())
      expect(entry.own.pruneRate).toBeCloseTo(expected.cutMode[index]!.own.pruneRate, 10);
    expect(
      summary.sessionMode.map(({ strategy, calls, inputTokens, commits, overWindowCalls }) => ({
        strategy,
        calls,
        inputTokens,
        commits,
        overWindowCalls,
      })),
    ).toEqual(
      expected.sessionMode.map(({ strategy, calls, inputTokens, commits, overWindowCalls }) => ({
        strategy,
        calls,
        inputTokens,
        commits,
        overWindowCalls,
      })),
    );
  });

  it('carries where the missed anchors were through the worker threads, one or more per failed call', async () => {
    const file = join(directory, 'quoting.jsonl');
    writeFileSync(
      file,
      ['q1', 'q2']
        .map((id, index) =>
          JSON.stringify({ id, messages: toOpenAIChat(quotingSession(12 + index * 4)).messages }),
        )
        .join('\n'),
    );
    const sessions = loadSessions([file]);
    const small: EvaluateOptions = {
      ...options,
      strategies: ['none', 'tool-prune'],
      modes: ['session'],
      window: 700,
    };
    const summary = await runEval(sessions, { ...small, inputs: [file], command: 'selfgc eval', workers: 2 });
    const alone = await evaluateSessions(sessions, small);
    const expected = aggregateSessions(alone.calls, small.window);
    const pruned = summary.sessionMode.find((entry) => entry.strategy === 'tool-prune')!;
    const failed = pruned.strictNoImpactChanged.total - pruned.strictNoImpactChanged.hits;
    expect(failed).toBeGreaterThan(0);
    expect(pruned.missingAnchors!.total).toBeGreaterThanOrEqual(failed);
    // A baseline keeps no sidecar state: what it removed, it removed without an operation.
    expect(pruned.missingAnchors!.byRemoval.removed).toBe(pruned.missingAnchors!.total);
    expect(pruned.missingAnchors).toEqual(
      expected.find((entry) => entry.strategy === 'tool-prune')!.missingAnchors,
    );
  });
});

describe('runEval with sessions under one id', () => {
  it('evaluates a session read under a qualified id by that id in the worker threads too', async () => {
    const file = join(directory, 'clash.jsonl');
    // Two different sessions under one id: the reader keeps the second under a qualified id.
    writeFileSync(
      file,
      [sampleSession(), threeRequestSession()]
        .map((messages) => JSON.stringify({ id: 'taken', messages: toOpenAIChat(messages).messages }))
        .join('\n'),
    );
    const sessions = loadSessions([file]);
    expect(sessions.map((session) => session.id)).toEqual(['taken', `taken (${file} line 2)`]);
    const summary = await runEval(sessions, {
      ...options,
      strategies: ['none'],
      modes: ['session'],
      inputs: [file],
      command: 'selfgc eval',
      workers: 1,
    });
    const timelines = summary.sessionMode[0]!.timelines.map((timeline) => timeline.session);
    expect(timelines.sort()).toEqual(['taken', `taken (${file} line 2)`]);
  });
});
