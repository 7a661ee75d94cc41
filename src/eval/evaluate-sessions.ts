/**
 * Evaluate strategies on sessions, both modes, returning the compact outcomes that aggregation
 * needs. Runs in one thread; `run-eval.ts` spreads sessions over worker threads.
 */
import { memoizeTokenCounter } from '../core/tokens.js';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import type { CallOutcome, CutOutcome } from './aggregate.js';
import type { RecordedSession } from './load-sessions.js';
import { autoCuts, replayCuts } from './replay-cut.js';
import { baselinePolicy, governorPolicy, replaySession, type SessionPolicy } from './replay-session.js';
import { strategyByName } from './strategies/registry.js';

export interface EvaluateOptions {
  strategies: readonly string[];
  modes: ReadonlyArray<'cut' | 'session'>;
  /** Keep shares of the sweep (besides `auto`). */
  sweep: readonly number[];
  window: number;
  cutsPerSession: number;
  /** Explicit cuts by session id (from `--cuts FILE.json`). */
  cuts?: Record<string, number[]>;
}

export const DEFAULT_SWEEP = [0.9, 0.75, 0.6, 0.5, 0.4, 0.3, 0.2];

function policiesFor(
  name: string,
  window: number,
  counter: ReturnType<typeof createTokenCounter>,
): SessionPolicy[] {
  if (name === 'selfgc') return [governorPolicy('selfgc', window, counter, 'aware')];
  if (name === 'oracle') return [];
  const strategy = strategyByName(name);
  if (name === 'none') return [baselinePolicy(strategy, Number.POSITIVE_INFINITY, false)];
  return [baselinePolicy(strategy, window, false), baselinePolicy(strategy, window, true)];
}

export async function evaluateSessions(
  sessions: readonly RecordedSession[],
  options: EvaluateOptions,
  onSession?: () => void,
): Promise<{ cuts: CutOutcome[]; calls: CallOutcome[] }> {
  const counter = memoizeTokenCounter(createTokenCounter('o200k_base'));
  const strategies = options.strategies.map(strategyByName);
  const cuts: CutOutcome[] = [];
  const calls: CallOutcome[] = [];
  for (const session of sessions) {
    if (options.modes.includes('cut')) {
      const sessionCuts = options.cuts?.[session.id] ?? autoCuts(session.messages, options.cutsPerSession);
      const records = replayCuts({
        sessionId: session.id,
        messages: session.messages,
        cuts: sessionCuts,
        strategies,
        keeps: ['auto', ...options.sweep],
        tokenCounter: counter,
      });
      for (const record of records) {
        cuts.push({
          strategy: record.strategy,
          upperBound: strategies.find((strategy) => strategy.name === record.strategy)?.upperBound === true,
          keep: record.keep,
          prefixTokens: record.prefixTokens,
          viewTokens: record.viewTokens,
          strict: record.verdict.strict,
          recoverable: record.verdict.recoverable,
          lostFromFoldOrMask: record.verdict.lostFromFoldOrMask.length > 0,
        });
      }
    }
    if (options.modes.includes('session')) {
      for (const name of options.strategies) {
        for (const policy of policiesFor(name, options.window, counter)) {
          const records = await replaySession({
            sessionId: session.id,
            messages: session.messages,
            policy,
            tokenCounter: counter,
          });
          for (const record of records) {
            calls.push({
              session: record.session,
              strategy: record.strategy,
              prefixTokens: record.prefixTokens,
              viewTokens: record.viewTokens,
              cachedTokens: record.cachedTokens,
              committed: record.committed,
              changed: record.changed,
              ...(record.verdict
                ? { strict: record.verdict.strict, recoverable: record.verdict.recoverable }
                : {}),
            });
          }
        }
      }
    }
    onSession?.();
  }
  return { cuts, calls };
}
