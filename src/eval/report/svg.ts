/**
 * Small, dependency-free helpers for the HTML report: escaping, number formats, linear scales,
 * axes and the per-strategy line styles. Everything returns markup strings.
 */

import type { Rate } from '../eval-summary.js';

/** Escape text for HTML element content and double- or single-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

const DASH = '\u2014';

export function formatPercent(value: number, digits = 1): string {
  return Number.isFinite(value) ? `${(value * 100).toFixed(digits)}%` : DASH;
}

/** A rate with its interval (hits of total in the tooltip); a dash when there were no trials. */
export function renderRate(rate: Rate): string {
  if (rate.total === 0) return `<span class="muted" title="no trials">${DASH}</span>`;
  return `${formatPercent(rate.value)} <span class="ci" title="${rate.hits} of ${rate.total}">[${formatPercent(rate.low)}, ${formatPercent(rate.high)}]</span>`;
}

/** Token counts as 950, 12.3k, 1.24M. */
export function formatTokens(value: number): string {
  if (!Number.isFinite(value)) return DASH;
  const size = Math.abs(value);
  if (size >= 1e6) return `${(value / 1e6).toFixed(2)}M`;
  if (size >= 1e4) return `${(value / 1e3).toFixed(0)}k`;
  if (size >= 1e3) return `${(value / 1e3).toFixed(1)}k`;
  return String(Math.round(value));
}

/** A coordinate rounded for compact SVG, and never NaN in the markup. */
export function coordinate(value: number): string {
  return Number.isFinite(value) ? String(Math.round(value * 10) / 10) : '0';
}

export interface Scale {
  (value: number): number;
  domain: readonly [number, number];
}

/** Linear map from `domain` onto `range`, clamped so that stray data cannot leave the plot. */
export function linearScale(domain: readonly [number, number], range: readonly [number, number]): Scale {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  const span = d1 - d0 || 1;
  const scale = (value: number): number => {
    const t = Math.min(1, Math.max(0, ((Number.isFinite(value) ? value : d0) - d0) / span));
    return r0 + t * (r1 - r0);
  };
  return Object.assign(scale, { domain });
}

/** About `count` round tick values covering [0, max]; the last one is at least max. */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? raw;
  const ticks: number[] = [];
  for (let tick = 0; tick < max + step * 0.999; tick += step) ticks.push(Number(tick.toPrecision(12)));
  return ticks;
}

export interface PlotArea {
  width: number;
  height: number;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/** Gridlines, tick labels and axis titles (an empty y title is left out) for scales mapping into `area`. */
export function renderAxes(
  area: PlotArea,
  x: { scale: Scale; ticks: number[]; format: (value: number) => string; title: string },
  y: { scale: Scale; ticks: number[]; format: (value: number) => string; title: string },
): string {
  const parts: string[] = ['<g class="axes">'];
  const plotBottom = area.height - area.bottom;
  for (const tick of y.ticks) {
    const py = coordinate(y.scale(tick));
    parts.push(
      `<line class="grid" x1="${area.left}" x2="${area.width - area.right}" y1="${py}" y2="${py}"/>`,
      `<text class="tick" x="${area.left - 6}" y="${py}" text-anchor="end" dominant-baseline="middle">${escapeHtml(y.format(tick))}</text>`,
    );
  }
  for (const tick of x.ticks) {
    const px = coordinate(x.scale(tick));
    parts.push(
      `<line class="tick-mark" x1="${px}" x2="${px}" y1="${plotBottom}" y2="${plotBottom + 4}"/>`,
      `<text class="tick" x="${px}" y="${plotBottom + 16}" text-anchor="middle">${escapeHtml(x.format(tick))}</text>`,
    );
  }
  const midX = coordinate((area.left + area.width - area.right) / 2);
  const midY = coordinate((area.top + plotBottom) / 2);
  parts.push(
    `<line class="axis" x1="${area.left}" x2="${area.width - area.right}" y1="${plotBottom}" y2="${plotBottom}"/>`,
    `<line class="axis" x1="${area.left}" x2="${area.left}" y1="${area.top}" y2="${plotBottom}"/>`,
    `<text class="axis-title" x="${midX}" y="${area.height - 6}" text-anchor="middle">${escapeHtml(x.title)}</text>`,
  );
  if (y.title) {
    parts.push(
      `<text class="axis-title" transform="translate(14 ${midY}) rotate(-90)" text-anchor="middle">${escapeHtml(y.title)}</text>`,
    );
  }
  parts.push('</g>');
  return parts.join('');
}

export interface StrategyStyle {
  colour: string;
  /** SVG `stroke-dasharray`, empty for a solid line. */
  dash: string;
}

/**
 * Okabe–Ito colours (distinguishable with colour-vision deficiencies), each with its own dash, so
 * lines stay apart in greyscale too; solid is kept for `selfgc`.
 */
const STYLES: StrategyStyle[] = [
  { colour: '#0072B2', dash: '9 3' },
  { colour: '#D55E00', dash: '4 3' },
  { colour: '#009E73', dash: '2 3' },
  { colour: '#CC79A7', dash: '10 3 2 3' },
  { colour: '#E69F00', dash: '5 2' },
  { colour: '#56B4E9', dash: '1 4' },
  { colour: '#8C6D31', dash: '12 4 2 4 2 4' },
];
const UPPER_BOUND_STYLE: StrategyStyle = { colour: '#555555', dash: '6 5' };
const SELFGC_STYLE: StrategyStyle = { colour: '#000000', dash: '' };

/**
 * One stable style per strategy name, so a strategy looks the same in every chart. `selfgc` is
 * drawn solid black, upper bounds dashed grey, the rest take the palette in order.
 */
export function assignStyles(
  strategies: Array<{ name: string; upperBound: boolean }>,
): Map<string, StrategyStyle> {
  const styles = new Map<string, StrategyStyle>();
  let next = 0;
  for (const { name, upperBound } of strategies) {
    if (styles.has(name)) continue;
    if (upperBound) styles.set(name, UPPER_BOUND_STYLE);
    else if (name === 'selfgc') styles.set(name, SELFGC_STYLE);
    else styles.set(name, STYLES[next++ % STYLES.length] ?? SELFGC_STYLE);
  }
  return styles;
}

/** The report's stylesheet, including the classes the axes above emit (grid, axis, tick). */
export const REPORT_CSS = `
:root{color-scheme:light;--ink:#1d1d1f;--muted:#6b6b70;--rule:#e3e3e8}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);max-width:1120px;margin:0 auto;padding:24px 28px 48px;background:#fff}
h1{font-size:24px;margin:0 0 12px}h2{font-size:19px;margin:36px 0 10px;border-bottom:1px solid var(--rule);padding-bottom:6px}h3{font-size:16px;margin:28px 0 6px}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}.facts dt{color:var(--muted)}.facts dd{margin:0}
.inputs{margin:0;padding:0;list-style:none}code{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f4f4f7;padding:1px 4px;border-radius:3px}
table.results{display:block;overflow-x:auto;border-collapse:collapse;margin:8px 0 16px;font-variant-numeric:tabular-nums}
.results caption{text-align:left;color:var(--muted);padding-bottom:6px}.results th,.results td{padding:5px 10px;border-bottom:1px solid var(--rule);text-align:right;white-space:nowrap}
.results th[scope=row],.results thead th:first-child{text-align:left}.results thead th{font-weight:600;border-bottom:2px solid #c9c9d0;white-space:normal}
.ci,.muted{color:var(--muted);font-size:12px}[data-table=session-mode] .ci{display:block}tr.flagged td{color:#c0392b;font-weight:600}.swatch{vertical-align:middle;margin-right:6px}
figure{margin:12px 0 20px}figcaption{color:var(--muted);font-size:13px;margin-top:4px}
svg[data-chart]{display:block;width:100%;height:auto;font-size:12px}svg[data-chart=tradeoff],svg[data-chart=cost]{max-width:820px}
.grid{stroke:#ececf0}.axis{stroke:#8a8a90}.tick-mark{stroke:#8a8a90}.tick{fill:#55555a;font-size:11px}.axis-title{fill:#333;font-size:12px}
.reference{stroke:#333;stroke-dasharray:4 3;stroke-width:1.2}.bar-value{font-size:12px;fill:#222;paint-order:stroke;stroke:#fff;stroke-width:3px}.bound-label{font-size:12px;font-style:italic}
.chart-title{font:600 12px ui-monospace,Menlo,Consolas,monospace;fill:#222}
.timelines{display:grid;grid-template-columns:repeat(auto-fill,minmax(320px,1fr));gap:10px 16px}
.timeline-legend{color:var(--muted);font-size:13px}.timeline-legend .swatch{margin-left:10px}
.no-data{padding:14px;border:1px dashed #c9c9d0;color:var(--muted);background:#fafafc}
footer{margin-top:36px;color:var(--muted);font-size:12.5px;border-top:1px solid var(--rule);padding-top:10px}
`;
