import { describe, expect, it } from 'vitest';
import { sampleSummary, withoutRareTokens } from '../eval/report/sample-summary.js';
import { wilson } from '../eval/wilson.js';
import { formatSummary } from './eval-command.js';

const percent = (value: number) => `${(value * 100).toFixed(1)}%`;

/** The line of the table a strategy's row starts. */
function rowOf(lines: readonly string[], header: string, strategy: string): string {
  const start = lines.findIndex((line) => line.startsWith(header));
  return lines.slice(start + 1).find((line) => line.trimStart().startsWith(`${strategy} `)) ?? '';
}

describe('formatSummary', () => {
  const summary = sampleSummary();
  const lines = formatSummary(summary).split('\n');

  it('prints the rare-token judge beside the anchor judge in cut mode, for every strategy', () => {
    const header = lines.find((line) => line.startsWith('cut mode'))!;
    expect(header).toContain('strict no-impact [95% CI]');
    expect(header).toContain('rare-token no-impact [95% CI]   score');
    for (const result of summary.cutMode) {
      const rare = result.own.rareTokens!;
      const row = rowOf(lines, 'cut mode', result.strategy);
      expect(row, result.strategy).toContain(
        `${percent(rare.noImpact.value)} [${percent(rare.noImpact.low)}–${percent(rare.noImpact.high)}]   ${rare.meanScore.toFixed(3)}`,
      );
    }
  });

  it('prints it over the changed calls in session mode, a dash where nothing was judged', () => {
    for (const result of summary.sessionMode) {
      const rare = result.rareTokensChanged!;
      const row = rowOf(lines, 'session mode', result.strategy);
      if (rare.noImpact.total === 0) expect(row.trimEnd().endsWith('–'), result.strategy).toBe(true);
      else expect(row, result.strategy).toContain(`${percent(rare.noImpact.value)} [`);
    }
  });

  it('prints dashes for a summary written before the rare-token judge', () => {
    const older = withoutRareTokens(summary);
    const text = formatSummary(older);
    expect(text).not.toMatch(/undefined|NaN/);
    const olderLines = text.split('\n');
    for (const result of summary.cutMode)
      expect(rowOf(olderLines, 'cut mode', result.strategy).trimEnd().endsWith('–')).toBe(true);
  });

  it('prints session mode by family when the sessions came from several files', () => {
    expect(lines.some((line) => line.includes('by family'))).toBe(false);
    const [first] = summary.sessionMode;
    const byFamily = {
      ...summary,
      sessionMode: [
        {
          ...first!,
          families: [
            {
              family: 'agent-a',
              sessions: 2,
              calls: 10,
              overWindowCalls: 0,
              costRelative: 0.25,
              strictNoImpactChanged: wilson(9, 10),
            },
            {
              family: 'agent-b',
              sessions: 1,
              calls: 5,
              overWindowCalls: 3,
              costRelative: 0.5,
              strictNoImpactChanged: wilson(0, 0),
            },
          ],
        },
      ],
    };
    expect(formatSummary(byFamily)).toContain(
      `  by family, ${first!.strategy}: agent-a 90.0% (0.250) · agent-b – (0.500, 3 over)`,
    );
  });

  it('prints session mode by prefix length for the strategies with judged calls', () => {
    expect(lines.some((line) => line.includes('by prefix'))).toBe(false);
    const [first] = summary.sessionMode;
    const band = (above: number, upTo: number | null, strict: number, total: number) => ({
      above,
      upTo,
      calls: total,
      strictNoImpactChanged: wilson(strict, total),
      rareTokensChanged: { noImpact: wilson(strict, total), meanScore: 1 },
    });
    const banded = {
      ...summary,
      sessionMode: [
        {
          ...first!,
          prefixBands: [band(0, 2, 9, 10), band(2, 4, 3, 4), band(4, 8, 0, 0), band(8, null, 1, 2)],
        },
      ],
    };
    expect(formatSummary(banded)).toContain(
      `  by prefix / window, ${first!.strategy}: up to 2× 90.0% of 10 · 2–4× 75.0% of 4 · 4–8× – · over 8× 50.0% of 2`,
    );
  });
});
