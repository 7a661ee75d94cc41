/**
 * `selfgc eval`: every strategy, both modes, on worker threads; a table, and optionally the
 * summary as JSON, the HTML report and the results as Markdown.
 */
import { availableParallelism } from 'node:os';
import { BadInputError } from '../core/errors.js';
import { defaultEntryModel, type EntryModel } from '../core/valuator/entry-model.js';
import {
  type EvalSummary,
  type FamilyResult,
  lastFallbackNote,
  prefixBandLabel,
  type RareTokenResult,
  type Rate,
} from '../eval/eval-summary.js';
import { DEFAULT_SWEEP } from '../eval/evaluate-sessions.js';
import { holdOutFamilies } from '../eval/hold-out-families.js';
import { FAILURE_CATEGORIES, JUDGE_DIMENSIONS } from '../eval/judge-llm.js';
import { endpointContext, type LlmEndpoint } from '../eval/llm-endpoint.js';
import { loadSessions, requireTwoFamilies } from '../eval/load-sessions.js';
import { renderMarkdown } from '../eval/report/render-markdown.js';
import { renderReport } from '../eval/report/render-report.js';
import { runEval } from '../eval/run-eval.js';
import {
  COMMIT_VARIANT_NAMES,
  LLM_STRATEGY_NAMES,
  STRATEGY_NAMES,
  strategyByName,
} from '../eval/strategies/registry.js';
import { checkOutputPaths } from './cli-args.js';
import type { CliIo } from './cli-io.js';
import { DEFAULT_JUDGE_PAIRS, DEFAULT_JUDGE_SAMPLE, LLM_FLAGS_HELP } from './llm-flags.js';
import { MODEL_FLAG_HELP } from './model-flag.js';
import { writeOutputFile } from './output-file.js';

export const EVAL_HELP = `Usage: selfgc eval <files...> [options]

Replay recorded sessions (one JSON session per line, OpenAI chat messages) with every strategy,
judge each view against the real continuation, and report prune rate, no-impact (Wilson 95%),
the budget sweep, matched-rate comparison, and session-mode cost under cache pricing.

  --strategies a,b,...   strategies to run (default: all: ${STRATEGY_NAMES.join(', ')});
                         ${LLM_STRATEGY_NAMES.join(', ')} (needs --llm-url) runs only when named: one model
                         call per cut and budget in cut mode, one per governance run in session mode;
                         ${COMMIT_VARIANT_NAMES.join(', ')} (selfgc under the paper's commit policy) runs only
                         when named, in session mode
  --modes cut,session    which replays to run (default: both)
  --window N             window of session mode (default 32000)
  --cuts-per-session N   automatic cut points per session in cut mode (default 4)
  --workers N            worker threads (default: one per core)
  --json FILE            write the summary as JSON
  --report FILE          write the self-contained HTML report
  --markdown FILE        write the results as Markdown: the tables below, under the command,
                         the date and the settings of the run
  --judge anchors|llm    anchors: the deterministic anchor judge alone (default); llm: also ask
                         the model for a scorecard (G-Eval style: task_progress,
                         information_sufficiency, action_consistency, correctness, each 1-5,
                         with failure_culprit and failure_category) on sampled cuts at each
                         strategy's own budget; a pass (every score 4 or more) is its no-impact,
                         next to the anchor judge's (needs --llm-url)
  --judge-sample N       cuts per strategy the LLM judge reads, the same for every strategy
                         (default ${DEFAULT_JUDGE_SAMPLE}; one model call each)
  --judge-pairs N        of those, cuts per strategy for the judge's A/B calibration: the model
                         writes the next step from the full prefix and from the view, and the
                         judge compares them in both orders (position bias, agreement with the
                         scorecard); three calls each where the view changed anything,
                         and one per cut for the full-prefix step (default ${DEFAULT_JUDGE_PAIRS}; 0 for none)
${MODEL_FLAG_HELP}
  --leave-one-family-out also replay each family (each input file is one) in session mode
                         with the valuator's model fitted on the other families, next to the
                         shipped model (--model default) and to none: how the model holds on
                         agents it never saw, and what it adds (one fit and three selfgc
                         replays per family)

${LLM_FLAGS_HELP}`;

export interface EvalOptions {
  strategies: string[];
  modes: Array<'cut' | 'session'>;
  window: number;
  cutsPerSession: number;
  workers?: number;
  json?: string;
  report?: string;
  markdown?: string;
  /** The endpoint of `selfgc-llm` and the LLM judge. */
  llm?: LlmEndpoint;
  /** With `llm`: cuts per strategy the LLM judge reads (`--judge llm`). */
  judgeSample?: number;
  /** With `judgeSample`: of those, cuts per strategy for the A/B calibration (`--judge-pairs`). */
  judgePairs?: number;
  /** The valuator's model for Self-GC (`--model`). */
  entryModel?: EntryModel | 'none';
  /** The file `entryModel` was read from, an input no output may overwrite. */
  modelFile?: string;
  /** Also replay each family with a valuator fitted without it (`--leave-one-family-out`). */
  leaveOneFamilyOut?: boolean;
}

const percent = (value: number) => `${(value * 100).toFixed(1)}%`;

/** The rare-token judge's pass rate and mean score; a dash where it judged nothing, or the summary predates it. */
function rareTokenCells(result: RareTokenResult | undefined): string {
  if (!result || result.noImpact.total === 0) return '–';
  const rate = result.noImpact;
  return `${percent(rate.value).padStart(6)} [${percent(rate.low)}–${percent(rate.high)}]   ${result.meanScore.toFixed(3)}`;
}

export function formatSummary(summary: EvalSummary): string {
  const lines: string[] = [];
  if (summary.cutMode.length > 0) {
    lines.push(
      'cut mode (own budget)        prune   strict no-impact [95% CI]   recoverable   unrecoverable loss   rare-token no-impact [95% CI]   score',
    );
    for (const result of summary.cutMode) {
      const own = result.own;
      lines.push(
        `  ${(result.strategy + (result.upperBound ? ' (upper bound)' : '')).padEnd(26)} ${percent(own.pruneRate).padStart(6)}   ${percent(own.strictNoImpact.value).padStart(6)} [${percent(own.strictNoImpact.low)}–${percent(own.strictNoImpact.high)}]   ${percent(own.recoverableNoImpact.value).padStart(6)}        ${percent(own.unrecoverableLoss.value).padStart(6)}        ${rareTokenCells(own.rareTokens)}`,
      );
    }
    lines.push(...formatLlmCutLines(summary));
    lines.push('matched prune rate → strict no-impact');
    for (const row of summary.matched) {
      const cells = Object.entries(row.strictNoImpact).map(
        ([name, value]) => `${name} ${value === null ? '–' : percent(value)}`,
      );
      lines.push(`  ${percent(row.pruneRate).padStart(6)}: ${cells.join(' · ')}`);
    }
  }
  if (summary.sessionMode.length > 0) {
    lines.push(
      `session mode (window ${summary.sessionMode[0]?.window})   input vs none   over-window   cache hits   cost vs none   commits   strict no-impact (changed calls)   rare-token no-impact [95% CI]   score`,
    );
    for (const result of summary.sessionMode) {
      lines.push(
        `  ${result.strategy.padEnd(26)} ${percent(result.inputTokens / Math.max(1, result.baselineInputTokens)).padStart(8)}   ${String(result.overWindowCalls).padStart(9)}   ${percent(result.cacheHitRate).padStart(9)}   ${result.costRelative.toFixed(3).padStart(10)}   ${String(result.commits).padStart(7)}   ${`${percent(result.strictNoImpactChanged.value)} of ${result.strictNoImpactChanged.total}`.padEnd(16)}   ${rareTokenCells(result.rareTokensChanged)}`,
      );
    }
  }
  for (const result of summary.sessionMode) {
    if (!result.families) continue;
    const cells = result.families.map(
      (row) =>
        `${row.family} ${row.strictNoImpactChanged.total > 0 ? percent(row.strictNoImpactChanged.value) : '–'} (${row.costRelative.toFixed(3)}${row.overWindowCalls > 0 ? `, ${row.overWindowCalls} over` : ''})`,
    );
    lines.push(`  by family, ${result.strategy}: ${cells.join(' · ')}`);
  }
  for (const result of summary.sessionMode) {
    if (!result.prefixBands) continue;
    const cells = result.prefixBands.map((band) => {
      const rate = band.strictNoImpactChanged;
      return `${prefixBandLabel(band)} ${rate.total > 0 ? `${percent(rate.value)} of ${rate.total}` : '–'}`;
    });
    lines.push(`  by prefix / window, ${result.strategy}: ${cells.join(' · ')}`);
  }
  if (summary.leaveOneFamilyOut?.length) {
    lines.push(
      'leave one family out (selfgc, session mode)   held out: strict · cost   shipped model: strict · cost   difference   no model: strict',
    );
    for (const row of summary.leaveOneFamilyOut) {
      const strict = (result: FamilyResult) =>
        result.strictNoImpactChanged.total > 0 ? percent(result.strictNoImpactChanged.value) : '–';
      const difference =
        row.heldOut.strictNoImpactChanged.total > 0
          ? `${((row.heldOut.strictNoImpactChanged.value - row.shipped.strictNoImpactChanged.value) * 100).toFixed(1)} points`
          : '–';
      lines.push(
        `  ${row.family.padEnd(44)} ${strict(row.heldOut).padStart(6)} · ${row.heldOut.costRelative.toFixed(3)}   ${strict(row.shipped).padStart(6)} · ${row.shipped.costRelative.toFixed(3)}${row.shippedModelSawFamily ? '' : ' (never saw it)'}   ${difference}   ${strict(row.withoutModel)}`,
      );
    }
  }
  for (const result of summary.sessionMode)
    if (result.llmPlannerFallbacks)
      lines.push(
        `  ${result.strategy}: the llm planner failed at ${result.llmPlannerFallbacks} call(s); the embedded planner stood in${lastFallbackNote(result)}`,
      );
  lines.push(...formatAuditLines(summary));
  return `${lines.join('\n')}\n`;
}

const interval = (rate: Rate) => `${percent(rate.value)} [${percent(rate.low)}–${percent(rate.high)}]`;

/** The LLM judge's scorecards and A/B calibration next to the anchor judge, and planner fallbacks, when there are any. */
function formatLlmCutLines(summary: EvalSummary): string[] {
  const lines: string[] = [];
  const judged = summary.cutMode.filter((result) => result.llmNoImpact !== undefined);
  if (judged.length > 0) {
    lines.push(
      `llm judge (${summary.llm?.model ?? 'model'}, own budget, sampled cuts)   pass = no-impact [95% CI]   agrees with strict   no verdict   mean ${JUDGE_DIMENSIONS.join(' / ')}`,
    );
    for (const result of judged) {
      const rate = result.llmNoImpact!;
      const means = result.llmScorecard?.judged
        ? JUDGE_DIMENSIONS.map((dimension) => result.llmScorecard!.means[dimension].toFixed(2)).join(' / ')
        : '–';
      lines.push(
        `  ${result.strategy.padEnd(26)} ${interval(rate).padStart(6)} of ${rate.total}   ${percent(result.llmAgreement?.value ?? 0).padStart(6)}   ${result.llmJudgeFailures ?? 0}   ${means}`,
      );
    }
    lines.push(
      'failure taxonomy (failing scorecards)   categories   culprits (changed objects, other, none, unknown ids)',
    );
    for (const result of judged) {
      const card = result.llmScorecard;
      if (!card) continue;
      const categories = FAILURE_CATEGORIES.filter((category) => card.failureCategories[category] > 0)
        .map((category) => `${category} ${card.failureCategories[category]}`)
        .join(', ');
      const kinds = Object.entries(card.culpritKinds)
        .map(([kind, count]) => `${kind} ${count}`)
        .join(', ');
      const { objects, other, none, unknown } = card.culprits;
      lines.push(
        `  ${result.strategy.padEnd(26)} ${categories || 'none failed'}   ${objects}, ${other}, ${none}, ${unknown}${kinds ? ` (${kinds})` : ''}`,
      );
    }
  }
  const calibrated = summary.cutMode.filter((result) => result.llmCalibration !== undefined);
  if (calibrated.length > 0) {
    lines.push(
      'llm judge A/B calibration (next step from the full prefix vs from the view, both orders)   pairs   flips with order [95% CI]   slot A chosen   same verdict: governed/full/tie   agrees with scorecard   failed',
    );
    for (const result of calibrated) {
      const calibration = result.llmCalibration!;
      const { governed, full, tie } = calibration.consistent;
      lines.push(
        `  ${result.strategy.padEnd(26)} ${String(calibration.pairs).padStart(5)}   ${interval(calibration.flips)} of ${calibration.flips.total}   ${percent(calibration.slotA.value)} of ${calibration.slotA.total}   ${governed}/${full}/${tie}   ${percent(calibration.agreement.value)} of ${calibration.agreement.total}   ${calibration.failures}`,
      );
    }
  }
  for (const result of summary.cutMode)
    if (result.llmPlannerFallbacks)
      lines.push(
        `  ${result.strategy}: the llm planner failed for ${result.llmPlannerFallbacks} plan(s); the embedded planner stood in${lastFallbackNote(result)}`,
      );
  return lines;
}

/** The latest-turn audit of the strategies that plan through the harness: every "applied" should be 0. */
function formatAuditLines(summary: EvalSummary): string[] {
  const rows = [
    ...summary.cutMode.flatMap((result) =>
      result.latestTurnAudit ? [{ name: `${result.strategy} (cut)`, audit: result.latestTurnAudit }] : [],
    ),
    ...summary.sessionMode.flatMap((result) =>
      result.latestTurnAudit ? [{ name: `${result.strategy} (session)`, audit: result.latestTurnAudit }] : [],
    ),
  ];
  if (rows.length === 0) return [];
  return [
    'latest-turn audit   plans or commits   operations   aimed at the latest turn (refused)   applied to it (should be 0)   window rescue',
    ...rows.map(
      ({ name, audit }) =>
        `  ${name.padEnd(26)} ${String(audit.plans).padStart(8)}   ${String(audit.operations).padStart(10)}   ${String(audit.refused ?? '–').padStart(8)}   ${String(audit.applied).padStart(8)}   ${audit.windowRescue ?? '–'}`,
    ),
  ];
}

export async function evalCommand(
  io: CliIo,
  files: string[],
  options: EvalOptions,
  command: string,
): Promise<number> {
  if (files.length === 0) throw new BadInputError('eval needs at least one sessions .jsonl file');
  checkOutputPaths(
    (
      [
        ['--json', options.json],
        ['--report', options.report],
        ['--markdown', options.markdown],
      ] as const
    ).flatMap(([flag, path]) => (path === undefined ? [] : [[flag, path] as const])),
    options.modelFile === undefined ? files : [...files, options.modelFile],
  );
  // Refuse an unknown name, or selfgc-llm without an endpoint, before anything runs.
  const context = endpointContext(options.llm, io.env ?? {});
  for (const name of options.strategies) strategyByName(name, context);
  const sessions = loadSessions(files, (message) => io.stderr(`${message}\n`));
  if (sessions.length === 0) throw new BadInputError(`no sessions in ${files.join(', ')}`);
  if (options.leaveOneFamilyOut) requireTwoFamilies(sessions);
  io.stderr(
    `evaluating ${sessions.length} sessions × ${options.strategies.length} strategies (${options.modes.join(' + ')} mode)\n`,
  );
  const started = Date.now();
  const summary = await runEval(sessions, {
    strategies: options.strategies,
    modes: options.modes,
    sweep: DEFAULT_SWEEP,
    window: options.window,
    cutsPerSession: options.cutsPerSession,
    inputs: files,
    command,
    ...(options.workers ? { workers: options.workers } : {}),
    ...(options.llm ? { llm: options.llm } : {}),
    ...(options.judgeSample === undefined ? {} : { judgeSample: options.judgeSample }),
    ...(options.judgePairs === undefined ? {} : { judgePairs: options.judgePairs }),
    ...(options.entryModel === undefined ? {} : { entryModel: options.entryModel }),
    onProgress: (done, total) => io.progress(done, total, 'sessions'),
  });
  if (options.leaveOneFamilyOut) {
    summary.leaveOneFamilyOut = await holdOutFamilies(
      sessions,
      {
        window: options.window,
        shippedModel: defaultEntryModel(),
        ...(options.workers ? { workers: options.workers } : {}),
        onStage: (stage) => io.stderr(`${stage}\n`),
      },
      runEval,
    );
  }
  const seconds = (Date.now() - started) / 1000;
  io.stderr(`done in ${seconds.toFixed(1)} s\n`);
  io.stdout(formatSummary(summary));
  if (options.json) {
    writeOutputFile(options.json, `${JSON.stringify(summary, null, 2)}\n`, '--json');
    io.stderr(`summary: ${options.json}\n`);
  }
  if (options.report) {
    writeOutputFile(options.report, renderReport(summary), '--report');
    io.stderr(`report: ${options.report}\n`);
  }
  if (options.markdown) {
    const runtime = `node ${process.version}, ${availableParallelism()} cores`;
    writeOutputFile(options.markdown, renderMarkdown(summary, { seconds, runtime }), '--markdown');
    io.stderr(`results: ${options.markdown}\n`);
  }
  return 0;
}
