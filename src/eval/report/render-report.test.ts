import { describe, expect, it } from 'vitest';
import { BadInputError } from '../../core/errors.js';
import type { EvalSummary } from '../eval-summary.js';
import { wilson } from '../wilson.js';
import { MAX_TIMELINES, renderReport } from './render-report.js';
import { sampleSummary, withJudgeProtocol, withoutRareTokens } from './sample-summary.js';
import { escapeHtml, niceTicks } from './svg.js';

/** The opening tags of `tag` elements carrying `attribute` (with `value`, if given), as attribute maps. */
function elements(
  html: string,
  tag: string,
  attribute: string,
  value = '[^"]*',
): Array<Record<string, string>> {
  const pattern = new RegExp(`<${tag}\\b[^>]*\\b${attribute}="${value}"[^>]*>`, 'g');
  return [...html.matchAll(pattern)].map(([element]) =>
    Object.fromEntries([...element.matchAll(/([\w:-]+)="([^"]*)"/g)].map(([, name, found]) => [name, found])),
  );
}

function points(polyline: Record<string, string>): Array<[number, number]> {
  return (polyline.points ?? '')
    .split(' ')
    .filter(Boolean)
    .map((pair) => pair.split(',').map(Number) as [number, number]);
}

function emptySummary(): EvalSummary {
  return { ...sampleSummary(), inputs: [], sessions: 0, cutMode: [], sessionMode: [], matched: [] };
}

describe('renderReport', () => {
  const summary = sampleSummary();
  const html = renderReport(summary);

  it('is one self-contained HTML document with no scripts or external resources', () => {
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).toContain('</html>');
    expect(html).not.toMatch(/<script|<link|<img|@import|url\(|\bsrc=|\bhref=|https?:\/\//i);
    expect(html).not.toMatch(/NaN|undefined|Infinity/);
    expect(renderReport(sampleSummary())).toBe(html);
  });

  it('shows session mode by family and the families held out, only when the run has them', () => {
    expect(html).not.toContain('id="families"');
    const row = (family: string, strict: number, total: number) => ({
      family,
      sessions: 2,
      calls: 30,
      overWindowCalls: family === 'agent-b' ? 4 : 0,
      costRelative: 0.5,
      strictNoImpactChanged: wilson(strict, total),
    });
    const withFamilies: EvalSummary = {
      ...summary,
      sessionMode: summary.sessionMode.map((result) => ({
        ...result,
        families: [row('agent-a', 9, 10), row('agent-b', 3, 4)],
      })),
      leaveOneFamilyOut: [
        {
          family: 'agent-a',
          trainingExamples: 100,
          shippedModelSawFamily: true,
          heldOut: row('agent-a', 8, 10),
          shipped: row('agent-a', 9, 10),
          withoutModel: row('agent-a', 7, 10),
        },
      ],
    };
    const page = renderReport(withFamilies);
    const families = page.split('data-table="session-families"')[1]?.split('</table>')[0] ?? '';
    for (const { strategy } of summary.sessionMode)
      expect(families).toContain(`<tr data-strategy="${strategy}">`);
    expect(families).toContain('<th scope="col">agent-b</th>');
    expect(families).toContain('4 over');
    const heldOut = page.split('data-table="leave-one-family-out"')[1]?.split('</table>')[0] ?? '';
    expect(heldOut).toContain('<tr data-family="agent-a">');
    expect(heldOut).toContain('80.0%');
    expect(heldOut).toContain('90.0%');
    expect(heldOut).toContain('70.0%');
    expect(heldOut).toContain('<th scope="col">No model</th>');
    expect(page).not.toMatch(/NaN|undefined|Infinity/);
  });

  it('shows session mode by prefix length only when the run has it, a dash for a band with no judged call', () => {
    expect(html).not.toContain('id="prefix-bands"');
    const band = (above: number, upTo: number | null, strict: number, total: number) => ({
      above,
      upTo,
      calls: total * 2,
      strictNoImpactChanged: wilson(strict, total),
      rareTokensChanged: { noImpact: wilson(strict, total), meanScore: 1 },
    });
    const [first, ...rest] = summary.sessionMode;
    const page = renderReport({
      ...summary,
      sessionMode: [
        first!,
        ...rest.map((result) => ({
          ...result,
          prefixBands: [band(0, 2, 9, 10), band(2, 4, 3, 4), band(4, 8, 0, 0), band(8, null, 1, 2)],
        })),
      ],
    });
    const table = page.split('data-table="session-prefix-bands"')[1]?.split('</table>')[0] ?? '';
    expect(table).not.toContain(`<tr data-strategy="${first!.strategy}">`);
    for (const { strategy } of rest) expect(table).toContain(`<tr data-strategy="${strategy}">`);
    expect(table).toContain('<th scope="col">over 8× <span class="muted">(4 calls)</span></th>');
    expect(table).toContain('<th scope="col">Rare-token, 2–4×</th>');
    const strict = elements(table, 'td', 'data-column', 'strict');
    expect(strict).toHaveLength(4 * rest.length);
    expect(table).toContain('90.0% <span class="ci" title="9 of 10">');
    expect(table).toContain('<span class="muted">of 4</span>');
    expect(table).toContain(
      '<td data-column="strict"><span class="muted" title="no trials">\u2014</span></td>',
    );
    expect(page).not.toMatch(/NaN|undefined|Infinity/);
  });

  it('shows the header facts', () => {
    expect(html).toContain(`<dd data-fact="sessions">${summary.sessions}</dd>`);
    expect(html).toContain(escapeHtml(summary.command));
    expect(html).toContain(summary.createdAt);
    for (const input of summary.inputs) expect(html).toContain(input);
  });

  it('has a results row for every strategy of both modes', () => {
    const cutRows = html.split('data-table="cut-mode"')[1]?.split('</table>')[0] ?? '';
    const sessionRows = html.split('data-table="session-mode"')[1]?.split('</table>')[0] ?? '';
    for (const { strategy } of summary.cutMode) expect(cutRows).toContain(`<tr data-strategy="${strategy}">`);
    for (const { strategy } of summary.sessionMode)
      expect(sessionRows).toContain(`<tr data-strategy="${strategy}">`);
    const selfgc = summary.cutMode.find((result) => result.strategy === 'selfgc')!;
    expect(cutRows).toContain(`${(selfgc.own.strictNoImpact.value * 100).toFixed(1)}%`);
    expect(cutRows).toContain(`[${(selfgc.own.strictNoImpact.low * 100).toFixed(1)}%`);
    expect(cutRows).toMatch(/oracle <span class="muted">\(upper bound\)<\/span>/);
  });

  it('draws one polyline per strategy with as many points as sweep entries, and its own point', () => {
    const lines = elements(html, 'polyline', 'data-strategy');
    expect(lines.map((line) => line['data-strategy'])).toEqual(
      summary.cutMode.map((result) => result.strategy),
    );
    summary.cutMode.forEach((result, index) => {
      const drawn = points(lines[index]!);
      expect(drawn).toHaveLength(result.sweep.length);
      expect(lines[index]!['data-points']).toBe(String(result.sweep.length));
      const xs = drawn.map(([x]) => x);
      expect(xs).toEqual([...xs].sort((a, b) => a - b));
      expect(html).toContain(`<g data-own="${result.strategy}">`);
    });
    const oracle = lines.find((line) => line['data-strategy'] === 'oracle')!;
    expect(oracle['stroke-dasharray']).not.toBe('');
    expect(html).toMatch(/data-label="upper-bound"[^>]*>upper bound</);
    const dashes = lines.map((line) => `${line.stroke} ${line['stroke-dasharray']}`);
    expect(new Set(dashes).size).toBe(lines.length);
  });

  it('draws a cost bar per session-mode strategy, proportional to cost relative to none', () => {
    const bars = elements(html, 'rect', 'data-bar');
    expect(bars.map((bar) => bar['data-bar'])).toEqual(summary.sessionMode.map((result) => result.strategy));
    // Heights in units of the 1.0 reference line, all standing on the same baseline.
    const reference = Number(elements(html, 'line', 'data-reference')[0]?.y1);
    const baseline = Number(bars[0]!.y) + Number(bars[0]!.height);
    summary.sessionMode.forEach((result, index) => {
      const bar = bars[index]!;
      expect(Number(bar.height)).toBeGreaterThan(0);
      expect(Number(bar.y) + Number(bar.height)).toBeCloseTo(baseline, 0);
      expect(Number(bar.height) / (baseline - reference)).toBeCloseTo(result.costRelative, 2);
      expect(bar['data-value']).toBe(String(result.costRelative));
    });
  });

  it('draws timelines for selfgc, the longest sessions first, at most twelve', () => {
    const timelines = elements(html, 'svg', 'data-chart', 'timeline');
    const selfgc = summary.sessionMode.find((result) => result.strategy === 'selfgc')!;
    expect(selfgc.timelines.length).toBeGreaterThan(MAX_TIMELINES);
    expect(timelines).toHaveLength(MAX_TIMELINES);
    const lengths = timelines.map(
      (svg) =>
        selfgc.timelines.find((timeline) => timeline.session === svg['data-session'])!.viewTokens.length,
    );
    const all = selfgc.timelines.map((timeline) => timeline.viewTokens.length).sort((a, b) => b - a);
    expect(lengths).toEqual(all.slice(0, MAX_TIMELINES));
    expect(html).toContain('<code>selfgc</code>');
  });

  it('falls back to the first session-mode strategy when there is no selfgc', () => {
    const other = sampleSummary();
    other.sessionMode = other.sessionMode.filter((result) => result.strategy !== 'selfgc');
    const first = other.sessionMode[0]!;
    const rendered = renderReport(other);
    expect(rendered).toContain(`Token timelines: <code>${first.strategy}</code>`);
    const drawn = elements(rendered, 'polyline', 'data-series', 'view').map((line) => points(line).length);
    const longest = first.timelines.map((timeline) => timeline.viewTokens.length).sort((a, b) => b - a);
    expect(drawn).toEqual(longest.slice(0, MAX_TIMELINES));
  });

  it('escapes text from the summary', () => {
    const hostile = sampleSummary();
    const evil = '<script>alert("x")</script>';
    hostile.command = `selfgc eval ${evil}`;
    hostile.inputs = [`${evil}.jsonl`];
    hostile.cutMode[0]!.strategy = `cut${evil}`;
    hostile.sessionMode[1]!.strategy = `session${evil}`;
    const timeline = hostile.sessionMode.find((result) => result.strategy === 'selfgc')!.timelines[0]!;
    timeline.session = evil;
    timeline.viewTokens.push(...Array.from({ length: 100 }, () => 1000));
    timeline.transcriptTokens.push(...Array.from({ length: 100 }, () => 1000));
    const rendered = renderReport(hostile);
    expect(rendered).not.toContain('<script');
    expect(rendered).toContain('data-session="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"');
    expect(rendered).toContain('data-strategy="cut&lt;script&gt;');
    expect(rendered).toContain('data-bar="session&lt;script&gt;');
  });

  it('renders notes instead of charts for an empty summary', () => {
    const rendered = renderReport(emptySummary());
    expect(rendered).toContain('No cut-mode results in this summary.');
    expect(rendered).toContain('No session-mode results in this summary.');
    expect(rendered).not.toContain('<svg data-chart');
    expect(rendered).not.toMatch(/NaN|undefined|Infinity/);
  });

  it('copes with empty sweeps, empty timelines and zero trials', () => {
    const sparse = sampleSummary();
    sparse.cutMode[0]!.sweep = [];
    for (const result of sparse.sessionMode) result.timelines = [];
    sparse.matched = [];
    const rendered = renderReport(sparse);
    expect(elements(rendered, 'polyline', 'data-strategy')).toHaveLength(sparse.cutMode.length - 1);
    expect(rendered).toContain(`<g data-own="${sparse.cutMode[0]!.strategy}">`);
    expect(rendered).toContain('No session timelines in this summary.');
    expect(rendered).toContain('No matched prune-rate comparison in this summary.');
    expect(rendered).not.toMatch(/NaN|undefined|Infinity/);
    const none = rendered.split('<tr data-strategy="none">')[1]?.split('</tr>')[0] ?? '';
    expect(none).toContain('title="no trials"');
  });

  it('adds the LLM judge column only when the summary has its verdicts', () => {
    expect(html).not.toContain('LLM judge');
    const judged: EvalSummary = {
      ...summary,
      llm: { provider: 'openai', model: 'judge-<model>', judgeSample: 50 },
      cutMode: summary.cutMode.map((result, index) =>
        index === 0
          ? { ...result, llmNoImpact: { hits: 40, total: 50, value: 0.8, low: 0.67, high: 0.89 } }
          : result,
      ),
    };
    const withJudge = renderReport(judged);
    expect(withJudge).toContain(
      'LLM judge no-impact <span class="muted">(judge-&lt;model&gt;, sampled cuts)</span>',
    );
    const cells = elements(withJudge, 'td', 'data-column', 'llm-no-impact');
    expect(cells).toHaveLength(summary.cutMode.length);
    expect(withJudge).toMatch(/<td data-column="llm-no-impact">80\.0% <span class="ci" title="40 of 50">/);
    expect(withJudge).not.toMatch(/NaN|undefined|Infinity/);
  });

  it("draws the judge's scorecards, failure taxonomy and calibration only when the summary has them", () => {
    expect(html).not.toContain('data-table="llm-scorecard"');
    expect(html).not.toContain('data-table="llm-calibration"');
    const rendered = renderReport(withJudgeProtocol(summary));
    const scorecards = rendered.split('data-table="llm-scorecard"')[1]?.split('</table>')[0] ?? '';
    expect(scorecards).toContain("a pass, the judge's no-impact, has every dimension at 4 or more");
    const row = scorecards.split('<tr data-strategy="selfgc|llm">')[1]?.split('</tr>')[0] ?? '';
    expect(row).toContain('<td data-column="llm-pass">75.0% <span class="ci" title="15 of 20">');
    expect(row).toContain('<td data-column="mean-information_sufficiency">4.25</td>');
    expect(row).toContain('<td data-column="mean-correctness">4.88</td>');
    expect(row).toContain('<td data-column="failure-missing-identifier">2</td>');
    expect(row).toContain('<td data-column="failure-lost-plan-or-constraint">1</td>');
    expect(row).toContain('<td data-column="culprits">3 / 1 / 1 / 0</td>');
    expect(row).toContain('<code>function:read_file</code> 2, <code>conversation:user</code> 1');
    const calibration = rendered.split('data-table="llm-calibration"')[1]?.split('</table>')[0] ?? '';
    expect(calibration).toContain('<td data-column="flips">25.0% <span class="ci" title="1 of 4">');
    expect(calibration).toContain('<td data-column="slot-a">57.1% <span class="ci" title="4 of 7">');
    expect(calibration).toContain('<td data-column="consistent">1 / 1 / 1</td>');
    expect(calibration).toContain('<td data-column="agreement">66.7% <span class="ci" title="2 of 3">');
    expect(rendered).not.toMatch(/NaN|undefined|Infinity/);
  });

  it('draws the latest-turn audit of plans and commits, flagging any edit that reached the latest turn', () => {
    expect(html).not.toContain('id="latest-turn-audit"');
    const rendered = renderReport(withJudgeProtocol(summary));
    const audit = rendered.split('data-table="latest-turn-audit"')[1]?.split('</table>')[0] ?? '';
    expect(audit).toContain('should be none (none found)');
    expect(elements(audit, 'tr', 'data-mode')).toEqual([
      { 'data-strategy': 'selfgc', 'data-mode': 'cut' },
      { 'data-strategy': summary.sessionMode[0]!.strategy, 'data-mode': 'session' },
    ]);
    expect(audit).toContain('<td data-column="refused">3</td>');
    expect(audit).toContain('<td data-column="window-rescue">2</td>');
    const broken = withJudgeProtocol(summary);
    broken.cutMode = broken.cutMode.map((result) =>
      result.latestTurnAudit
        ? { ...result, latestTurnAudit: { ...result.latestTurnAudit, applied: 1 } }
        : result,
    );
    const flagged = renderReport(broken);
    expect(flagged).toContain('should be none (1 found)');
    expect(elements(flagged, 'tr', 'class', 'flagged')).toHaveLength(1);
  });

  it('shows the rare-token judge beside the anchor judge for every strategy of both modes', () => {
    const cutRows = html.split('data-table="cut-mode"')[1]?.split('</table>')[0] ?? '';
    const sessionRows = html.split('data-table="session-mode"')[1]?.split('</table>')[0] ?? '';
    expect(cutRows).toContain(
      '<th scope="col">Rare-token no-impact</th><th scope="col">Rare-token score</th>',
    );
    expect(sessionRows).toContain('<th scope="col">Rare-token no-impact (changed calls)</th>');
    expect(elements(cutRows, 'td', 'data-column', 'rare-token')).toHaveLength(summary.cutMode.length);
    expect(elements(sessionRows, 'td', 'data-column', 'rare-token')).toHaveLength(summary.sessionMode.length);
    const selfgc = summary.cutMode.find((result) => result.strategy === 'selfgc')!.own.rareTokens!;
    const row = cutRows.split('<tr data-strategy="selfgc">')[1]?.split('</tr>')[0] ?? '';
    expect(row).toContain(
      `<td data-column="rare-token">${(selfgc.noImpact.value * 100).toFixed(1)}% <span class="ci" title="${selfgc.noImpact.hits} of ${selfgc.noImpact.total}">`,
    );
    expect(row).toContain(`<td data-column="rare-token-score">${selfgc.meanScore.toFixed(3)}</td>`);
    expect(html).toContain('the rare-token judge, which shares no code with it');
  });

  it('draws dashes for the rare-token judge in a summary written before it', () => {
    const older = withoutRareTokens(summary);
    const rendered = renderReport(older);
    const cells = elements(rendered, 'td', 'data-column', 'rare-token-score');
    expect(cells).toHaveLength(summary.cutMode.length + summary.sessionMode.length);
    expect(rendered.match(/<td data-column="rare-token-score">\u2014<\/td>/g)).toHaveLength(cells.length);
    expect(rendered).not.toMatch(/NaN|undefined|Infinity/);
  });

  it('refuses a summary of another version', () => {
    expect(() => renderReport({ ...sampleSummary(), version: 99 })).toThrow(BadInputError);
  });
});

describe('niceTicks', () => {
  it('covers the maximum with round steps', () => {
    expect(niceTicks(1.3, 5)).toEqual([0, 0.5, 1, 1.5]);
    expect(niceTicks(1, 5)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(140_000, 4)).toEqual([0, 50_000, 100_000, 150_000]);
    expect(niceTicks(0)).toEqual([0, 1]);
  });
});
