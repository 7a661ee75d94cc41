/**
 * Evaluate strategies on sessions, both modes, returning the compact outcomes that aggregation
 * needs. Runs in one thread; `run-eval.ts` spreads sessions over worker threads.
 */
import { UpstreamError } from '../core/errors.js';
import { memoizeTokenCounter } from '../core/tokens.js';
import type { Message, Warning } from '../core/transcript.js';
import type { EntryModel } from '../core/valuator/entry-model.js';
import { createHintedPlanner } from '../llm/hint-planner.js';
import { createLlmPlanner } from '../llm/llm-planner.js';
import type { LlmClient } from '../llm/llm-types.js';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import type { CallOutcome, CutOutcome } from './aggregate.js';
import { JUDGE_DIMENSIONS, type JudgeDimension, judgeWithLlm } from './judge-llm.js';
import { comparePairwise, type WrittenStep, writeNextStep } from './judge-pairwise.js';
import { type Environment, endpointContext, type LlmEndpoint } from './llm-endpoint.js';
import { familyOf, type RecordedSession } from './load-sessions.js';
import { autoCuts, type CutRecord, continuationAt, replayableCuts, replayCuts } from './replay-cut.js';
import { baselinePolicy, governorPolicy, replaySession, type SessionPolicy } from './replay-session.js';
import {
  COMMIT_VARIANT_NAMES,
  LLM_STRATEGY_NAMES,
  type StrategyContext,
  strategyByName,
} from './strategies/registry.js';
import { plannerFallbackOf } from './strategies/selfgc-llm-strategy.js';
import { SELFGC_COMMIT_VARIANTS } from './strategies/selfgc-strategies.js';

/** Whether the LLM planner fell back, and why. */
function fallbackOutcome(warning: Warning | undefined): {
  plannerFallback: boolean;
  plannerFallbackReason?: string;
} {
  return warning === undefined
    ? { plannerFallback: false }
    : { plannerFallback: true, plannerFallbackReason: warning.message };
}

export interface EvaluateOptions {
  strategies: readonly string[];
  modes: ReadonlyArray<'cut' | 'session'>;
  /** Keep shares of the sweep (besides `auto`). */
  sweep: readonly number[];
  window: number;
  cutsPerSession: number;
  /** Explicit cuts by session id (from `--cuts FILE.json`). */
  cuts?: Record<string, number[]>;
  /** The endpoint of `selfgc-llm` and the LLM judge, when one is configured. */
  llm?: LlmEndpoint;
  /** Cuts the LLM judge reads at each strategy's own budget, by session id (`sampleJudgeCuts`); needs `llm`. */
  judgeCuts?: Record<string, number[]>;
  /** Of those, the cuts of the judge's A/B calibration, by session id; needs `llm`. */
  pairCuts?: Record<string, number[]>;
  /** A valuator model for Self-GC's fold indexes (`--model`); default none. */
  entryModel?: EntryModel | 'none';
}

export const DEFAULT_SWEEP = [0.9, 0.75, 0.6, 0.5, 0.4, 0.3, 0.2];

/**
 * How strategy `name` runs in session mode: the governor for Self-GC (with the LLM planner for
 * selfgc-llm, under the paper's commit policy for selfgc-paper); each baseline as it is and in
 * its cache-friendly `+sticky` form; none for the oracle, which needs the continuation.
 */
export function sessionPolicies(
  name: string,
  window: number,
  counter: ReturnType<typeof createTokenCounter>,
  context: StrategyContext,
): SessionPolicy[] {
  const model = context.entryModel === undefined ? {} : { entryModel: context.entryModel };
  const variant =
    name === 'selfgc'
      ? {}
      : Object.hasOwn(SELFGC_COMMIT_VARIANTS, name)
        ? SELFGC_COMMIT_VARIANTS[name]
        : undefined;
  if (variant) return [governorPolicy(name, window, counter, 'aware', { ...variant, ...model })];
  if (name === 'selfgc-llm' && context.llmClient) {
    const planner = createLlmPlanner({
      client: context.llmClient,
      ...(context.plannerMode ? { mode: context.plannerMode } : {}),
    });
    return [governorPolicy(name, window, counter, 'aware', { planner, ...model })];
  }
  if (name === 'selfgc-hints' && context.llmClient) {
    const planner = createHintedPlanner({ client: context.llmClient });
    return [governorPolicy(name, window, counter, 'aware', { planner, ...model })];
  }
  if (name === 'oracle') return [];
  const strategy = strategyByName(name, context);
  if (name === 'none') return [baselinePolicy(strategy, Number.POSITIVE_INFINITY, false)];
  return [baselinePolicy(strategy, window, false), baselinePolicy(strategy, window, true)];
}

function cutsOf(session: RecordedSession, options: Pick<EvaluateOptions, 'cuts' | 'cutsPerSession'>) {
  return options.cuts?.[session.id] ?? autoCuts(session.messages, options.cutsPerSession);
}

/** `count` of `all`, evenly spread, in order: the same choice on every run. */
function spread<T>(all: readonly T[], count: number): T[] {
  return all.length <= count
    ? [...all]
    : Array.from({ length: count }, (_, slot) => all[Math.floor(((slot + 0.5) * all.length) / count)]!);
}

function bySession(chosen: ReadonlyArray<{ id: string; cut: number }>): Record<string, number[]> {
  const byId = new Map<string, number[]>();
  for (const { id, cut } of chosen) byId.set(id, [...(byId.get(id) ?? []), cut]);
  return Object.fromEntries(byId);
}

/**
 * The cuts the LLM judge reads: `count` of all the cuts replay will use, evenly spread over the
 * sessions in order, so the choice is the same on every run and whatever the worker split.
 * With `pairs`, the cuts of the A/B calibration too: `pairs` of the judged ones, spread alike.
 */
export function sampleJudgeCuts(
  sessions: readonly RecordedSession[],
  options: Pick<EvaluateOptions, 'cuts' | 'cutsPerSession'>,
  count: number,
  pairs = 0,
): { judgeCuts: Record<string, number[]>; pairCuts: Record<string, number[]> } {
  const all = sessions.flatMap((session) =>
    replayableCuts(session.messages, cutsOf(session, options)).map((cut) => ({ id: session.id, cut })),
  );
  const judged = spread(all, count);
  return { judgeCuts: bySession(judged), pairCuts: bySession(spread(judged, pairs)) };
}

/** The failure an LLM call of the judge may end in; anything else is a bug and is thrown. */
async function unlessUpstreamFails<T>(call: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof UpstreamError) return undefined;
    throw error;
  }
}

/**
 * The LLM judge's scorecard of one view (or a failure when the endpoint gave none), and with
 * `fullSteps` (the cut is a pair cut) its A/B comparison of the next steps written from the full
 * prefix and from the view, when the view changed anything. The full-prefix step is written once
 * per cut and kept in `fullSteps` for the other strategies.
 */
async function judgeCut(
  client: LlmClient,
  messages: readonly Message[],
  record: CutRecord,
  fullSteps: Map<number, WrittenStep> | undefined,
): Promise<Pick<CutOutcome, 'llmScorecard' | 'llmJudgeFailed' | 'llmPair'>> {
  const input = {
    prefix: messages.slice(0, record.cut),
    view: record.output.items.map((item) => item.message),
    continuation: continuationAt(messages, record.cut),
    objectIds: record.objectIds,
  };
  const verdict = await unlessUpstreamFails(() => judgeWithLlm(client, input));
  const changed =
    record.output.items.length !== record.cut || record.output.items.some((item) => item.changed);
  const pair = fullSteps !== undefined && changed;
  const compared = pair
    ? await unlessUpstreamFails(async () => {
        const full = fullSteps.get(record.cut) ?? (await writeNextStep(client, input.prefix));
        fullSteps.set(record.cut, full);
        return comparePairwise(client, input, {}, full);
      })
    : undefined;
  const card = verdict?.scorecard;
  return {
    ...(card
      ? {
          llmScorecard: {
            scores: Object.fromEntries(
              JUDGE_DIMENSIONS.map((dimension) => [dimension, card.scores[dimension].score]),
            ) as Record<JudgeDimension, number>,
            pass: card.pass,
            category: card.category,
            culprit: card.culprit === 'objects' && card.culprits.length === 0 ? 'unknown' : card.culprit,
            culpritIds: card.culprits,
          },
        }
      : { llmJudgeFailed: true }),
    ...(pair
      ? { llmPair: compared ? { choices: compared.choices, slots: compared.slots } : { failed: true } }
      : {}),
  };
}

/**
 * Evaluate `sessions`. `env` holds the API key of `options.llm` (under its `keyEnv`): the key
 * is read where the client is made, never passed in the options.
 */
export async function evaluateSessions(
  sessions: readonly RecordedSession[],
  options: EvaluateOptions,
  onSession?: () => void,
  env: Environment = {},
): Promise<{ cuts: CutOutcome[]; calls: CallOutcome[] }> {
  const counter = memoizeTokenCounter(createTokenCounter('o200k_base'));
  const context: StrategyContext = {
    ...endpointContext(options.llm, env),
    ...(options.entryModel === undefined ? {} : { entryModel: options.entryModel }),
  };
  // A commit variant's cut-mode rows would be selfgc's again.
  const strategies = options.strategies
    .filter((name) => !COMMIT_VARIANT_NAMES.includes(name))
    .map((name) => strategyByName(name, context));
  const asksModel = (name: string) => LLM_STRATEGY_NAMES.includes(name);
  const cuts: CutOutcome[] = [];
  const calls: CallOutcome[] = [];
  for (const session of sessions) {
    if (options.modes.includes('cut')) {
      const records = await replayCuts({
        sessionId: session.id,
        messages: session.messages,
        cuts: cutsOf(session, options),
        strategies,
        keeps: ['auto', ...options.sweep],
        tokenCounter: counter,
      });
      const judged = new Set(options.judgeCuts?.[session.id] ?? []);
      const paired = new Set(options.pairCuts?.[session.id] ?? []);
      const fullSteps = new Map<number, WrittenStep>();
      for (const record of records) {
        const judge =
          context.llmClient && record.keep === 'auto' && judged.has(record.cut)
            ? await judgeCut(
                context.llmClient,
                session.messages,
                record,
                paired.has(record.cut) ? fullSteps : undefined,
              )
            : {};
        cuts.push({
          strategy: record.strategy,
          upperBound: strategies.find((strategy) => strategy.name === record.strategy)?.upperBound === true,
          keep: record.keep,
          prefixTokens: record.prefixTokens,
          viewTokens: record.viewTokens,
          strict: record.verdict.strict,
          recoverable: record.verdict.recoverable,
          lostFromFoldOrMask: record.verdict.lostFromFoldOrMask.length > 0,
          rareTokens: record.rareTokens.pass,
          rareTokenScore: record.rareTokens.score,
          ...(asksModel(record.strategy) ? fallbackOutcome(plannerFallbackOf(record.output.warnings)) : {}),
          ...(record.latestTurn ? { latestTurn: record.latestTurn } : {}),
          ...judge,
        });
      }
    }
    if (options.modes.includes('session')) {
      for (const name of options.strategies) {
        for (const policy of sessionPolicies(name, options.window, counter, context)) {
          const records = await replaySession({
            sessionId: session.id,
            messages: session.messages,
            policy,
            tokenCounter: counter,
          });
          for (const record of records) {
            calls.push({
              session: record.session,
              family: familyOf(session),
              strategy: record.strategy,
              prefixTokens: record.prefixTokens,
              viewTokens: record.viewTokens,
              cachedTokens: record.cachedTokens,
              committed: record.committed,
              changed: record.changed,
              ...(record.verdict
                ? { strict: record.verdict.strict, recoverable: record.verdict.recoverable }
                : {}),
              ...(record.rareTokens
                ? { rareTokens: record.rareTokens.pass, rareTokenScore: record.rareTokens.score }
                : {}),
              ...(asksModel(name) ? fallbackOutcome(plannerFallbackOf(record.warnings)) : {}),
              ...(record.latestTurn ? { latestTurn: record.latestTurn } : {}),
              ...(record.verdict && !record.verdict.strict
                ? { missingFrom: record.verdict.missingFrom }
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
