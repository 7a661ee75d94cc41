/**
 * `npm run bench`: start-up times of the built package (importing each entry, `selfgc --help`, a
 * governance worker; informative), then the ledger benchmark. On the longest recorded sessions (when
 * `../shared/traces/dev` exists) and on generated ~250k-token sessions it measures, in one run:
 * full indexing; incremental append + project per model call; the reference — re-tokenizing
 * the whole view from scratch per call — and the governor end to end; then the valuator: what
 * scoring with the default model adds to the governor's call, and how long training takes on the
 * recorded sessions. Ratios compare measurements of the same run, since the machine is noisy.
 * Prints only; exits 1 when a target is missed.
 */
import { loadavg } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { memoizeTokenCounter, type TokenCounter } from '../src/core/tokens.js';
import { createTokenCounter } from '../src/tokenizers/create-token-counter.js';
import {
  type BenchSession,
  GENERATED_SPECS,
  generatedSession,
  longestTraceSessions,
} from './ledger-inputs.js';
import {
  collectViews,
  type GovernorRun,
  type IncrementalRun,
  KEEP_RECENT_OUTPUTS,
  measureGovernor,
  measureIncremental,
  measureIndexing,
  measureReference,
  planReplay,
  type ReferenceRun,
  samplePositions,
} from './ledger-replay.js';
import {
  formatBreakdownTable,
  formatGovernorTable,
  formatMainTable,
  passesP99,
  passesRatio,
  type SessionResult,
  type Targets,
} from './ledger-report.js';
import { distribution, median, medianDistribution, medianSeries } from './ledger-stats.js';
import { formatStartupTable, measureStartup } from './startup-time.js';
import { measureScoring, measureTraining, type ScoringResult } from './valuator-bench.js';

const TARGETS: Targets = { maxRatio: 0.05, maxP99Ms: 20, judgedUpToTokens: 300_000 };
/** Each measurement runs this many times (after a warm-up); the median run is reported. */
const RUNS = 3;
/** Calls whose view is re-tokenized from scratch, spread over the replay. */
const REFERENCE_SAMPLES = 40;
const TRACE_SESSIONS = 3;
const GOVERNOR_WINDOW = 128_000;
/** Fresh processes per start-up measurement. */
const STARTUP_RUNS = 5;
/** What importing the main entry may cost: a governance worker thread pays it at start. */
const STARTUP_TARGET_MS = 150;
/** What the valuator's scoring may add to a governor call at ~250k tokens (p50, ms). */
const SCORING_TARGET_MS = 1;
/** How long `selfgc train` may take on the dev sessions. */
const TRAINING_TARGET_SECONDS = 300;

const repositoryRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const tracesFolder = resolve(repositoryRoot, '../shared/traces/dev');

/** The median over calls of the ratio of two paired series of call times. */
function pairedRatio(numerator: readonly number[], denominator: readonly number[]): number {
  return median(numerator.map((value, index) => value / Math.max(denominator[index] ?? 0, Number.EPSILON)));
}

const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

/** Incremental (raw and memoized counter) and reference runs, alternating. */
function measureReplay(session: BenchSession, counter: TokenCounter) {
  const calls = planReplay(session.messages, counter);
  const positions = samplePositions(calls.length, REFERENCE_SAMPLES);
  const views = collectViews(calls, counter, positions);
  measureReference(views.slice(-3), counter);
  // Alternating runs: a slow moment of the machine hits every measurement alike. The memoized
  // counter starts empty each run, as it would for a session new to the process.
  const incremental: IncrementalRun[] = [];
  const memoized: IncrementalRun[] = [];
  const reference: ReferenceRun[] = [];
  for (let run = 0; run < RUNS; run += 1) {
    incremental.push(measureIncremental(calls, counter));
    reference.push(measureReference(views, counter));
    memoized.push(measureIncremental(calls, memoizeTokenCounter(counter)));
  }
  return { calls, positions, incremental, memoized, reference };
}

async function benchSession(session: BenchSession, counter: TokenCounter): Promise<SessionResult> {
  measureIndexing(session.messages, counter);
  const indexRuns = Array.from({ length: RUNS }, () => measureIndexing(session.messages, counter));
  const { calls, positions, incremental, memoized, reference } = measureReplay(session, counter);
  const governor: GovernorRun[] = [];
  for (let run = 0; run < RUNS; run += 1)
    governor.push(await measureGovernor(session.messages, calls, counter, GOVERNOR_WINDOW));

  // Paired per call: the median time of each sampled call over the runs.
  const atSamples = (runs: readonly IncrementalRun[]) =>
    medianSeries(runs.map((run) => positions.map((position) => run.callMs[position] ?? 0)));
  const incrementalAtSamples = atSamples(incremental);
  const referenceAtSamples = medianSeries(reference.map((run) => run.callMs));
  const first = incremental[0]!;
  const callDistribution = (runs: readonly IncrementalRun[], times: (run: IncrementalRun) => number[]) =>
    medianDistribution(runs.map((run) => distribution(times(run))));
  return {
    name: session.name,
    origin: session.origin,
    messages: session.messages.length,
    calls: calls.length,
    tokens: session.tokens,
    largestMessageTokens: session.largestMessageTokens,
    indexMs: median(indexRuns),
    incremental: callDistribution(incremental, (run) => run.callMs),
    append: callDistribution(incremental, (run) => run.appendMs),
    project: callDistribution(incremental, (run) => run.projectMs),
    reference: medianDistribution(reference.map((run) => distribution(run.callMs))),
    ratio: pairedRatio(incrementalAtSamples, referenceAtSamples),
    newShare: median(
      positions.map(
        (position) => (first.appendedTokens[position] ?? 0) / Math.max(first.viewTokens[position] ?? 0, 1),
      ),
    ),
    totalRatio: sum(incrementalAtSamples) / Math.max(sum(referenceAtSamples), Number.EPSILON),
    memoized: callDistribution(memoized, (run) => run.callMs),
    memoizedRatio: pairedRatio(atSamples(memoized), referenceAtSamples),
    tokensAgree: reference.every((run) =>
      run.tokens.every((tokens, index) => tokens === first.viewTokens[positions[index] ?? -1]),
    ),
    governor: medianDistribution(governor.map((run) => distribution(run.callMs))),
    governorCommits: median(governor.map((run) => run.commits)),
    governorViewTokens: median(governor.map((run) => run.lastViewTokens)),
  };
}

/** Compile the hot paths before anything is timed. */
async function warmUp(counter: TokenCounter): Promise<void> {
  const session = generatedSession(
    { name: 'warm-up', seed: 99, targetTokens: 40_000, outputScale: 1 },
    counter,
  );
  const calls = planReplay(session.messages, counter);
  for (let round = 0; round < 3; round += 1) {
    measureIndexing(session.messages, counter);
    measureIncremental(calls, counter);
  }
  measureReference(collectViews(calls, counter, samplePositions(calls.length, 10)), counter);
  await measureGovernor(session.messages, calls, counter, 16_000);
}

async function runSection(
  title: string,
  sessions: readonly BenchSession[],
  counter: TokenCounter,
): Promise<SessionResult[]> {
  const results: SessionResult[] = [];
  for (const session of sessions) {
    process.stderr.write(`  measuring ${session.name} (${session.tokens} tokens)…\n`);
    results.push(await benchSession(session, counter));
  }
  console.log(`\n## ${title}\n`);
  console.log(formatMainTable(results, TARGETS));
  console.log('\nWhere the incremental call spends its time, and with a memoized counter (informative):\n');
  console.log(formatBreakdownTable(results));
  console.log('\nThe governor end to end, `project` per call (informative):\n');
  console.log(formatGovernorTable(results));
  return results;
}

/** Informative: start-up times follow the machine's load more than the code. */
function reportStartup(): void {
  const load = loadavg()[0]!.toFixed(1);
  console.log(
    `\n## Start-up (the built package, ${STARTUP_RUNS} fresh processes each, median; load ${load})\n`,
  );
  const startup = measureStartup(repositoryRoot, STARTUP_RUNS);
  if (!startup) {
    console.log('(no dist/: run npm run build first)');
    return;
  }
  console.log(formatStartupTable(startup));
  const main = startup[0]!;
  console.log(
    `\n${main.name}: ${main.wallMs.toFixed(0)} ms wall (target ≤ ${STARTUP_TARGET_MS} ms, informative).`,
  );
}

/**
 * The valuator: the governor's call with and without the default model on the generated
 * sessions, and the fit on the recorded ones. Returns the targets it missed.
 */
async function reportValuator(sessions: readonly BenchSession[], counter: TokenCounter): Promise<string[]> {
  const scoring: ScoringResult[] = [];
  for (const session of sessions) {
    process.stderr.write(`  scoring ${session.name} with and without the valuator model…\n`);
    scoring.push(await measureScoring(session, counter, GOVERNOR_WINDOW, RUNS));
  }
  console.log(`\n## The valuator (default model; governor window ${GOVERNOR_WINDOW}; ms per call)\n`);
  console.log('| session | tokens | p50 without | p50 with | added p50 (paired) |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  for (const result of scoring) {
    console.log(
      `| ${result.name} | ${result.tokens} | ${result.plainP50.toFixed(2)} | ${result.modelP50.toFixed(2)} | ${result.addedP50.toFixed(2)} |`,
    );
  }
  process.stderr.write('  fitting the valuator on the recorded sessions…\n');
  const training = measureTraining(tracesFolder);
  console.log(
    training
      ? `\nTraining (collect + fit, one thread): ${training.seconds.toFixed(1)} s on ${training.sessions} sessions, ${training.rows} examples (target ≤ ${TRAINING_TARGET_SECONDS} s).`
      : `\n(no recorded sessions to train on: ${tracesFolder})`,
  );
  return [
    ...scoring
      .filter((result) => result.addedP50 > SCORING_TARGET_MS)
      .map(
        (result) =>
          `${result.name}: scoring adds ${result.addedP50.toFixed(2)} ms p50 > ${SCORING_TARGET_MS} ms`,
      ),
    ...(training && training.seconds > TRAINING_TARGET_SECONDS
      ? [`training took ${training.seconds.toFixed(0)} s > ${TRAINING_TARGET_SECONDS} s`]
      : []),
  ];
}

async function main(): Promise<number> {
  const started = performance.now();
  const counter = createTokenCounter('o200k_base');
  console.log('Ledger benchmark: index, append + project per model call, and re-tokenizing from scratch');
  console.log(
    [
      `node ${process.version}, tokenizer ${counter.name} (not memoized; gpt-tokenizer's own merge cache on, for every measurement alike),`,
      `${RUNS} runs per measurement after a warm-up, median run reported (statistic by statistic).`,
      `Replay: one model call per assistant message; state: every tool output but the last ${KEEP_RECENT_OUTPUTS} folded.`,
      `Reference: countMessageTokens over every message of the call's view, on ${REFERENCE_SAMPLES} calls spread over the replay;`,
      '  ratio = median over those calls of incremental / reference on the same call; Σ ratio = Σ incremental / Σ reference;',
      '  new/view = median over those calls of tokens appended / tokens of the view: where counting only what is new would land.',
      `Targets (stated at ~250k tokens, judged on sessions of up to ${TARGETS.judgedUpToTokens / 1000}k): ratio ≤ ${TARGETS.maxRatio * 100}%, incremental p99 ≤ ${TARGETS.maxP99Ms} ms.`,
      'memo: the same replay with memoizeTokenCounter (empty at the start of each run), as the proxy and the CLI count.',
      `Governor: createGovernor (memory store, embedded planner, window ${GOVERNOR_WINDOW}) .project per call. Times in ms.`,
    ].join('\n'),
  );
  reportStartup();
  await warmUp(counter);

  const all: SessionResult[] = [];
  const traces = longestTraceSessions(tracesFolder, counter, TRACE_SESSIONS);
  if (traces) {
    all.push(
      ...(await runSection(
        `Recorded sessions: the ${TRACE_SESSIONS} longest in ${tracesFolder}`,
        traces,
        counter,
      )),
    );
  } else {
    console.log(`\n(no recorded sessions: ${tracesFolder} does not exist)`);
  }
  const generated = GENERATED_SPECS.map((spec) => generatedSession(spec, counter));
  all.push(...(await runSection('Generated sessions (seeded, ~250k tokens)', generated, counter)));

  const valuator = await reportValuator(generated, counter);

  const missed = all.flatMap((result) => [
    ...(result.tokensAgree ? [] : [`${result.name}: view token counts differ from a from-scratch count`]),
    ...(!result.tokensAgree || passesRatio(result, TARGETS)
      ? []
      : [`${result.name}: ratio ${(result.ratio * 100).toFixed(2)}% > ${TARGETS.maxRatio * 100}%`]),
    ...(passesP99(result, TARGETS)
      ? []
      : [`${result.name}: p99 ${result.incremental.p99.toFixed(2)} ms > ${TARGETS.maxP99Ms} ms`]),
  ]);
  missed.push(...valuator);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    missed.length === 0
      ? `\nAll targets met (ratio ≤ ${TARGETS.maxRatio * 100}%, p99 ≤ ${TARGETS.maxP99Ms} ms). ${seconds} s.`
      : `\nTargets missed:\n${missed.map((line) => `- ${line}`).join('\n')}\n${seconds} s.`,
  );
  return missed.length === 0 ? 0 : 1;
}

process.exitCode = await main();
