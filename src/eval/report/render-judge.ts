/**
 * The report's tables for the paper's judge protocol: the LLM judge's scorecards (means per
 * dimension, failure taxonomy, culprits), its A/B calibration, and the latest-turn audit.
 */
import type { EvalSummary, LatestTurnAudit } from '../eval-summary.js';
import { FAILURE_CATEGORIES, JUDGE_DIMENSIONS, PASS_SCORE, SCORE_RANGE } from '../judge-llm.js';
import { escapeHtml, renderRate } from './svg.js';

const DASH = '\u2014';
const head = (names: readonly string[]) => names.map((name) => `<th scope="col">${name}</th>`).join('');
const row = (strategy: string) =>
  `<tr data-strategy="${escapeHtml(strategy)}"><th scope="row">${escapeHtml(strategy)}</th>`;

/** Scorecards and calibration of the cut-mode strategies the LLM judge read; empty without any. */
export function renderJudgeProtocol(summary: EvalSummary): string {
  const model = escapeHtml(summary.llm?.model ?? 'model');
  const scored = summary.cutMode.filter((result) => result.llmScorecard !== undefined);
  const calibrated = summary.cutMode.filter((result) => result.llmCalibration !== undefined);
  const parts: string[] = [];
  if (scored.length > 0) {
    const failing = FAILURE_CATEGORIES.filter((category) => category !== 'none');
    const rows = scored.map((result) => {
      const card = result.llmScorecard!;
      const means = JUDGE_DIMENSIONS.map(
        (dimension) =>
          `<td data-column="mean-${dimension}">${card.judged > 0 ? card.means[dimension].toFixed(2) : DASH}</td>`,
      );
      const categories = [...failing, 'none' as const].map(
        (category) => `<td data-column="failure-${category}">${card.failureCategories[category]}</td>`,
      );
      const { objects, other, none, unknown } = card.culprits;
      const kinds = Object.entries(card.culpritKinds)
        .map(([kind, count]) => `<code>${escapeHtml(kind)}</code> ${count}`)
        .join(', ');
      return `${row(result.strategy)}<td>${card.judged}</td><td data-column="llm-pass">${renderRate(result.llmNoImpact!)}</td>${means.join('')}${categories.join('')}
<td data-column="culprits">${objects} / ${other} / ${none} / ${unknown}</td><td data-column="culprit-kinds">${kinds || DASH}</td></tr>`;
    });
    parts.push(`<table class="results" data-table="llm-scorecard">
<caption>LLM judge scorecards (${model}, sampled cuts at each strategy's own budget): each dimension ${SCORE_RANGE.min}\u2013${SCORE_RANGE.max} from the view alone; a pass, the judge's no-impact, has every dimension at ${PASS_SCORE} or more. Failing scorecards by the category of loss and by culprit (objects the view changed / other / none / ids it did not change)</caption>
<thead><tr><th scope="col">Strategy</th>${head(['Judged', 'Pass', ...JUDGE_DIMENSIONS.map((dimension) => `Mean ${dimension.replaceAll('_', ' ')}`), ...failing, 'failing, no category', 'Culprits', 'Blamed kinds'])}</tr></thead>
<tbody>${rows.join('')}</tbody></table>`);
  }
  if (calibrated.length > 0) {
    const rows = calibrated.map((result) => {
      const calibration = result.llmCalibration!;
      const { governed, full, tie } = calibration.consistent;
      return `${row(result.strategy)}<td>${calibration.pairs}</td><td data-column="flips">${renderRate(calibration.flips)}</td>
<td data-column="slot-a">${renderRate(calibration.slotA)}</td><td data-column="consistent">${governed} / ${full} / ${tie}</td>
<td data-column="agreement">${renderRate(calibration.agreement)}</td><td>${calibration.failures}</td></tr>`;
    });
    parts.push(`<table class="results" data-table="llm-calibration">
<caption>A/B calibration of the LLM judge: the model writes the next step from the full prefix and from the view; the judge compares them in both orders. Flips are verdicts that change with the order (position bias); agreement sets a verdict that holds (the view's step not worse \u21d4 pass) against the scorecard</caption>
<thead><tr><th scope="col">Strategy</th>${head(['Pairs', 'Flips with order', 'Slot A chosen', 'Same verdict: view / full / tie', 'Agrees with scorecard', 'Failed'])}</tr></thead>
<tbody>${rows.join('')}</tbody></table>`);
  }
  return parts.join('\n');
}

function auditRow(strategy: string, mode: string, audit: LatestTurnAudit): string {
  const flagged = audit.applied > 0 ? ' class="flagged"' : '';
  return `<tr data-strategy="${escapeHtml(strategy)}" data-mode="${mode}"${flagged}><th scope="row">${escapeHtml(strategy)}</th><td>${mode}</td>
<td>${audit.plans}</td><td>${audit.operations}</td><td data-column="refused">${audit.refused ?? DASH}</td>
<td data-column="applied">${audit.applied}</td><td data-column="window-rescue">${audit.windowRescue ?? DASH}</td></tr>`;
}

/** The latest-turn audit of the strategies that plan through the harness; empty without any. */
export function renderLatestTurnAudit(summary: EvalSummary): string {
  const rows = [
    ...summary.cutMode.flatMap((result) =>
      result.latestTurnAudit ? [auditRow(result.strategy, 'cut', result.latestTurnAudit)] : [],
    ),
    ...summary.sessionMode.flatMap((result) =>
      result.latestTurnAudit ? [auditRow(result.strategy, 'session', result.latestTurnAudit)] : [],
    ),
  ];
  if (rows.length === 0) return '';
  const applied = [...summary.cutMode, ...summary.sessionMode].reduce(
    (sum, result) => sum + (result.latestTurnAudit?.applied ?? 0),
    0,
  );
  return `<table class="results" data-table="latest-turn-audit">
<caption>Latest-turn audit: plan operations aimed at the latest turn (the harness refuses them) and operations in effect on it, which should be none (${applied === 0 ? 'none found' : `${applied} found`}). Cut mode counts plans, session mode commits; the governor's window rescue, which folds latest-turn outputs only when the latest turn alone is over the window, is counted apart</caption>
<thead><tr><th scope="col">Strategy</th>${head(['Mode', 'Plans or commits', 'Operations', 'Aimed at the latest turn (refused)', 'Applied to it', 'Window rescue'])}</tr></thead>
<tbody>${rows.join('')}</tbody></table>`;
}
