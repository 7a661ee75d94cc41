import { afterEach, describe, expect, it } from 'vitest';
import { BadInputError } from '../core/errors.js';
import { sampleSession } from '../core/testing/sample-session.js';
import type { ScriptedRequest } from '../testing/scripted-reply.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../testing/scripted-upstream.js';
import { type EvaluateOptions, evaluateSessions, sampleJudgeCuts } from './evaluate-sessions.js';
import type { RecordedSession } from './load-sessions.js';
import { autoCuts, replayableCuts } from './replay-cut.js';
import { quotingSession } from './testing/eval-fixtures.js';
import {
  isNextStepRequest,
  isPairRequest,
  isScorecardRequest,
  scorecardAnswer,
  userText,
} from './testing/scripted-judge.js';

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
      expect(outcome.rareTokenScore).toBeGreaterThanOrEqual(0);
      expect(outcome.rareTokenScore).toBeLessThanOrEqual(1);
      if (outcome.rareTokens) expect(outcome.rareTokenScore).toBe(1);
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
      // The rare-token judge reads the same calls as the anchor judge.
      expect(call.strict === undefined).toBe(call.rareTokens === undefined);
      expect(call.rareTokens === undefined).toBe(call.rareTokenScore === undefined);
    }
    expect(result.calls.some((call) => call.strategy === 'oldest-turn' && call.changed)).toBe(true);
  });

  it('runs selfgc-paper in session mode only: the governor under the paper commit policy', async () => {
    const result = await evaluateSessions(sessions, {
      ...options,
      // A window with room between commits: where every commit is forced by the view
      // overflowing, the two policies commit on the same calls.
      strategies: ['selfgc', 'selfgc-paper'],
    });
    expect(new Set(result.cuts.map((outcome) => outcome.strategy))).toEqual(new Set(['selfgc']));
    const governed = (name: string) => result.calls.filter((call) => call.strategy === name);
    const total = sessions.reduce((sum, session) => sum + calls(session), 0);
    expect(governed('selfgc-paper')).toHaveLength(total);
    // The paper's policy commits on other calls than the cost model.
    const commitsOf = (name: string) => governed(name).map((call) => call.committed);
    expect(commitsOf('selfgc-paper')).not.toEqual(commitsOf('selfgc'));
    expect(commitsOf('selfgc-paper')).toContain(true);
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

describe('sampleJudgeCuts', () => {
  const many = Array.from({ length: 5 }, (_, index) =>
    recorded(`quoting-${index}`, quotingSession(12 + index)),
  );

  it('takes every replayable cut when there are no more than asked', () => {
    const sample = sampleJudgeCuts(sessions, options, 100).judgeCuts;
    for (const session of sessions)
      expect(sample[session.id]).toEqual(replayableCuts(session.messages, autoCuts(session.messages, 3)));
  });

  it('spreads a smaller sample over the sessions, the same on every call', () => {
    const sample = sampleJudgeCuts(many, { cutsPerSession: 4 }, 7).judgeCuts;
    const chosen = Object.values(sample).flat();
    expect(chosen).toHaveLength(7);
    expect(Object.keys(sample)).toEqual(many.map((session) => session.id));
    for (const [id, cuts] of Object.entries(sample)) {
      const session = many.find((entry) => entry.id === id)!;
      for (const cut of cuts)
        expect(replayableCuts(session.messages, autoCuts(session.messages, 4))).toContain(cut);
    }
    expect(sampleJudgeCuts(many, { cutsPerSession: 4 }, 7).judgeCuts).toEqual(sample);
  });

  it('takes the A/B pairs from the judged cuts, spread alike, none by default', () => {
    const { judgeCuts, pairCuts } = sampleJudgeCuts(many, { cutsPerSession: 4 }, 7, 3);
    const pairs = Object.entries(pairCuts).flatMap(([id, cuts]) => cuts.map((cut) => `${id}@${cut}`));
    expect(pairs).toHaveLength(3);
    for (const [id, cuts] of Object.entries(pairCuts))
      for (const cut of cuts) expect(judgeCuts[id]).toContain(cut);
    expect(sampleJudgeCuts(many, { cutsPerSession: 4 }, 7).pairCuts).toEqual({});
  });

  it('follows explicit cuts', () => {
    expect(
      sampleJudgeCuts([sessions[1]!], { cutsPerSession: 3, cuts: { sample: [4, 12, 99] } }, 5).judgeCuts,
    ).toEqual({ sample: [4, 12] });
  });
});

describe('evaluateSessions with an LLM endpoint', () => {
  let upstream: ScriptedUpstream | undefined;
  afterEach(async () => {
    await upstream?.close();
    upstream = undefined;
  });

  const isJudge = (request: ScriptedRequest) =>
    isScorecardRequest(request) || isNextStepRequest(request) || isPairRequest(request);

  /** Scorecards at `score`; next steps that differ by context; a judge that prefers the full-context step. */
  async function endpoint(score: number) {
    upstream = await startScriptedUpstream({
      script: (request) => {
        if (isScorecardRequest(request)) {
          const labelled = /\[prefix \d+ · ([^\],]+)/.exec(userText(request))?.[1] ?? 'function:read_file:1';
          return {
            json: scorecardAnswer(
              score,
              score < 4 ? { culprit: labelled, category: 'missing-identifier' } : {},
            ),
          };
        }
        if (isNextStepRequest(request))
          return { text: userText(request).includes('def parse_file') ? 'edit_file(...)' : 'read_file(...)' };
        if (isPairRequest(request)) {
          const candidateA = userText(request)
            .split('=== CANDIDATE A ===')[1]!
            .split('=== CANDIDATE B ===')[0]!;
          return { json: { better: candidateA.includes('edit_file') ? 'A' : 'B' } };
        }
        return { json: { operations: [] } };
      },
    });
    return {
      provider: 'openai' as const,
      baseUrl: `${upstream.url}/v1`,
      model: 'scripted-model',
      keyEnv: 'SELFGC_UNSET_KEY',
    };
  }

  it('runs selfgc-llm in both modes and judges the sampled cuts at the own budget only', async () => {
    const llm = await endpoint(5);
    const judgeCuts = { sample: [autoCuts(sessions[1]!.messages, 3)[0]!] };
    const result = await evaluateSessions([sessions[1]!], {
      ...options,
      strategies: ['none', 'selfgc-llm'],
      llm,
      judgeCuts,
    });
    const judged = result.cuts.filter((outcome) => outcome.llmScorecard !== undefined);
    expect(judged.map((outcome) => [outcome.strategy, outcome.keep])).toEqual([
      ['none', 'auto'],
      ['selfgc-llm', 'auto'],
    ]);
    expect(judged.every((outcome) => outcome.llmScorecard?.pass === true)).toBe(true);
    expect(result.cuts.some((outcome) => outcome.llmPair !== undefined)).toBe(false);
    const planned = result.cuts.filter((outcome) => outcome.strategy === 'selfgc-llm');
    expect(planned.length).toBeGreaterThan(0);
    expect(planned.every((outcome) => outcome.plannerFallback === false)).toBe(true);
    expect(
      result.cuts
        .filter((outcome) => outcome.strategy === 'none')
        .every((outcome) => !('plannerFallback' in outcome)),
    ).toBe(true);
    expect(result.calls.filter((call) => call.strategy === 'selfgc-llm').length).toBe(calls(sessions[1]!));
    const requests = upstream!.requests;
    expect(requests.filter(isJudge)).toHaveLength(2);
    // One plan per cut and keep in cut mode, more in session mode.
    expect(requests.filter((request) => !isJudge(request)).length).toBeGreaterThan(planned.length);
  });

  it('scores a changed view, blames an object it removed, and compares the pair at the pair cuts only', async () => {
    const llm = await endpoint(2);
    const [first, second] = autoCuts(sessions[1]!.messages, 3);
    const result = await evaluateSessions([sessions[1]!], {
      ...options,
      modes: ['cut', 'session'],
      strategies: ['none', 'tool-prune', 'selfgc'],
      llm,
      judgeCuts: { sample: [first!, second!] },
      pairCuts: { sample: [second!] },
    });
    const judged = result.cuts.filter((outcome) => outcome.llmScorecard !== undefined);
    expect(judged).toHaveLength(6);
    const pruned = judged.filter((outcome) => outcome.strategy === 'tool-prune');
    // The scripted judge blames the first id labelled in ORIGINAL CONTENT: one the view removed.
    expect(pruned.map((outcome) => outcome.llmScorecard)).toEqual([
      {
        scores: { task_progress: 2, information_sufficiency: 2, action_consistency: 2, correctness: 2 },
        pass: false,
        category: 'missing-identifier',
        culprit: 'objects',
        culpritIds: [expect.stringMatching(/^function:/)],
      },
      expect.objectContaining({ culprit: 'objects' }),
    ]);
    // For none nothing changed: no id is labelled and the one blamed is not one the view touched.
    expect(judged.find((outcome) => outcome.strategy === 'none')?.llmScorecard?.culprit).toBe('unknown');
    // The pair: only at the second cut, only where the view changed the prefix (never for none).
    const paired = result.cuts.filter((outcome) => outcome.llmPair !== undefined);
    expect(paired.map((outcome) => outcome.strategy)).toEqual(['tool-prune', 'selfgc']);
    expect(paired[0]!.llmPair).toEqual({ slots: ['A', 'B'], choices: ['full', 'full'] });
    // The full-prefix step is written once for both strategies at the cut.
    expect(upstream!.requests.filter(isNextStepRequest)).toHaveLength(1 + paired.length);
    // The latest-turn audit: for selfgc's plans at every budget and its commits, not the baselines.
    const planned = result.cuts.filter((outcome) => outcome.strategy === 'selfgc');
    expect(planned.every((outcome) => outcome.latestTurn?.applied === 0)).toBe(true);
    expect(planned.reduce((sum, outcome) => sum + outcome.latestTurn!.operations, 0)).toBeGreaterThan(0);
    expect(
      result.cuts.filter((outcome) => outcome.strategy !== 'selfgc').some((outcome) => outcome.latestTurn),
    ).toBe(false);
    const governed = result.calls.filter((call) => call.strategy === 'selfgc');
    expect(governed.every((call) => call.latestTurn?.applied === 0)).toBe(true);
    expect(governed.reduce((sum, call) => sum + call.latestTurn!.commits, 0)).toBe(
      governed.filter((call) => call.committed).length,
    );
    expect(result.calls.filter((call) => call.strategy !== 'selfgc').some((call) => call.latestTurn)).toBe(
      false,
    );
  });

  it('refuses selfgc-llm without an endpoint', async () => {
    await expect(evaluateSessions(sessions, { ...options, strategies: ['selfgc-llm'] })).rejects.toThrow(
      /needs an LLM endpoint: pass --llm-url URL and --llm-model NAME/,
    );
  });
});
