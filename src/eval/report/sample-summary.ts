/**
 * TEST FIXTURE — not results. A synthetic but plausible `EvalSummary` for the report tests:
 * made-up no-impact curves for the cut-mode strategies and simulated token timelines for the
 * session-mode ones, from a seeded generator so every run draws the same report.
 */

import {
  type CutModeResult,
  type CutPoint,
  EVAL_SUMMARY_VERSION,
  type EvalSummary,
  type RareTokenResult,
  type SessionModeResult,
} from '../eval-summary.js';
import { wilson } from '../wilson.js';

const CUTS = 66;
const WINDOW = 128_000;
const SESSIONS = 14;
/** Dollars per million input tokens before cache multipliers. */
const INPUT_PRICE = 3;
const PRICING = { cacheWrite: 1.25, cacheRead: 0.1 };

/** mulberry32: a tiny seeded generator, so the fixture is the same on every run. */
function createRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface CutProfile {
  strategy: string;
  upperBound?: true;
  /** Prune rate reached per unit of (1 − keep), and at the strategy's own budget. */
  reach: number;
  own: number;
  keeps: number[];
  /** Strict no-impact as a function of prune rate. */
  noImpact: (pruneRate: number) => number;
  /** Extra share recoverable through fold/mask pointers, and the share lost despite them. */
  recoverable: number;
  loss: number;
}

const SWEEP_7 = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3];
const CUT_PROFILES: CutProfile[] = [
  {
    strategy: 'oldest-turn',
    reach: 1,
    own: 0.52,
    keeps: SWEEP_7,
    noImpact: (p) => 1 - 0.8 * p,
    recoverable: 0,
    loss: 0,
  },
  {
    strategy: 'tool-prune',
    reach: 0.92,
    own: 0.46,
    keeps: [0.9, 0.8, 0.7, 0.6, 0.5, 0.4],
    noImpact: (p) => 1 - 0.99 * p ** 1.3,
    recoverable: 0,
    loss: 0,
  },
  {
    strategy: 'tool-mask-prune',
    reach: 0.95,
    own: 0.48,
    keeps: SWEEP_7,
    noImpact: (p) => 1 - 0.96 * p ** 1.5,
    recoverable: 0.05,
    loss: 0.06,
  },
  {
    strategy: 'hybrid',
    reach: 0.97,
    own: 0.5,
    keeps: SWEEP_7,
    noImpact: (p) => 1 - 0.91 * p ** 1.6,
    recoverable: 0.04,
    loss: 0.05,
  },
  {
    strategy: 'selfgc',
    reach: 0.98,
    own: 0.44,
    keeps: [0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3],
    noImpact: (p) => 1 - 0.92 * p ** 2.2,
    recoverable: 0.08,
    loss: 0.015,
  },
  {
    strategy: 'oracle',
    upperBound: true,
    reach: 1,
    own: 0.62,
    keeps: SWEEP_7,
    noImpact: (p) => 1 - 2.5 * Math.max(0, p - 0.55) ** 2,
    recoverable: 0,
    loss: 0,
  },
];

/** The rare-token judge, drawn from its pass count: views that fail it still show most of what they need. */
function rareTokenResult(passed: number, total: number): RareTokenResult {
  return { noImpact: wilson(passed, total), meanScore: total > 0 ? 0.85 + (0.15 * passed) / total : 0 };
}

function cutPoint(
  profile: CutProfile,
  keep: number | 'auto',
  pruneRate: number,
  random: () => number,
): CutPoint {
  const noise = Math.round((random() - 0.5) * 3);
  const strict = Math.min(CUTS, Math.max(0, Math.round(profile.noImpact(pruneRate) * CUTS) + noise));
  const recoverable = Math.min(CUTS, strict + Math.round(profile.recoverable * CUTS * (0.5 + pruneRate)));
  return {
    keep,
    pruneRate,
    strictNoImpact: wilson(strict, CUTS),
    recoverableNoImpact: wilson(recoverable, CUTS),
    unrecoverableLoss: wilson(Math.round(profile.loss * CUTS * (0.5 + pruneRate)), CUTS),
    rareTokens: rareTokenResult(Math.max(0, strict - Math.round(pruneRate * 6)), CUTS),
    cuts: CUTS,
  };
}

function cutModeResults(random: () => number): CutModeResult[] {
  return CUT_PROFILES.map((profile) => ({
    strategy: profile.strategy,
    upperBound: profile.upperBound === true,
    own: cutPoint(profile, 'auto', profile.own, random),
    sweep: profile.keeps.map((keep) => {
      const pruneRate = Math.min(0.97, (1 - keep) * profile.reach + (random() - 0.5) * 0.02);
      return cutPoint(profile, keep, Math.max(0, pruneRate), random);
    }),
  }));
}

/** Linear interpolation of strict no-impact along a sweep; null outside its range. */
function interpolate(sweep: CutPoint[], pruneRate: number): number | null {
  const points = [...sweep].sort((a, b) => a.pruneRate - b.pruneRate);
  for (let index = 1; index < points.length; index++) {
    const left = points[index - 1]!;
    const right = points[index]!;
    if (pruneRate >= left.pruneRate && pruneRate <= right.pruneRate) {
      const t = (pruneRate - left.pruneRate) / (right.pruneRate - left.pruneRate || 1);
      return left.strictNoImpact.value + t * (right.strictNoImpact.value - left.strictNoImpact.value);
    }
  }
  return null;
}

interface SessionPolicy {
  strategy: string;
  /** Commit when the view passes this share of the window, at most every `cooldown` calls. */
  trigger: number;
  cooldown: number;
  /** Decide how many more tokens to remove from a view that triggered. */
  remove: (view: number) => number;
  /** Share of the view still cached after a commit (the edit breaks the cache after it). */
  cachedAfterCommit: number;
  /** Strict and recoverable no-impact over the calls whose view changed. */
  strict: number;
  recoverable: number;
}

const SESSION_POLICIES: SessionPolicy[] = [
  {
    strategy: 'none',
    trigger: Infinity,
    cooldown: 0,
    remove: () => 0,
    cachedAfterCommit: 0,
    strict: 1,
    recoverable: 1,
  },
  {
    strategy: 'oldest-turn',
    trigger: 0.7,
    cooldown: 1,
    remove: (view) => view - 0.55 * WINDOW,
    cachedAfterCommit: 0.04,
    strict: 0.71,
    recoverable: 0.71,
  },
  {
    strategy: 'tool-prune',
    trigger: 0.75,
    cooldown: 1,
    remove: (view) => 0.38 * view,
    cachedAfterCommit: 0.15,
    strict: 0.78,
    recoverable: 0.78,
  },
  {
    strategy: 'hybrid',
    trigger: 0.75,
    cooldown: 2,
    remove: (view) => 0.42 * view,
    cachedAfterCommit: 0.15,
    strict: 0.83,
    recoverable: 0.87,
  },
  // The cache-friendly forms: names as long as the real report's, edits only when the window forces them.
  {
    strategy: 'oldest-turn+sticky',
    trigger: 1,
    cooldown: 1,
    remove: (view) => view - 0.5 * WINDOW,
    cachedAfterCommit: 0.04,
    strict: 0.55,
    recoverable: 0.55,
  },
  {
    strategy: 'last-5-observations+sticky',
    trigger: 1,
    cooldown: 1,
    remove: (view) => 0.35 * view,
    cachedAfterCommit: 0.1,
    strict: 0.66,
    recoverable: 0.66,
  },
  {
    strategy: 'selfgc',
    trigger: 0.8,
    cooldown: 4,
    remove: (view) => 0.5 * view,
    cachedAfterCommit: 0.25,
    strict: 0.94,
    recoverable: 0.98,
  },
];

/** Transcript tokens per call: a system prompt and task, then tool rounds with occasional big reads. */
function transcriptGrowth(calls: number, random: () => number): number[] {
  const tokens: number[] = [];
  let total = 6_000 + Math.round(random() * 8_000);
  for (let call = 0; call < calls; call++) {
    tokens.push(total);
    const bigRead = random() < 0.08 ? 6_000 + random() * 10_000 : 0;
    total += Math.round(300 + random() * 2_200 + bigRead);
  }
  return tokens;
}

function simulate(policy: SessionPolicy, transcripts: Array<{ session: string; tokens: number[] }>) {
  let inputTokens = 0;
  let baselineInputTokens = 0;
  let cached = 0;
  let cost = 0;
  let overWindowCalls = 0;
  let changedCalls = 0;
  const timelines = transcripts.map(({ session, tokens }) => {
    let removed = 0;
    let lastCommit = -Infinity;
    let previousView = 0;
    const viewTokens: number[] = [];
    const commitCalls: number[] = [];
    tokens.forEach((transcript, call) => {
      let view = transcript - removed;
      const committed = view > policy.trigger * WINDOW && call - lastCommit >= policy.cooldown;
      if (committed) {
        removed += Math.round(policy.remove(view));
        view = transcript - removed;
        lastCommit = call;
        commitCalls.push(call);
      }
      const reused = call === 0 ? 0 : committed ? Math.round(policy.cachedAfterCommit * view) : previousView;
      inputTokens += view;
      baselineInputTokens += transcript;
      cached += reused;
      cost += ((view - reused) * PRICING.cacheWrite + reused * PRICING.cacheRead) * (INPUT_PRICE / 1e6);
      if (view > WINDOW) overWindowCalls++;
      if (removed > 0) changedCalls++;
      viewTokens.push(view);
      previousView = view;
    });
    return { session, viewTokens, transcriptTokens: tokens, commitCalls };
  });
  const calls = transcripts.reduce((sum, { tokens }) => sum + tokens.length, 0);
  return { timelines, inputTokens, baselineInputTokens, cached, cost, overWindowCalls, changedCalls, calls };
}

const SESSION_TOPICS = [
  'migrate-orm',
  'fix-flaky-ci',
  'add-oauth',
  'refactor-parser',
  'bump-deps',
  'perf-regression',
  'docs-site',
  'port-to-esm',
  'race-in-cache',
  'cli-flags',
  'k8s-manifests',
  'sql-n-plus-one',
  'i18n-strings',
  'rust-ffi',
];

function sessionModeResults(random: () => number): SessionModeResult[] {
  const transcripts = SESSION_TOPICS.slice(0, SESSIONS).map((topic, index) => ({
    session: `fixture-${String(index + 1).padStart(2, '0')}-${topic}`,
    tokens: transcriptGrowth(32 + Math.round(random() * 42), random),
  }));
  const runs = SESSION_POLICIES.map((policy) => ({ policy, run: simulate(policy, transcripts) }));
  const noneCost = runs[0]?.run.cost ?? 1;
  return runs.map(({ policy, run }) => ({
    strategy: policy.strategy,
    window: WINDOW,
    calls: run.calls,
    inputTokens: run.inputTokens,
    baselineInputTokens: run.baselineInputTokens,
    overWindowCalls: run.overWindowCalls,
    cacheHitRate: run.inputTokens > 0 ? run.cached / run.inputTokens : 0,
    cost: Math.round(run.cost * 100) / 100,
    costRelative: run.cost / noneCost,
    commits: run.timelines.reduce((sum, timeline) => sum + timeline.commitCalls.length, 0),
    strictNoImpactChanged: wilson(Math.round(policy.strict * run.changedCalls), run.changedCalls),
    recoverableNoImpactChanged: wilson(Math.round(policy.recoverable * run.changedCalls), run.changedCalls),
    rareTokensChanged: rareTokenResult(
      Math.round(Math.max(0, policy.strict - 0.05) * run.changedCalls),
      run.changedCalls,
    ),
    timelines: run.timelines,
  }));
}

/** TEST FIXTURE: a synthetic summary with six cut-mode and five session-mode strategies. */
export function sampleSummary(): EvalSummary {
  const random = createRandom(20260714);
  const cutMode = cutModeResults(random);
  const sessionMode = sessionModeResults(random);
  const matched = [0.2, 0.3, 0.4, 0.5, 0.6].map((pruneRate) => ({
    pruneRate,
    strictNoImpact: Object.fromEntries(
      cutMode.map((result) => [result.strategy, interpolate(result.sweep, pruneRate)]),
    ),
  }));
  return {
    version: EVAL_SUMMARY_VERSION,
    createdAt: '2026-07-14T09:30:00.000Z',
    inputs: ['test-fixture/sessions-a.jsonl', 'test-fixture/sessions-b.jsonl'],
    command: 'selfgc eval test-fixture/ --strategies all --json eval.json --report eval.html',
    sessions: SESSIONS,
    cutMode,
    sessionMode,
    matched,
    pricing: PRICING,
  };
}

/** The summary as one written before the rare-token judge existed: its fields left out. */
export function withoutRareTokens(summary: EvalSummary): EvalSummary {
  return {
    ...summary,
    cutMode: summary.cutMode.map(({ own: { rareTokens: _rare, ...own }, ...result }) => ({ ...result, own })),
    sessionMode: summary.sessionMode.map(({ rareTokensChanged: _rare, ...result }) => result),
  };
}

/**
 * The summary with the paper's judge protocol filled in by hand: the first cut-mode strategy
 * renamed `selfgc|llm` (a pipe, to test escaping) with scorecards and a calibration, and a
 * latest-turn audit for `selfgc` in cut mode and the first session-mode strategy.
 */
export function withJudgeProtocol(summary: EvalSummary): EvalSummary {
  const [first, ...rest] = summary.cutMode;
  const judged: CutModeResult = {
    ...first!,
    strategy: 'selfgc|llm',
    llmNoImpact: wilson(15, 20),
    llmScorecard: {
      judged: 20,
      means: { task_progress: 4.5, information_sufficiency: 4.25, action_consistency: 4, correctness: 4.875 },
      failureCategories: {
        none: 1,
        'missing-identifier': 2,
        'missing-file-content': 1,
        'lost-plan-or-constraint': 1,
        other: 0,
      },
      culprits: { objects: 3, other: 1, none: 1, unknown: 0 },
      culpritKinds: { 'function:read_file': 2, 'conversation:user': 1 },
    },
    llmCalibration: {
      pairs: 5,
      flips: wilson(1, 4),
      slotA: wilson(4, 7),
      consistent: { governed: 1, full: 1, tie: 1 },
      agreement: wilson(2, 3),
      failures: 1,
    },
    llmAgreement: wilson(18, 20),
    llmJudgeFailures: 1,
    llmPlannerFallbacks: 2,
  };
  return {
    ...summary,
    llm: { provider: 'openai', model: 'judge-model', judgeSample: 20, judgePairs: 5 },
    cutMode: [
      judged,
      ...rest.map((result) =>
        result.strategy === 'selfgc'
          ? { ...result, latestTurnAudit: { plans: 66, operations: 410, refused: 3, applied: 0 } }
          : result,
      ),
    ],
    sessionMode: summary.sessionMode.map((result, index) =>
      index === 0
        ? { ...result, latestTurnAudit: { plans: 12, operations: 40, applied: 0, windowRescue: 2 } }
        : result,
    ),
  };
}
