/** Plain-text tables of the ledger benchmark's results. */
import type { Distribution } from './ledger-stats.js';

export interface Targets {
  /** Incremental per-call work as a share of re-tokenizing the view from scratch. */
  maxRatio: number;
  /** p99 of incremental per-call work, in ms. */
  maxP99Ms: number;
  /**
   * The targets hold at ~250k tokens: longer sessions are measured and shown, not judged (their
   * length usually comes from a few huge outputs, and a call that appends one costs its size).
   */
  judgedUpToTokens: number;
}

export interface SessionResult {
  name: string;
  origin: 'trace' | 'generated';
  messages: number;
  calls: number;
  tokens: number;
  largestMessageTokens: number;
  indexMs: number;
  incremental: Distribution;
  append: Distribution;
  project: Distribution;
  /** Over the sampled calls only. */
  reference: Distribution;
  /** Median over the sampled calls of incremental / reference on the same call. */
  ratio: number;
  /**
   * Median over the sampled calls of the tokens the call appended / the tokens of its view: the
   * ratio an implementation that only counts what is new would reach.
   */
  newShare: number;
  /** Σ incremental / Σ reference over the sampled calls. */
  totalRatio: number;
  /** The incremental replay again, with the memoized counter the proxy and the CLI use. */
  memoized: Distribution;
  memoizedRatio: number;
  /** The from-scratch count of every sampled view equals the incremental accounting. */
  tokensAgree: boolean;
  governor: Distribution;
  governorCommits: number;
  governorViewTokens: number;
}

export const isJudged = (result: SessionResult, targets: Targets) =>
  result.tokens <= targets.judgedUpToTokens;
/** Token counts that disagree with a from-scratch count fail whatever the length. */
export const passesRatio = (result: SessionResult, targets: Targets) =>
  result.tokensAgree && (!isJudged(result, targets) || result.ratio <= targets.maxRatio);
export const passesP99 = (result: SessionResult, targets: Targets) =>
  !isJudged(result, targets) || result.incremental.p99 <= targets.maxP99Ms;

/** Columns padded to their widest cell; text left-aligned, numbers right-aligned. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const numeric = headers.map((_, column) =>
    rows.every((row) => /^[\d.,%k×<>≤ -]*$/.test(row[column] ?? '')),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) =>
        numeric[column] ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!),
      )
      .join('  ')
      .trimEnd();
  return [line(headers), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(line)].join('\n');
}

export const ms = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(2));
const kilo = (value: number) => `${(value / 1000).toFixed(1)}k`;
const percent = (value: number) => `${(value * 100).toFixed(2)}%`;
const verdict = (ok: boolean) => (ok ? 'pass' : 'FAIL');
const notJudged = (targets: Targets) => `n/a (>${kilo(targets.judgedUpToTokens)})`;

export function formatMainTable(results: readonly SessionResult[], targets: Targets): string {
  return formatTable(
    [
      'session',
      'messages',
      'calls',
      'tokens',
      'index ms',
      'incr p50',
      'incr p99',
      'incr max',
      'ref p50',
      'ref p99',
      'ratio',
      'new/view',
      `ratio≤${percent(targets.maxRatio)}`,
      `p99≤${targets.maxP99Ms}ms`,
    ],
    results.map((result) => [
      result.name,
      String(result.messages),
      String(result.calls),
      kilo(result.tokens),
      ms(result.indexMs),
      ms(result.incremental.p50),
      ms(result.incremental.p99),
      ms(result.incremental.max),
      ms(result.reference.p50),
      ms(result.reference.p99),
      percent(result.ratio),
      percent(result.newShare),
      !result.tokensAgree
        ? 'FAIL (token counts differ)'
        : isJudged(result, targets)
          ? verdict(passesRatio(result, targets))
          : notJudged(targets),
      isJudged(result, targets) ? verdict(passesP99(result, targets)) : notJudged(targets),
    ]),
  );
}

export function formatBreakdownTable(results: readonly SessionResult[]): string {
  return formatTable(
    [
      'session',
      'largest msg',
      'append p50',
      'append p99',
      'append max',
      'project p50',
      'project p99',
      'Σ ratio',
      'memo p50',
      'memo p99',
      'memo ratio',
    ],
    results.map((result) => [
      result.name,
      kilo(result.largestMessageTokens),
      ms(result.append.p50),
      ms(result.append.p99),
      ms(result.append.max),
      ms(result.project.p50),
      ms(result.project.p99),
      percent(result.totalRatio),
      ms(result.memoized.p50),
      ms(result.memoized.p99),
      percent(result.memoizedRatio),
    ]),
  );
}

export function formatGovernorTable(results: readonly SessionResult[]): string {
  return formatTable(
    ['session', 'governor p50', 'governor p99', 'governor max', 'commits', 'final view'],
    results.map((result) => [
      result.name,
      ms(result.governor.p50),
      ms(result.governor.p99),
      ms(result.governor.max),
      String(result.governorCommits),
      kilo(result.governorViewTokens),
    ]),
  );
}
