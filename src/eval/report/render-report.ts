/**
 * The visual report of `selfgc eval`: one self-contained HTML file (inline CSS and SVG, no
 * scripts, no fonts, nothing fetched) drawn from an `EvalSummary`.
 */

import { BadInputError } from '../../core/errors.js';
import {
  type CutModeResult,
  type CutPoint,
  EVAL_SUMMARY_VERSION,
  type EvalSummary,
  type FamilyResult,
  prefixBandLabel,
  type RareTokenResult,
  type Rate,
  type SessionModeResult,
} from '../eval-summary.js';
import { renderJudgeProtocol, renderLatestTurnAudit } from './render-judge.js';
import {
  assignStyles,
  coordinate,
  escapeHtml,
  formatPercent,
  formatTokens,
  linearScale,
  niceTicks,
  type PlotArea,
  REPORT_CSS,
  renderAxes,
  renderRate,
  type StrategyStyle,
} from './svg.js';

/** At most this many sessions get a timeline; the longest are shown. */
export const MAX_TIMELINES = 12;

type Styles = Map<string, StrategyStyle>;

export function renderReport(summary: EvalSummary): string {
  if (summary.version !== EVAL_SUMMARY_VERSION) {
    throw new BadInputError(
      `eval summary version ${summary.version} is not supported (expected ${EVAL_SUMMARY_VERSION})`,
    );
  }
  const styles = assignStyles([
    ...summary.cutMode.map((result) => ({ name: result.strategy, upperBound: result.upperBound })),
    ...summary.sessionMode.map((result) => ({ name: result.strategy, upperBound: false })),
  ]);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Self-GC evaluation report</title>
<style>${REPORT_CSS}</style>
</head>
<body>
${renderHeader(summary)}
<section id="cut-mode">
<h2>Cut mode: counterfactual replay at cut points</h2>
${renderCutMode(summary, styles)}
</section>
<section id="session-mode">
<h2>Session mode: the governor through whole sessions</h2>
${renderSessionMode(summary.sessionMode, styles)}
</section>
${familiesSection(summary)}
${prefixBandsSection(summary)}
${auditSection(summary)}
<footer>Costs under cache pricing: cache write ${summary.pricing.cacheWrite}×, cache read ${summary.pricing.cacheRead}× the input price.
Intervals are Wilson 95%. Strategies see only the prefix before each cut; an upper bound sees the continuation.
Two judges read each view: the anchor judge (strict, recoverable) and the rare-token judge, which shares no code with it: tokens the continuation writes that few earlier messages hold and that are no common word must stay visible; its score is the idf-weighted share that does.</footer>
</body>
</html>
`;
}

/** Session mode by family, and each family held out from the valuator's fit, when the run has them. */
function familiesSection(summary: EvalSummary): string {
  const families = [
    ...new Set(summary.sessionMode.flatMap((result) => (result.families ?? []).map((row) => row.family))),
  ];
  const holdOut = summary.leaveOneFamilyOut ?? [];
  if (families.length === 0 && holdOut.length === 0) return '';
  const cell = (row: FamilyResult | undefined) =>
    row === undefined
      ? '<td>\u2014</td>'
      : `<td>${row.strictNoImpactChanged.total > 0 ? renderRate(row.strictNoImpactChanged) : '\u2014'} <span class="muted">${row.costRelative.toFixed(3)}×${row.overWindowCalls > 0 ? `, ${row.overWindowCalls} over` : ''}</span></td>`;
  const byFamily =
    families.length === 0
      ? ''
      : `<table class="results" data-table="session-families">
<caption>Session mode by family (each input file): strict no-impact on changed calls, cost vs none, calls over the window</caption>
<thead><tr><th scope="col">Strategy</th>${families.map((family) => `<th scope="col">${escapeHtml(family)}</th>`).join('')}</tr></thead>
<tbody>${summary.sessionMode
          .map(
            (result) =>
              `<tr data-strategy="${escapeHtml(result.strategy)}"><th scope="row">${escapeHtml(result.strategy)}</th>${families
                .map((family) => cell(result.families?.find((row) => row.family === family)))
                .join('')}</tr>`,
          )
          .join('')}</tbody></table>`;
  const heldOut =
    holdOut.length === 0
      ? ''
      : `<table class="results" data-table="leave-one-family-out">
<caption>Leave one family out: selfgc with the valuator fitted without the family, with the shipped model, and without a model</caption>
<thead><tr><th scope="col">Family</th><th scope="col">Held out</th><th scope="col">Shipped model</th><th scope="col">No model</th><th scope="col">Shipped model saw it</th></tr></thead>
<tbody>${holdOut
          .map(
            (row) =>
              `<tr data-family="${escapeHtml(row.family)}"><th scope="row">${escapeHtml(row.family)}</th>${cell(row.heldOut)}${cell(row.shipped)}${cell(row.withoutModel)}<td>${row.shippedModelSawFamily ? 'yes' : 'no'}</td></tr>`,
          )
          .join('')}</tbody></table>`;
  return `<section id="families">\n<h2>By family</h2>\n${byFamily}\n${heldOut}\n</section>`;
}

/** Session mode by prefix length in windows, for the strategies with judged calls. */
function prefixBandsSection(summary: EvalSummary): string {
  const banded = summary.sessionMode.flatMap((result) =>
    result.prefixBands ? [{ strategy: result.strategy, bands: result.prefixBands }] : [],
  );
  const columns = banded[0]?.bands;
  if (columns === undefined) return '';
  const labels = columns.map((band) => escapeHtml(prefixBandLabel(band)));
  const rows = banded.map(
    ({ strategy, bands }) =>
      `<tr data-strategy="${escapeHtml(strategy)}"><th scope="row">${escapeHtml(strategy)}</th>${bands
        .map(
          (band) =>
            `<td data-column="strict">${renderRate(band.strictNoImpactChanged)}${band.strictNoImpactChanged.total > 0 ? ` <span class="muted">of ${band.strictNoImpactChanged.total}</span>` : ''}</td>`,
        )
        .join('')}${bands
        .map((band) => `<td data-column="rare-token">${renderRate(band.rareTokensChanged.noImpact)}</td>`)
        .join('')}</tr>`,
  );
  return `<section id="prefix-bands">
<h2>By prefix length</h2>
<table class="results" data-table="session-prefix-bands">
<caption>Session mode by the prefix each call had (all the session held) over the window of ${formatTokens(summary.sessionMode[0]!.window)} tokens: strict no-impact on changed calls, of the calls judged, then the rare-token judge on the same calls</caption>
<thead><tr><th scope="col">Strategy</th>${columns.map((band, index) => `<th scope="col">${labels[index]} <span class="muted">(${band.calls} calls)</span></th>`).join('')}${labels.map((label) => `<th scope="col">Rare-token, ${label}</th>`).join('')}</tr></thead>
<tbody>${rows.join('')}</tbody></table>
</section>`;
}

function auditSection(summary: EvalSummary): string {
  const audit = renderLatestTurnAudit(summary);
  return audit === ''
    ? ''
    : `<section id="latest-turn-audit">\n<h2>Latest-turn audit</h2>\n${audit}\n</section>`;
}

function renderHeader(summary: EvalSummary): string {
  const inputs = summary.inputs.length
    ? `<ul class="inputs">${summary.inputs.map((input) => `<li><code>${escapeHtml(input)}</code></li>`).join('')}</ul>`
    : '<span class="muted">none recorded</span>';
  return `<header>
<h1>Self-GC evaluation report</h1>
<dl class="facts">
<dt>Sessions</dt><dd data-fact="sessions">${summary.sessions}</dd>
<dt>Date</dt><dd><time datetime="${escapeHtml(summary.createdAt)}">${escapeHtml(summary.createdAt)}</time></dd>
<dt>Command</dt><dd><code>${escapeHtml(summary.command)}</code></dd>
<dt>Inputs</dt><dd>${inputs}</dd>
</dl>
</header>`;
}

function styleOf(styles: Styles, strategy: string): StrategyStyle {
  return styles.get(strategy) ?? { colour: '#000000', dash: '' };
}

function noData(text: string): string {
  return `<p class="no-data">${escapeHtml(text)}</p>`;
}

/** A rate with no trials, drawn as a dash. */
const NO_TRIALS: Rate = { hits: 0, total: 0, value: 0, low: 0, high: 0 };

/** The rare-token judge's pass rate and mean score, as two cells; dashes for a summary written before it. */
function rareTokenCells(result: RareTokenResult | undefined): string {
  if (!result)
    return '<td data-column="rare-token">\u2014</td><td data-column="rare-token-score">\u2014</td>';
  const score = result.noImpact.total === 0 ? '\u2014' : result.meanScore.toFixed(3);
  return `<td data-column="rare-token">${renderRate(result.noImpact)}</td><td data-column="rare-token-score">${score}</td>`;
}

function strategyCell(name: string, styles: Styles, upperBound = false): string {
  const style = styles.get(name);
  const swatch = style ? lineSample(style) : '';
  const note = upperBound ? ' <span class="muted">(upper bound)</span>' : '';
  return `<th scope="row">${swatch}${escapeHtml(name)}${note}</th>`;
}

function lineSample(style: StrategyStyle): string {
  return `<svg class="swatch" width="28" height="10" aria-hidden="true"><line x1="1" x2="27" y1="5" y2="5" stroke="${style.colour}" stroke-width="2.5" stroke-dasharray="${style.dash}"/></svg>`;
}

function renderCutMode(summary: EvalSummary, styles: Styles): string {
  if (summary.cutMode.length === 0) return noData('No cut-mode results in this summary.');
  // The LLM judge's column appears only when the summary has its verdicts (`--judge llm`).
  const llmJudged = summary.cutMode.some((result) => result.llmNoImpact !== undefined);
  const llmCell = (rate: Rate | undefined) =>
    llmJudged ? `<td data-column="llm-no-impact">${renderRate(rate ?? NO_TRIALS)}</td>` : '';
  const rows = summary.cutMode.map(
    ({ strategy, upperBound, own, llmNoImpact }) => `<tr data-strategy="${escapeHtml(strategy)}">
${strategyCell(strategy, styles, upperBound)}<td>${formatPercent(own.pruneRate)}</td><td>${renderRate(own.strictNoImpact)}</td>
<td>${renderRate(own.recoverableNoImpact)}</td><td>${renderRate(own.unrecoverableLoss)}</td>${rareTokenCells(own.rareTokens)}${llmCell(llmNoImpact)}<td>${own.cuts}</td></tr>`,
  );
  const llmHead = llmJudged
    ? `<th scope="col">LLM judge no-impact <span class="muted">(${escapeHtml(summary.llm?.model ?? 'model')}, sampled cuts)</span></th>`
    : '';
  return `<table class="results" data-table="cut-mode">
<caption>Each strategy at its own budget</caption>
<thead><tr><th scope="col">Strategy</th><th scope="col">Prune rate</th><th scope="col">Strict no-impact</th>
<th scope="col">Recoverable no-impact</th><th scope="col">Unrecoverable loss</th>
<th scope="col">Rare-token no-impact</th><th scope="col">Rare-token score</th>${llmHead}<th scope="col">Cuts</th></tr></thead>
<tbody>${rows.join('')}</tbody>
</table>
${renderJudgeProtocol(summary)}
<figure>${renderTradeoffChart(summary.cutMode, styles)}
<figcaption>Each line is a strategy's budget sweep; the ringed marker is its own budget, with its Wilson 95% interval. Up and to the right is better.</figcaption></figure>
${renderMatched(summary)}`;
}

function renderMatched(summary: EvalSummary): string {
  if (summary.matched.length === 0) return noData('No matched prune-rate comparison in this summary.');
  const names = summary.cutMode.map((result) => result.strategy);
  const head = names.map((name) => `<th scope="col">${escapeHtml(name)}</th>`).join('');
  const rows = summary.matched.map(({ pruneRate, strictNoImpact }) => {
    const cells = names.map((name) => {
      const value = strictNoImpact[name];
      return `<td>${value === null || value === undefined ? '\u2014' : formatPercent(value)}</td>`;
    });
    return `<tr><th scope="row">${formatPercent(pruneRate, 0)}</th>${cells.join('')}</tr>`;
  });
  return `<table class="results" data-table="matched">
<caption>Strict no-impact at matched prune rates (interpolated from the sweeps; \u2014 outside a sweep's range)</caption>
<thead><tr><th scope="col">Prune rate</th>${head}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

const TRADEOFF: PlotArea = { width: 770, height: 440, left: 60, right: 200, top: 20, bottom: 46 };

function renderTradeoffChart(results: CutModeResult[], styles: Styles): string {
  const area = TRADEOFF;
  const x = linearScale([0, 1], [area.left, area.width - area.right]);
  const y = linearScale([0, 1], [area.height - area.bottom, area.top]);
  const ticks = [0, 0.2, 0.4, 0.6, 0.8, 1];
  const axes = renderAxes(
    area,
    {
      scale: x,
      ticks,
      format: (value) => formatPercent(value, 0),
      title: 'Prune rate (share of prefix tokens removed)',
    },
    { scale: y, ticks, format: (value) => formatPercent(value, 0), title: 'Strict no-impact' },
  );
  const series = results.map((result) => {
    const style = styleOf(styles, result.strategy);
    const name = escapeHtml(result.strategy);
    const sweep = [...result.sweep].sort((a, b) => a.pruneRate - b.pruneRate);
    const placed = sweep.map((point) => ({
      point,
      cx: coordinate(x(point.pruneRate)),
      cy: coordinate(y(point.strictNoImpact.value)),
    }));
    const points = placed.map(({ cx, cy }) => `${cx},${cy}`);
    const dots = placed
      .map(
        ({ point, cx, cy }) =>
          `<circle r="2.5" cx="${cx}" cy="${cy}" fill="${style.colour}"><title>${name} keep ${point.keep}: ${pointText(point)}</title></circle>`,
      )
      .join('');
    const line = points.length
      ? `<polyline data-strategy="${name}" data-points="${points.length}" points="${points.join(' ')}" fill="none" stroke="${style.colour}" stroke-width="${result.strategy === 'selfgc' ? 3 : 2}" stroke-dasharray="${style.dash}"/>`
      : '';
    const last = sweep.at(-1);
    const label =
      result.upperBound && last
        ? `<text class="bound-label" data-label="upper-bound" x="${coordinate(x(last.pruneRate) + 8)}" y="${coordinate(y(last.strictNoImpact.value))}" dominant-baseline="middle" fill="${style.colour}">upper bound</text>`
        : '';
    return `<g data-series="${name}">${line}${dots}${renderOwn(result, style, x, y)}${label}</g>`;
  });
  const legend = results.map((result, index) => {
    const style = styleOf(styles, result.strategy);
    const ly = area.top + 8 + index * 20;
    const lx = area.width - area.right + 18;
    const suffix = result.upperBound ? ' (upper bound)' : '';
    return `<g data-legend="${escapeHtml(result.strategy)}"><line x1="${lx}" x2="${lx + 30}" y1="${ly}" y2="${ly}" stroke="${style.colour}" stroke-width="2.5" stroke-dasharray="${style.dash}"/>
<text x="${lx + 36}" y="${ly}" dominant-baseline="middle">${escapeHtml(result.strategy + suffix)}</text></g>`;
  });
  return `<svg data-chart="tradeoff" viewBox="0 0 ${area.width} ${area.height}" role="img" aria-labelledby="tradeoff-title">
<title id="tradeoff-title">No-impact vs prune rate, one line per strategy</title>
${axes}${series.join('')}<g class="legend">${legend.join('')}</g></svg>`;
}

function pointText(point: CutPoint): string {
  const rate = point.strictNoImpact;
  return `prune ${formatPercent(point.pruneRate)}, strict no-impact ${formatPercent(rate.value)} [${formatPercent(rate.low)}, ${formatPercent(rate.high)}], ${point.cuts} cuts`;
}

function renderOwn(
  result: CutModeResult,
  style: StrategyStyle,
  x: (value: number) => number,
  y: (value: number) => number,
): string {
  const { own } = result;
  const cx = coordinate(x(own.pruneRate));
  return `<g data-own="${escapeHtml(result.strategy)}">
<line x1="${cx}" x2="${cx}" y1="${coordinate(y(own.strictNoImpact.low))}" y2="${coordinate(y(own.strictNoImpact.high))}" stroke="${style.colour}" stroke-width="1.5"/>
<circle r="6" cx="${cx}" cy="${coordinate(y(own.strictNoImpact.value))}" fill="#fff" stroke="${style.colour}" stroke-width="2.5">
<title>${escapeHtml(result.strategy)} at its own budget: ${pointText(own)}</title></circle></g>`;
}

function renderSessionMode(results: SessionModeResult[], styles: Styles): string {
  if (results.length === 0) return noData('No session-mode results in this summary.');
  const rows = results.map((result) => {
    const ratio =
      result.baselineInputTokens > 0 ? result.inputTokens / result.baselineInputTokens - 1 : Number.NaN;
    const sign = ratio > 0 ? '+' : ratio < 0 ? '\u2212' : '';
    return `<tr data-strategy="${escapeHtml(result.strategy)}">${strategyCell(result.strategy, styles)}
<td>${formatTokens(result.window)}</td><td>${result.calls}</td>
<td>${formatTokens(result.inputTokens)} <span class="muted">(${sign}${formatPercent(Math.abs(ratio))})</span></td>
<td>${result.overWindowCalls}</td><td>${formatPercent(result.cacheHitRate)}</td>
<td>${Number.isFinite(result.costRelative) ? `${result.costRelative.toFixed(3)}×` : '\u2014'}</td><td>${result.commits}</td>
<td>${renderRate(result.strictNoImpactChanged)}</td><td>${renderRate(result.recoverableNoImpactChanged)}</td>${rareTokenCells(result.rareTokensChanged)}</tr>`;
  });
  return `<table class="results" data-table="session-mode">
<caption>Whole sessions under a window (input tokens relative to no governance)</caption>
<thead><tr><th scope="col">Strategy</th><th scope="col">Window</th><th scope="col">Calls</th><th scope="col">Input tokens vs none</th>
<th scope="col">Over-window calls</th><th scope="col">Cache hit rate</th><th scope="col">Cost vs none</th><th scope="col">Commits</th>
<th scope="col">Strict no-impact (changed calls)</th><th scope="col">Recoverable no-impact (changed calls)</th>
<th scope="col">Rare-token no-impact (changed calls)</th><th scope="col">Rare-token score</th></tr></thead>
<tbody>${rows.join('')}</tbody></table>
<figure>${renderCostChart(results, styles)}
<figcaption>Cost of all model calls under cache pricing, relative to no governance (the dashed line at 1.0). Lower is better.</figcaption></figure>
${renderTimelines(results, styles)}`;
}

// Room below the bars for strategy names set at a slant (`last-5-observations+sticky` is long).
const COST: PlotArea = { width: 760, height: 400, left: 60, right: 20, top: 24, bottom: 146 };

function renderCostChart(results: SessionModeResult[], styles: Styles): string {
  const area = COST;
  const values = results.map((result) =>
    Number.isFinite(result.costRelative) ? Math.max(0, result.costRelative) : 0,
  );
  const ticks = niceTicks(Math.max(1.1, ...values) * 1.08, 5);
  const top = ticks.at(-1) ?? 1;
  const y = linearScale([0, top], [area.height - area.bottom, area.top]);
  const slot = (area.width - area.left - area.right) / results.length;
  const barWidth = Math.min(72, slot * 0.6);
  const x = linearScale([0, results.length], [area.left, area.width - area.right]);
  const bars = results.map((result, index) => {
    const value = values[index] ?? 0;
    const style = styleOf(styles, result.strategy);
    const name = escapeHtml(result.strategy);
    const centre = x(index + 0.5);
    const barTop = y(value);
    // A label just under the 1.0 reference line would be crossed by it: lift it above the line.
    const labelY = barTop > y(1) && barTop - y(1) < 18 ? y(1) : barTop;
    return `<g><rect data-bar="${name}" data-value="${value}" x="${coordinate(centre - barWidth / 2)}" y="${coordinate(barTop)}" width="${coordinate(barWidth)}" height="${coordinate(y(0) - barTop)}" fill="${style.colour}" stroke="#222" stroke-width="1" stroke-dasharray="${style.dash}">
<title>${name}: cost ${value.toFixed(3)}× none</title></rect>
<text class="bar-value" x="${coordinate(centre)}" y="${coordinate(labelY - 6)}" text-anchor="middle">${value.toFixed(2)}×</text>
<text class="tick" data-bar-label="${name}" transform="translate(${coordinate(centre + 4)} ${area.height - area.bottom + 12}) rotate(-40)" text-anchor="end">${name}</text></g>`;
  });
  const axes = renderAxes(
    area,
    { scale: x, ticks: [], format: String, title: 'Strategy' },
    { scale: y, ticks, format: (value) => `${value.toFixed(1)}×`, title: 'Cost relative to none' },
  );
  const reference = `<line class="reference" data-reference="1" x1="${area.left}" x2="${area.width - area.right}" y1="${coordinate(y(1))}" y2="${coordinate(y(1))}"/>`;
  return `<svg data-chart="cost" viewBox="0 0 ${area.width} ${area.height}" role="img" aria-labelledby="cost-title">
<title id="cost-title">Cost relative to none, per strategy</title>${axes}${reference}${bars.join('')}</svg>`;
}

function renderTimelines(results: SessionModeResult[], styles: Styles): string {
  const chosen = results.find((result) => result.strategy === 'selfgc') ?? results[0];
  if (!chosen) return '';
  const timelines = chosen.timelines
    .filter((timeline) => timeline.viewTokens.length > 0)
    .sort((a, b) => b.viewTokens.length - a.viewTokens.length)
    .slice(0, MAX_TIMELINES);
  const heading = `<h3>Token timelines: <code>${escapeHtml(chosen.strategy)}</code>${
    chosen.timelines.length > timelines.length
      ? ` (the ${timelines.length} longest of ${chosen.timelines.length} sessions)`
      : ''
  }</h3>`;
  if (timelines.length === 0) return `${heading}${noData('No session timelines in this summary.')}`;
  const style = styleOf(styles, chosen.strategy);
  const legend = `<p class="timeline-legend">${lineSample(style)} view tokens per call
${lineSample({ colour: '#9a9a9a', dash: '' })} transcript tokens ${lineSample({ colour: '#c0392b', dash: '6 4' })} window
<svg class="swatch" width="14" height="12" aria-hidden="true"><path d="M7 2 L12 11 L2 11 Z" fill="#c0392b"/></svg> commit</p>`;
  const charts = timelines.map((timeline) => renderTimeline(timeline, chosen.window, style));
  return `${heading}${legend}<div class="timelines">${charts.join('')}</div>`;
}

const TIMELINE: PlotArea = { width: 340, height: 180, left: 40, right: 10, top: 26, bottom: 38 };

function renderTimeline(
  timeline: SessionModeResult['timelines'][number],
  window: number,
  style: StrategyStyle,
): string {
  const area = TIMELINE;
  const calls = timeline.viewTokens.length;
  const commitCount = timeline.commitCalls.length;
  const ticks = niceTicks(Math.max(window, ...timeline.transcriptTokens, ...timeline.viewTokens) * 1.05, 4);
  const y = linearScale([0, ticks.at(-1) ?? 1], [area.height - area.bottom, area.top]);
  // Calls are numbered from 1 on the axis; `index` is the 0-based position in the arrays.
  const x = linearScale([1, Math.max(2, calls)], [area.left, area.width - area.right]);
  const path = (values: number[]): string =>
    values.map((value, index) => `${coordinate(x(index + 1))},${coordinate(y(value))}`).join(' ');
  const xTicks = [1, ...niceTicks(calls, 4).filter((tick) => tick > 1 && tick <= calls)];
  const axes = renderAxes(
    area,
    {
      scale: x,
      ticks: xTicks,
      format: String,
      title: `model call (${counted(calls, 'call')}, ${counted(commitCount, 'commit')})`,
    },
    { scale: y, ticks, format: formatTokens, title: '' },
  );
  const session = escapeHtml(timeline.session);
  const shown = escapeHtml(
    timeline.session.length > 40 ? `${timeline.session.slice(0, 39)}\u2026` : timeline.session,
  );
  const windowY = coordinate(y(window));
  const commits = timeline.commitCalls
    .filter((call) => call >= 0 && call < calls)
    .map((call) => {
      const cx = x(call + 1);
      const base = area.height - area.bottom;
      return `<path data-commit="${call}" d="M${coordinate(cx)} ${base - 8} L${coordinate(cx + 4)} ${base} L${coordinate(cx - 4)} ${base} Z" fill="#c0392b"><title>commit at call ${call + 1}</title></path>`;
    });
  return `<svg data-chart="timeline" data-session="${session}" viewBox="0 0 ${area.width} ${area.height}" role="img">
<title>${session}: view tokens per call vs transcript tokens, ${counted(calls, 'call')}, ${counted(commitCount, 'commit')}</title>
<text class="chart-title" x="${area.left}" y="14">${shown}</text>${axes}
<line data-series="window" x1="${area.left}" x2="${area.width - area.right}" y1="${windowY}" y2="${windowY}" stroke="#c0392b" stroke-width="1.2" stroke-dasharray="6 4"/>
<polyline data-series="transcript" points="${path(timeline.transcriptTokens)}" fill="none" stroke="#9a9a9a" stroke-width="1.5"/>
<polyline data-series="view" points="${path(timeline.viewTokens)}" fill="none" stroke="${style.colour}" stroke-width="2" stroke-dasharray="${style.dash}"/>
${commits.join('')}</svg>`;
}

function counted(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
