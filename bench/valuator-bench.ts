/**
 * The valuator's costs, for `npm run bench`: what scoring adds to the governor's call (the same
 * replay with and without the default model, runs alternating, paired call by call) and how long
 * `selfgc train`'s fit takes on the recorded sessions.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { TokenCounter } from '../src/core/tokens.js';
import { defaultEntryModel } from '../src/core/valuator/entry-model.js';
import { loadSessions } from '../src/eval/load-sessions.js';
import { collectExamples, fitEntryModel } from '../src/eval/train-valuator.js';
import type { BenchSession } from './ledger-inputs.js';
import { measureGovernor, planReplay } from './ledger-replay.js';
import { median, medianSeries } from './ledger-stats.js';

export interface ScoringResult {
  name: string;
  tokens: number;
  /** p50 of the governor's call, without and with the model. */
  plainP50: number;
  modelP50: number;
  /** Median over calls of (with − without), each call's median time over the runs. */
  addedP50: number;
}

/** The governor's replay of `session` with and without the default model, `runs` times each. */
export async function measureScoring(
  session: BenchSession,
  counter: TokenCounter,
  window: number,
  runs: number,
): Promise<ScoringResult> {
  const calls = planReplay(session.messages, counter);
  const model = defaultEntryModel();
  const plain: number[][] = [];
  const scored: number[][] = [];
  for (let run = 0; run < runs; run += 1) {
    plain.push((await measureGovernor(session.messages, calls, counter, window)).callMs);
    scored.push((await measureGovernor(session.messages, calls, counter, window, model)).callMs);
  }
  const plainCalls = medianSeries(plain);
  const scoredCalls = medianSeries(scored);
  return {
    name: session.name,
    tokens: session.tokens,
    plainP50: median(plainCalls),
    modelP50: median(scoredCalls),
    addedP50: median(scoredCalls.map((value, index) => value - (plainCalls[index] ?? 0))),
  };
}

/** Seconds `selfgc train` takes to collect examples and fit on every session file in `folder`. */
export function measureTraining(
  folder: string,
): { seconds: number; sessions: number; rows: number } | undefined {
  if (!existsSync(folder)) return undefined;
  const files = readdirSync(folder)
    .filter((name) => name.endsWith('.jsonl'))
    .map((name) => join(folder, name));
  if (files.length === 0) return undefined;
  const started = performance.now();
  const sessions = loadSessions(files);
  const examples = collectExamples(sessions);
  fitEntryModel(examples);
  return {
    seconds: (performance.now() - started) / 1000,
    sessions: sessions.length,
    rows: examples.rows.length,
  };
}
