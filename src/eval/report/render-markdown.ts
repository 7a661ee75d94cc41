/**
 * The results file of `selfgc eval --markdown`: the tables the CLI prints, as Markdown, under the
 * command, the date and the evaluation's settings, so a document can link to measured numbers
 * instead of copying them.
 */
import {
  type CutModeResult,
  type EvalSummary,
  type FamilyResult,
  lastFallbackNote,
  type PrefixBandResult,
  prefixBandLabel,
  type RareTokenResult,
  type Rate,
  type SessionModeResult,
} from '../eval-summary.js';
import { FAILURE_CATEGORIES, JUDGE_DIMENSIONS, type JudgeDimension, PASS_SCORE } from '../judge-llm.js';
import { RARE_SHARE } from '../judges/rare-token-judge.js';

export interface MarkdownOptions {
  /** How long the evaluation took, in seconds. */
  seconds?: number;
  /** Where it ran, e.g. `node v20.20.2, 2 cores`. */
  runtime?: string;
}

const percent = (value: number) => `${(value * 100).toFixed(1)}%`;
const count = (value: number) => value.toLocaleString('en-US');
const interval = (rate: Rate) => `${percent(rate.value)} [${percent(rate.low)}–${percent(rate.high)}]`;
/** The rare-token judge's two cells; dashes where it judged nothing, or the summary predates it. */
const rareTokenCells = (result: RareTokenResult | undefined) =>
  result && result.noImpact.total > 0 ? [interval(result.noImpact), result.meanScore.toFixed(3)] : ['–', '–'];

function table(headers: readonly string[], numeric: readonly boolean[], rows: readonly string[][]): string {
  const cell = (text: string) => text.replaceAll('|', '\\|');
  const line = (cells: readonly string[]) => `| ${cells.map(cell).join(' | ')} |`;
  const rule = `| ${numeric.map((right) => (right ? '---:' : '---')).join(' | ')} |`;
  return [line(headers), rule, ...rows.map(line)].join('\n');
}

function settings(summary: EvalSummary, options: MarkdownOptions): string {
  const parameters = summary.parameters;
  const cutMode = summary.cutMode[0];
  const sessionMode = summary.sessionMode[0];
  const lines = [
    `- Sessions: ${count(summary.sessions)}, from ${summary.inputs.map((input) => `\`${input}\``).join(', ')}.`,
  ];
  if (parameters)
    lines.push(`- Strategies: ${parameters.strategies.map((name) => `\`${name}\``).join(', ')}.`);
  if (cutMode) {
    const sweep = parameters ? ` and a budget sweep over keep shares ${parameters.sweep.join(', ')}` : '';
    const perSession = parameters ? ` (${parameters.cutsPerSession} per session)` : '';
    const steps = parameters
      ? `the next ${parameters.continuationSteps} assistant messages`
      : 'the continuation';
    lines.push(
      `- Cut mode: ${count(cutMode.own.cuts)} cuts${perSession}, each strategy at its own budget${sweep}; the anchor judge reads ${steps}.`,
    );
  }
  if (sessionMode)
    lines.push(
      `- Session mode: ${count(sessionMode.calls)} model calls, window ${count(sessionMode.window)} tokens; cache writes cost ${summary.pricing.cacheWrite}× and cache reads ${summary.pricing.cacheRead}× the input price.`,
    );
  if (summary.llm) {
    const judge =
      summary.llm.judgeSample === undefined
        ? ''
        : `; LLM judge on ${summary.llm.judgeSample} cuts per strategy${summary.llm.judgePairs ? `, A/B calibration on ${summary.llm.judgePairs} of them` : ''}`;
    lines.push(`- Model endpoint: ${summary.llm.provider} \`${summary.llm.model}\`${judge}.`);
  }
  const run = [
    options.seconds === undefined ? undefined : `${options.seconds.toFixed(0)} s`,
    options.runtime,
  ].filter((part) => part !== undefined);
  if (run.length > 0) lines.push(`- Run: ${run.join(', ')}.`);
  return lines.join('\n');
}

function cutModeSection(results: readonly CutModeResult[]): string {
  const rows = results.map((result) => [
    result.strategy + (result.upperBound ? ' (upper bound)' : ''),
    percent(result.own.pruneRate),
    interval(result.own.strictNoImpact),
    percent(result.own.recoverableNoImpact.value),
    percent(result.own.unrecoverableLoss.value),
    ...rareTokenCells(result.own.rareTokens),
  ]);
  return `## Cut mode, each strategy at its own budget

${table(
  [
    'strategy',
    'prune rate',
    'strict no-impact [95% CI]',
    'recoverable',
    'unrecoverable loss',
    'rare-token no-impact [95% CI]',
    'rare-token score',
  ],
  [false, true, true, true, true, true, true],
  rows,
)}`;
}

function llmJudgeSection(summary: EvalSummary): string | undefined {
  const judged = summary.cutMode.filter((result) => result.llmNoImpact !== undefined);
  if (judged.length === 0) return undefined;
  const mean = (result: CutModeResult, dimension: JudgeDimension) =>
    result.llmScorecard?.judged ? result.llmScorecard.means[dimension].toFixed(2) : '–';
  const rows = judged.map((result) => [
    result.strategy,
    `${interval(result.llmNoImpact!)} of ${result.llmNoImpact!.total}`,
    percent(result.llmAgreement?.value ?? 0),
    String(result.llmJudgeFailures ?? 0),
    ...JUDGE_DIMENSIONS.map((dimension) => mean(result, dimension)),
  ]);
  return `## LLM judge (${summary.llm?.model ?? 'model'}), sampled cuts at each strategy's own budget

A scorecard of four dimensions, each 1–5 from the view alone; a pass, the judge's no-impact, has
every dimension at ${PASS_SCORE} or more. The columns on the right are the mean scores.

${table(
  ['strategy', 'pass = no-impact [95% CI]', 'agrees with strict', 'no verdict', ...JUDGE_DIMENSIONS],
  [false, true, true, true, ...JUDGE_DIMENSIONS.map(() => true)],
  rows,
)}`;
}

function taxonomySection(summary: EvalSummary): string | undefined {
  const scored = summary.cutMode.filter((result) => result.llmScorecard !== undefined);
  if (scored.length === 0) return undefined;
  const failing = FAILURE_CATEGORIES.filter((category) => category !== 'none');
  const rows = scored.map((result) => {
    const card = result.llmScorecard!;
    const { objects, other, none, unknown } = card.culprits;
    const kinds = Object.entries(card.culpritKinds).map(([kind, times]) => `${kind} ${times}`);
    return [
      result.strategy,
      ...[...failing, 'none' as const].map((category) => String(card.failureCategories[category])),
      `${objects} / ${other} / ${none} / ${unknown}`,
      kinds.join(', ') || '–',
    ];
  });
  return `## LLM judge failure taxonomy

Failing scorecards by the category of loss the judge gave, and by culprit: objects the view
changed / other / none / ids the view did not change.

${table(
  ['strategy', ...failing, 'no category', 'culprits', 'blamed kinds'],
  [false, ...failing.map(() => true), true, true, false],
  rows,
)}`;
}

function calibrationSection(summary: EvalSummary): string | undefined {
  const calibrated = summary.cutMode.filter((result) => result.llmCalibration !== undefined);
  if (calibrated.length === 0) return undefined;
  const rows = calibrated.map((result) => {
    const calibration = result.llmCalibration!;
    const { governed, full, tie } = calibration.consistent;
    return [
      result.strategy,
      String(calibration.pairs),
      `${interval(calibration.flips)} of ${calibration.flips.total}`,
      `${percent(calibration.slotA.value)} of ${calibration.slotA.total}`,
      `${governed} / ${full} / ${tie}`,
      `${percent(calibration.agreement.value)} of ${calibration.agreement.total}`,
      String(calibration.failures),
    ];
  });
  return `## LLM judge A/B calibration

The model writes the next step from the full prefix and from the view; the judge compares the two
in both orders. A flip is a verdict that changes with the order (position bias); a verdict that
holds agrees with the scorecard when "the view's step is not worse" goes with a pass.

${table(
  [
    'strategy',
    'pairs',
    'flips with order [95% CI]',
    'slot A chosen',
    'same verdict: view / full / tie',
    'agrees with scorecard',
    'failed',
  ],
  [false, true, true, true, true, true, true],
  rows,
)}`;
}

function auditSection(summary: EvalSummary): string | undefined {
  const rows = [
    ...summary.cutMode.map((result) => ({
      name: result.strategy,
      mode: 'cut',
      audit: result.latestTurnAudit,
    })),
    ...summary.sessionMode.map((result) => ({
      name: result.strategy,
      mode: 'session',
      audit: result.latestTurnAudit,
    })),
  ].flatMap(({ name, mode, audit }) =>
    audit
      ? [
          [
            name,
            mode,
            count(audit.plans),
            count(audit.operations),
            audit.refused === undefined ? '–' : count(audit.refused),
            count(audit.applied),
            audit.windowRescue === undefined ? '–' : count(audit.windowRescue),
          ],
        ]
      : [],
  );
  if (rows.length === 0) return undefined;
  return `## Latest-turn audit

Plan operations aimed at the latest turn (the harness refuses them), and operations in effect on it, which should be none. Cut mode counts plans, session mode commits; the governor's window rescue (the latest turn alone over the window) is counted apart.

${table(
  [
    'strategy',
    'mode',
    'plans or commits',
    'operations',
    'aimed at the latest turn (refused)',
    'applied to it',
    'window rescue',
  ],
  [false, false, true, true, true, true, true],
  rows,
)}`;
}

/** Only the strategies and rates a sweep reaches: a column or row of dashes says nothing. */
function matchedSection(summary: EvalSummary): string | undefined {
  const strategies = summary.cutMode
    .map((result) => result.strategy)
    .filter((name) => summary.matched.some((row) => row.strictNoImpact[name] != null));
  const rows = summary.matched.filter((row) => strategies.some((name) => row.strictNoImpact[name] != null));
  if (rows.length === 0) return undefined;
  const value = (rate: number | null | undefined) => (rate == null ? '–' : percent(rate));
  return `## Strict no-impact at matched prune rates

Interpolated on each strategy's budget sweep; – where a sweep does not reach.

${table(
  ['prune rate', ...strategies],
  [true, ...strategies.map(() => true)],
  rows.map((row) => [percent(row.pruneRate), ...strategies.map((name) => value(row.strictNoImpact[name]))]),
)}`;
}

function sessionModeSection(results: readonly SessionModeResult[]): string {
  const rows = results.map((result) => [
    result.strategy,
    percent(result.inputTokens / Math.max(1, result.baselineInputTokens)),
    count(result.overWindowCalls),
    percent(result.cacheHitRate),
    result.costRelative.toFixed(3),
    count(result.commits),
    `${percent(result.strictNoImpactChanged.value)} of ${count(result.strictNoImpactChanged.total)}`,
    ...rareTokenCells(result.rareTokensChanged),
  ]);
  return `## Session mode, window ${count(results[0]!.window)}

Cost under cache pricing, relative to no governance.

${table(
  [
    'strategy',
    'input tokens vs none',
    'over-window calls',
    'cache hit rate',
    'cost vs none',
    'commits',
    'strict no-impact on changed calls',
    'rare-token no-impact [95% CI]',
    'rare-token score',
  ],
  [false, true, true, true, true, true, true, true, true],
  rows,
)}`;
}

/** Session mode by family: strict no-impact on changed calls, and cost, of each strategy in each family. */
function familiesSection(results: readonly SessionModeResult[]): string | undefined {
  const families = [
    ...new Set(results.flatMap((result) => (result.families ?? []).map((row) => row.family))),
  ];
  if (families.length === 0) return undefined;
  const cell = (result: SessionModeResult, family: string) => {
    const row = result.families?.find((entry) => entry.family === family);
    if (!row) return '–';
    const strict = row.strictNoImpactChanged.total > 0 ? percent(row.strictNoImpactChanged.value) : '–';
    const over = row.overWindowCalls > 0 ? ` · ${count(row.overWindowCalls)} over` : '';
    return `${strict} · ${row.costRelative.toFixed(3)}${over}`;
  };
  const sizes = results[0]?.families ?? [];
  return `## Session mode by family

Each input file is a family. Per cell: strict no-impact on the calls the strategy changed, cost
relative to no governance on the same family, and the calls over the window, if any.

${table(
  [
    'strategy',
    ...families.map((family) => {
      const size = sizes.find((row) => row.family === family);
      return size ? `${family} (${count(size.sessions)} sessions)` : family;
    }),
  ],
  [false, ...families.map(() => true)],
  results.map((result) => [result.strategy, ...families.map((family) => cell(result, family))]),
)}`;
}

/** Session mode by prefix length: each strategy's judges on its judged calls, band by band. */
function prefixBandsSection(results: readonly SessionModeResult[]): string | undefined {
  const banded = results.flatMap((result) =>
    result.prefixBands ? [{ strategy: result.strategy, bands: result.prefixBands }] : [],
  );
  const columns = banded[0]?.bands;
  if (columns === undefined) return undefined;
  const strict = (band: PrefixBandResult) =>
    band.strictNoImpactChanged.total > 0
      ? `${interval(band.strictNoImpactChanged)} of ${count(band.strictNoImpactChanged.total)}`
      : '–';
  const rare = (band: PrefixBandResult) =>
    band.rareTokensChanged.noImpact.total > 0 ? interval(band.rareTokensChanged.noImpact) : '–';
  return `## Session mode by prefix length

Each call falls in a band by its prefix (all the session holds at the call) over the window of
${count(results[0]!.window)} tokens; a band's heading gives its calls. Per cell: strict no-impact on the calls the
strategy changed [95% CI], of how many were judged; then the rare-token judge on the same calls.
Strategies that changed no call are left out.

${table(
  [
    'strategy',
    ...columns.map((band) => `${prefixBandLabel(band)} (${count(band.calls)} calls)`),
    ...columns.map((band) => `rare-token, ${prefixBandLabel(band)}`),
  ],
  [false, ...columns.map(() => true), ...columns.map(() => true)],
  banded.map(({ strategy, bands }) => [strategy, ...bands.map(strict), ...bands.map(rare)]),
)}`;
}

/** Where the anchors each strategy's views missed last stood. */
function missingSection(results: readonly SessionModeResult[]): string | undefined {
  const rows = results.flatMap((result) =>
    result.missingAnchors && result.missingAnchors.total > 0
      ? [{ result, sources: result.missingAnchors }]
      : [],
  );
  if (rows.length === 0) return undefined;
  return `## Where the missed anchors were

Session mode, the judged calls that failed: each anchor the view missed, counted once per call, by
the message that last held it: who wrote it, how many assistant steps before the call, and what
the strategy had done to it (pruned to a tombstone, folded into an index, masked, or removed
without an operation of its own). "In the latest fold": the message sat in the fold of the
request whose folded messages reach furthest (usually the work of the current request), not in
work the agent left earlier. Shares of the strategy's missed anchors.

${table(
  [
    'strategy',
    'missed anchors',
    'agent',
    'tool',
    'user',
    'system',
    '0–3 steps back',
    '4–12',
    '13+',
    'pruned',
    'folded',
    'masked',
    'removed',
    'in the latest fold',
  ],
  [false, true, true, true, true, true, true, true, true, true, true, true, true, true],
  rows.map(({ result, sources }) => {
    const share = (value: number) => percent(value / sources.total);
    return [
      result.strategy,
      count(sources.total),
      ...[sources.byRole.agent, sources.byRole.tool, sources.byRole.user, sources.byRole.system].map(share),
      ...[sources.bySteps.latest, sources.bySteps.middle, sources.bySteps.old].map(share),
      ...[
        sources.byRemoval.pruned,
        sources.byRemoval.folded,
        sources.byRemoval.masked,
        sources.byRemoval.removed,
        sources.inLatestFold,
      ].map(share),
    ];
  }),
)}`;
}

/** Each family replayed with a valuator fitted without it, next to the shipped one. */
function holdOutSection(summary: EvalSummary): string | undefined {
  const rows = summary.leaveOneFamilyOut;
  if (rows === undefined || rows.length === 0) return undefined;
  const strict = (result: FamilyResult) =>
    result.strictNoImpactChanged.total > 0
      ? `${interval(result.strictNoImpactChanged)} of ${count(result.strictNoImpactChanged.total)}`
      : '–';
  const points = (from: FamilyResult, to: FamilyResult) =>
    from.strictNoImpactChanged.total > 0 && to.strictNoImpactChanged.total > 0
      ? ((from.strictNoImpactChanged.value - to.strictNoImpactChanged.value) * 100).toFixed(1)
      : '–';
  return `## Leave one family out

\`selfgc\` in session mode on each family, with the valuator's model fitted on the other families
(held out), with the shipped model, and without a model (\`--model none\`: each message's anchors
in the extractor's kind order). Differences are in points of strict no-impact on changed calls:
held out less shipped, and shipped less no model (what the model adds); "shipped model saw it" says
whether the shipped model was fitted with the family.

${table(
  [
    'family',
    'sessions',
    'held out: strict no-impact [95% CI]',
    'held out: cost vs none',
    'shipped: strict no-impact [95% CI]',
    'shipped: cost vs none',
    'difference (points)',
    'no model: strict no-impact [95% CI]',
    'shipped less no model (points)',
    'over-window (held out / shipped / no model)',
    'shipped model saw it',
    'training examples',
  ],
  [false, true, true, true, true, true, true, true, true, true, false, true],
  rows.map((row) => [
    row.family,
    count(row.heldOut.sessions),
    strict(row.heldOut),
    row.heldOut.costRelative.toFixed(3),
    strict(row.shipped),
    row.shipped.costRelative.toFixed(3),
    points(row.heldOut, row.shipped),
    strict(row.withoutModel),
    points(row.shipped, row.withoutModel),
    `${count(row.heldOut.overWindowCalls)} / ${count(row.shipped.overWindowCalls)} / ${count(row.withoutModel.overWindowCalls)}`,
    row.shippedModelSawFamily ? 'yes' : 'no',
    count(row.trainingExamples),
  ]),
)}`;
}

function fallbackNotes(summary: EvalSummary): string | undefined {
  const notes = [
    ...summary.cutMode
      .filter((result) => result.llmPlannerFallbacks)
      .map(
        (result) =>
          `- cut mode, ${result.strategy}: the LLM planner failed for ${result.llmPlannerFallbacks} plan(s); the embedded planner stood in${lastFallbackNote(result)}.`,
      ),
    ...summary.sessionMode
      .filter((result) => result.llmPlannerFallbacks)
      .map(
        (result) =>
          `- session mode, ${result.strategy}: the LLM planner failed at ${result.llmPlannerFallbacks} call(s); the embedded planner stood in${lastFallbackNote(result)}.`,
      ),
  ];
  return notes.length === 0 ? undefined : `## Planner fallbacks\n\n${notes.join('\n')}`;
}

const READING = `## Reading the tables

- **Prune rate**: 1 − view tokens / prefix tokens, averaged over cuts.
- **Strict no-impact** (the anchor judge): every anchor the continuation uses that also appears
  in the prefix is visible in the view. **Recoverable**: each is visible or inside removed content
  whose recovery pointer is visible. **Unrecoverable loss**: a needed anchor is neither, though a
  fold or mask removed it. Rates carry Wilson 95% intervals.
- **Rare-token no-impact** (a second judge, sharing no code with the first): every token the
  continuation writes that few prefix messages hold (at most ${RARE_SHARE * 100}%, at least one) and that is no
  common word of general language is still visible in the view; recovery pointers do not count.
  **Rare-token score**: the idf-weighted share of those tokens visible, averaged over views.
- **Session mode**: one model call per assistant message under the window, state carried from
  call to call; strict no-impact is over the calls whose view differs from the full transcript.
  \`+sticky\` is a baseline's cache-friendly form, which edits again only when the window forces it.`;

export function renderMarkdown(summary: EvalSummary, options: MarkdownOptions = {}): string {
  const sections = [
    `# Self-GC evaluation results

Written by \`selfgc eval\` at ${summary.createdAt.slice(0, 16).replace('T', ' ')} UTC:

\`\`\`sh
${summary.command}
\`\`\``,
    settings(summary, options),
    summary.cutMode.length > 0 ? cutModeSection(summary.cutMode) : undefined,
    llmJudgeSection(summary),
    taxonomySection(summary),
    calibrationSection(summary),
    summary.cutMode.length > 0 ? matchedSection(summary) : undefined,
    summary.sessionMode.length > 0 ? sessionModeSection(summary.sessionMode) : undefined,
    familiesSection(summary.sessionMode),
    prefixBandsSection(summary.sessionMode),
    missingSection(summary.sessionMode),
    holdOutSection(summary),
    fallbackNotes(summary),
    auditSection(summary),
    READING,
  ];
  return `${sections.filter((section) => section !== undefined).join('\n\n')}\n`;
}
