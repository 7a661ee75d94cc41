import { describe, expect, it } from 'vitest';
import { BadInputError } from '../core/errors.js';
import { sampleSession } from '../core/testing/sample-session.js';
import { type EvaluateOptions, evaluateSessions } from './evaluate-sessions.js';
import type { RecordedSession } from './load-sessions.js';
import { quotingSession } from './testing/eval-fixtures.js';

const recorded = (id: string, messages: RecordedSession['messages']): RecordedSession => ({
  id,
  file: 'fixture.jsonl',
  line: 1,
  messages,
  warnings: [],
});

const sessions = [recorded('quoting', quotingSession(16)), recorded('sample', sampleSession())];
const calls = (session: RecordedSession) =>
  session.messages.filter((message, index) => index > 0 && message.role === 'assistant').length;

const options: EvaluateOptions = {
  strategies: ['none', 'oldest-turn', 'selfgc', 'oracle'],
  modes: ['cut', 'session'],
  sweep: [0.5, 0.3],
  window: 3000,
  cutsPerSession: 3,
};

describe('evaluateSessions', () => {
  it('runs every strategy at its own budget and the sweep at each cut, the oracle labelled', async () => {
    let done = 0;
    const result = await evaluateSessions(sessions, options, () => {
      done += 1;
    });
    expect(done).toBe(2);
    // quoting: 3 automatic cuts; sample: 3 (of its assistant messages after the first request).
    expect(result.cuts).toHaveLength((3 + 3) * 4 * 3);
    for (const outcome of result.cuts) {
      expect(outcome.upperBound).toBe(outcome.strategy === 'oracle');
      expect(['auto', 0.5, 0.3]).toContain(outcome.keep);
      expect(outcome.viewTokens).toBeLessThanOrEqual(outcome.prefixTokens);
    }
  });

  it('replays sessions call by call: none once, baselines per call and sticky, selfgc governed, no oracle', async () => {
    const result = await evaluateSessions(sessions, { ...options, modes: ['session'] });
    expect(result.cuts).toEqual([]);
    const perStrategy = new Map<string, number>();
    for (const call of result.calls)
      perStrategy.set(call.strategy, (perStrategy.get(call.strategy) ?? 0) + 1);
    const total = sessions.reduce((sum, session) => sum + calls(session), 0);
    expect(Object.fromEntries(perStrategy)).toEqual({
      none: total,
      'oldest-turn': total,
      'oldest-turn+sticky': total,
      selfgc: total,
    });
    for (const call of result.calls) {
      if (call.strategy === 'none') expect(call).toMatchObject({ changed: false, committed: false });
      // Only changed calls carry a verdict.
      if (call.strict !== undefined) expect(call.changed).toBe(true);
      expect(call.strict === undefined).toBe(call.recoverable === undefined);
    }
    expect(result.calls.some((call) => call.strategy === 'oldest-turn' && call.changed)).toBe(true);
  });

  it('takes explicit cuts by session id instead of automatic ones', async () => {
    const result = await evaluateSessions([sessions[1]!], {
      ...options,
      modes: ['cut'],
      strategies: ['none'],
      cuts: { sample: [4] },
    });
    expect(result.cuts).toHaveLength(3);
    expect(new Set(result.cuts.map((outcome) => outcome.prefixTokens)).size).toBe(1);
    expect(result.calls).toEqual([]);
  });

  it('refuses an unknown strategy before replaying anything', async () => {
    await expect(evaluateSessions(sessions, { ...options, strategies: ['none', 'magic'] })).rejects.toThrow(
      BadInputError,
    );
  });
});
