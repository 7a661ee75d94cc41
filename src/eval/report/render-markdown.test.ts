import { describe, expect, it } from 'vitest';
import type { EvalSummary, Rate } from '../eval-summary.js';
import { wilson } from '../wilson.js';
import { renderMarkdown } from './render-markdown.js';
import { sampleSummary, withJudgeProtocol, withoutRareTokens } from './sample-summary.js';

const percent = (value: number) => `${(value * 100).toFixed(1)}%`;
const interval = (rate: Rate) => `${percent(rate.value)} [${percent(rate.low)}–${percent(rate.high)}]`;

/** The Markdown tables of a document, each under the heading above it, as rows of cells. */
function tablesOf(markdown: string): Map<string, string[][]> {
  const tables = new Map<string, string[][]>();
  let heading = '';
  for (const line of markdown.split('\n')) {
    if (line.startsWith('## ')) heading = line.slice(3);
    if (!line.startsWith('| ')) continue;
    const cells = line
      .slice(2, -2)
      .split(/ (?<!\\)\| /)
      .map((cell) => cell.replaceAll('\\|', '|'));
    tables.set(heading, [...(tables.get(heading) ?? []), cells]);
  }
  return tables;
}

function withParameters(summary: EvalSummary): EvalSummary {
  return {
    ...summary,
    parameters: {
      strategies: summary.cutMode.map((result) => result.strategy),
      modes: ['cut', 'session'],
      window: 128_000,
      cutsPerSession: 4,
      sweep: [0.9, 0.5, 0.2],
      continuationSteps: 3,
    },
  };
}

describe('renderMarkdown', () => {
  const summary = withParameters(sampleSummary());
  const markdown = renderMarkdown(summary, { seconds: 42.4, runtime: 'node v20.20.2, 2 cores' });
  const tables = tablesOf(markdown);

  it('opens with the command, the date and the settings of the run', () => {
    expect(markdown.startsWith('# Self-GC evaluation results\n')).toBe(true);
    expect(markdown).toContain(`\`\`\`sh\n${summary.command}\n\`\`\``);
    expect(markdown).toContain('Written by `selfgc eval` at 2026-07-14 09:30 UTC:');
    expect(markdown).toContain(
      '- Sessions: 14, from `test-fixture/sessions-a.jsonl`, `test-fixture/sessions-b.jsonl`.',
    );
    expect(markdown).toContain('(4 per session)');
    expect(markdown).toContain('keep shares 0.9, 0.5, 0.2');
    expect(markdown).toContain('the next 3 assistant messages');
    expect(markdown).toContain('window 128,000 tokens; cache writes cost 1.25× and cache reads 0.1×');
    expect(markdown).toContain('- Run: 42 s, node v20.20.2, 2 cores.');
    expect(markdown).not.toMatch(/undefined|NaN|Infinity|null/);
  });

  it('writes every table with as many cells in each row as in its header', () => {
    expect(tables.size).toBe(3);
    for (const [heading, rows] of tables) {
      expect(
        rows[1]!.every((cell) => /^-{3}:?$/.test(cell)),
        heading,
      ).toBe(true);
      for (const row of rows) expect(row.length, `${heading}: ${row.join(' | ')}`).toBe(rows[0]!.length);
    }
  });

  it('gives each strategy its cut-mode row at its own budget', () => {
    const rows = tables.get('Cut mode, each strategy at its own budget')!.slice(2);
    expect(rows).toHaveLength(summary.cutMode.length);
    for (const [index, result] of summary.cutMode.entries()) {
      const { own } = result;
      expect(rows[index]).toEqual([
        result.strategy + (result.upperBound ? ' (upper bound)' : ''),
        percent(own.pruneRate),
        `${percent(own.strictNoImpact.value)} [${percent(own.strictNoImpact.low)}–${percent(own.strictNoImpact.high)}]`,
        percent(own.recoverableNoImpact.value),
        percent(own.unrecoverableLoss.value),
        interval(own.rareTokens!.noImpact),
        own.rareTokens!.meanScore.toFixed(3),
      ]);
    }
  });

  it('compares at matched prune rates only the strategies and rates a sweep reaches', () => {
    const [header, , ...rows] = tables.get('Strict no-impact at matched prune rates')!;
    const reached = (name: string) => summary.matched.some((row) => row.strictNoImpact[name] != null);
    expect(header).toEqual([
      'prune rate',
      ...summary.cutMode.map((result) => result.strategy).filter(reached),
    ]);
    const expected = summary.matched.filter((row) =>
      header!.slice(1).some((name) => row.strictNoImpact[name] != null),
    );
    expect(rows.map((row) => row[0])).toEqual(expected.map((row) => percent(row.pruneRate)));
    for (const [index, row] of expected.entries())
      for (const [column, name] of header!.slice(1).entries()) {
        const value = row.strictNoImpact[name];
        expect(rows[index]![column + 1]).toBe(value == null ? '–' : percent(value));
      }
  });

  it('gives each strategy its session-mode row', () => {
    const rows = tables.get('Session mode, window 128,000')!.slice(2);
    expect(rows.map((row) => row[0])).toEqual(summary.sessionMode.map((result) => result.strategy));
    for (const [index, result] of summary.sessionMode.entries()) {
      expect(rows[index]![4]).toBe(result.costRelative.toFixed(3));
      expect(rows[index]![6]).toBe(
        `${percent(result.strictNoImpactChanged.value)} of ${result.strictNoImpactChanged.total.toLocaleString('en-US')}`,
      );
      const rare = result.rareTokensChanged!;
      // `none` changes no call: nothing for either judge to read.
      expect(rows[index]!.slice(7)).toEqual(
        rare.noImpact.total === 0 ? ['–', '–'] : [interval(rare.noImpact), rare.meanScore.toFixed(3)],
      );
    }
  });

  it('breaks session mode down by family when the sessions came from several files', () => {
    expect(tables.has('Session mode by family')).toBe(false);
    const family = (name: string, strict: number, total: number, over: number) => ({
      family: name,
      sessions: 3,
      calls: 40,
      overWindowCalls: over,
      costRelative: 0.5,
      strictNoImpactChanged: wilson(strict, total),
    });
    const byFamily: EvalSummary = {
      ...summary,
      sessionMode: summary.sessionMode.map((result, index) => ({
        ...result,
        families:
          index === 0
            ? [family('agent-a', 0, 0, 0), family('agent-b', 0, 0, 0)]
            : [family('agent-a', 9, 10, 0), family('agent-b', 1, 4, 2)],
      })),
    };
    const rows = tablesOf(renderMarkdown(byFamily)).get('Session mode by family')!;
    expect(rows[0]).toEqual(['strategy', 'agent-a (3 sessions)', 'agent-b (3 sessions)']);
    expect(rows[2]).toEqual([summary.sessionMode[0]!.strategy, '– · 0.500', '– · 0.500']);
    expect(rows[3]).toEqual([summary.sessionMode[1]!.strategy, '90.0% · 0.500', '25.0% · 0.500 · 2 over']);
  });

  it('breaks session mode down by prefix length, for the strategies with judged calls', () => {
    expect(tables.has('Session mode by prefix length')).toBe(false);
    const band = (
      above: number,
      upTo: number | null,
      calls: number,
      strict: number,
      rare: number,
      total: number,
    ) => ({
      above,
      upTo,
      calls,
      strictNoImpactChanged: wilson(strict, total),
      rareTokensChanged: { noImpact: wilson(rare, total), meanScore: total > 0 ? 0.9 : 0 },
    });
    const banded: EvalSummary = {
      ...summary,
      sessionMode: summary.sessionMode.map((result, index) =>
        index === 0
          ? result
          : {
              ...result,
              prefixBands: [
                band(0, 2, 1200, 95, 90, 100),
                band(2, 4, 300, 36, 30, 40),
                band(4, 8, 0, 0, 0, 0),
                band(8, null, 50, 4, 5, 10),
              ],
            },
      ),
    };
    const text = renderMarkdown(banded);
    expect(text).toMatch(/over the window of\s128,000 tokens/);
    const rows = tablesOf(text).get('Session mode by prefix length')!;
    expect(rows[0]).toEqual([
      'strategy',
      'up to 2× (1,200 calls)',
      '2–4× (300 calls)',
      '4–8× (0 calls)',
      'over 8× (50 calls)',
      'rare-token, up to 2×',
      'rare-token, 2–4×',
      'rare-token, 4–8×',
      'rare-token, over 8×',
    ]);
    // The first strategy has no bands (it changed no call): it has no row.
    expect(rows.slice(2).map((row) => row[0])).toEqual(
      summary.sessionMode.slice(1).map((result) => result.strategy),
    );
    expect(rows[2]!.slice(1)).toEqual([
      `${interval(wilson(95, 100))} of 100`,
      `${interval(wilson(36, 40))} of 40`,
      '–',
      `${interval(wilson(4, 10))} of 10`,
      interval(wilson(90, 100)),
      interval(wilson(30, 40)),
      '–',
      interval(wilson(5, 10)),
    ]);
  });

  it('shows where the missed anchors were, as shares, for the strategies that missed any', () => {
    expect(tables.has('Where the missed anchors were')).toBe(false);
    const withMissing: EvalSummary = {
      ...summary,
      sessionMode: summary.sessionMode.map((result, index) =>
        index !== 1
          ? result
          : {
              ...result,
              missingAnchors: {
                total: 8,
                byRole: { agent: 2, tool: 6, user: 0, system: 0 },
                bySteps: { latest: 1, middle: 3, old: 4 },
                byRemoval: { pruned: 4, folded: 2, masked: 0, removed: 2 },
                inLatestFold: 1,
              },
            },
      ),
    };
    const rows = tablesOf(renderMarkdown(withMissing)).get('Where the missed anchors were')!;
    expect(rows[0]).toEqual([
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
    ]);
    expect(rows.slice(2)).toEqual([
      [
        summary.sessionMode[1]!.strategy,
        '8',
        '25.0%',
        '75.0%',
        '0.0%',
        '0.0%',
        '12.5%',
        '37.5%',
        '50.0%',
        '50.0%',
        '25.0%',
        '0.0%',
        '25.0%',
        '12.5%',
      ],
    ]);
  });

  it('explains both judges, and gives dashes for a summary written before the rare-token judge', () => {
    expect(markdown).toContain('**Rare-token no-impact** (a second judge, sharing no code with the first)');
    expect(markdown).toContain('(at most 5%, at least one)');
    const older = withoutRareTokens(summary);
    const olderTables = tablesOf(renderMarkdown(older));
    for (const heading of ['Cut mode, each strategy at its own budget', 'Session mode, window 128,000'])
      for (const row of olderTables.get(heading)!.slice(2))
        expect(row.slice(-2), heading).toEqual(['–', '–']);
  });

  it('leaves out what a run did not measure or record', () => {
    const bare = sampleSummary();
    const cutOnly = renderMarkdown({ ...bare, sessionMode: [] });
    expect(cutOnly).not.toContain('## Session mode');
    expect(cutOnly).not.toContain('- Session mode:');
    expect(cutOnly).not.toContain('per session');
    expect(cutOnly).not.toContain('- Run:');
    expect(cutOnly).not.toContain('LLM judge');
    expect(cutOnly).not.toMatch(/undefined|NaN/);
    const sessionOnly = renderMarkdown({ ...bare, cutMode: [], matched: [] });
    expect(sessionOnly).not.toContain('## Cut mode');
    expect(sessionOnly).not.toContain('matched prune rates');
    expect(sessionOnly).toContain('## Session mode');
  });

  it('adds the LLM judge, its taxonomy, calibration and planner fallbacks when a model was asked', () => {
    const judged = withJudgeProtocol(summary);
    const text = renderMarkdown(judged);
    expect(text).toContain(
      '- Model endpoint: openai `judge-model`; LLM judge on 20 cuts per strategy, A/B calibration on 5 of them.',
    );
    const tables = tablesOf(text);
    const rows = tables.get("LLM judge (judge-model), sampled cuts at each strategy's own budget")!;
    const rate = wilson(15, 20);
    expect(rows[0]).toEqual([
      'strategy',
      'pass = no-impact [95% CI]',
      'agrees with strict',
      'no verdict',
      'task_progress',
      'information_sufficiency',
      'action_consistency',
      'correctness',
    ]);
    expect(rows.slice(2)).toEqual([
      [
        'selfgc|llm',
        `75.0% [${percent(rate.low)}–${percent(rate.high)}] of 20`,
        '90.0%',
        '1',
        '4.50',
        '4.25',
        '4.00',
        '4.88',
      ],
    ]);
    expect(tables.get('LLM judge failure taxonomy')!.slice(2)).toEqual([
      ['selfgc|llm', '2', '1', '1', '0', '1', '3 / 1 / 1 / 0', 'function:read_file 2, conversation:user 1'],
    ]);
    const flips = wilson(1, 4);
    expect(tables.get('LLM judge A/B calibration')!.slice(2)).toEqual([
      ['selfgc|llm', '5', `${interval(flips)} of 4`, '57.1% of 7', '1 / 1 / 1', '66.7% of 3', '1'],
    ]);
    expect(text).toContain('| selfgc\\|llm |');
    expect(text).toContain('- cut mode, selfgc|llm: the LLM planner failed for 2 plan(s)');
  });

  it('adds the latest-turn audit of plans and commits', () => {
    const audited = withJudgeProtocol(summary);
    const rows = tablesOf(renderMarkdown(audited)).get('Latest-turn audit')!;
    expect(rows.slice(2)).toEqual([
      ['selfgc', 'cut', '66', '410', '3', '0', '–'],
      [summary.sessionMode[0]!.strategy, 'session', '12', '40', '–', '0', '2'],
    ]);
    expect(renderMarkdown(summary)).not.toContain('Latest-turn audit');
  });
});
