import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { toOpenAIChat } from '../adapters/openai-chat/convert-to-openai-chat.js';
import { BadInputError } from '../core/errors.js';
import type { Message } from '../core/transcript.js';
import { defaultEntryModel } from '../core/valuator/entry-model.js';
import type { EvalSummary } from './eval-summary.js';
import { holdOutFamilies } from './hold-out-families.js';
import { loadSessions } from './load-sessions.js';
import { renderMarkdown } from './report/render-markdown.js';
import { sampleSummary } from './report/sample-summary.js';
import { type RunEvalOptions, runEval } from './run-eval.js';
import { recallingSession } from './testing/eval-fixtures.js';
import { collectExamples } from './train-valuator.js';

const directory = mkdtempSync(join(tmpdir(), 'selfgc-hold-out-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function family(name: string, sessions: Record<string, Message[]>): string {
  const file = join(directory, `${name}.jsonl`);
  writeFileSync(
    file,
    Object.entries(sessions)
      .map(([id, messages]) => JSON.stringify({ id, messages: toOpenAIChat(messages).messages }))
      .join('\n'),
  );
  return file;
}

describe('holdOutFamilies', () => {
  const files = [
    family('review-agent', { r1: recallingSession(24), r2: recallingSession(18) }),
    family('quote-agent', { q1: recallingSession(30), q2: recallingSession(20) }),
  ];
  const sessions = loadSessions(files);

  it('replays each family with a model fitted on the others, beside the shipped one and none', async () => {
    const runs: Array<{ sessions: string[]; model: unknown }> = [];
    const recording = (
      chosen: Parameters<typeof runEval>[0],
      options: RunEvalOptions,
    ): Promise<EvalSummary> => {
      runs.push({ sessions: chosen.map((session) => session.id), model: options.entryModel });
      return runEval(chosen, options);
    };
    const shipped = defaultEntryModel();
    const stages: string[] = [];
    const rows = await holdOutFamilies(
      sessions,
      { window: 1500, workers: 1, shippedModel: shipped, onStage: (stage) => stages.push(stage) },
      recording,
    );
    expect(rows.map((row) => row.family)).toEqual(['review-agent', 'quote-agent']);
    // Each family three times: with the model fitted without it, with the shipped model, with none.
    expect(runs.map((run) => run.sessions)).toEqual([
      ['r1', 'r2'],
      ['r1', 'r2'],
      ['r1', 'r2'],
      ['q1', 'q2'],
      ['q1', 'q2'],
      ['q1', 'q2'],
    ]);
    expect(runs[1]!.model).toBe(shipped);
    expect(runs[2]!.model).toBe('none');
    expect(runs[4]!.model).toBe(shipped);
    expect(runs[5]!.model).toBe('none');
    // The held-out model learned from the other family alone.
    const examples = collectExamples(sessions);
    const fitted = runs[0]!.model as { trainedOn: { families: string[]; examples: number } };
    expect(fitted.trainedOn.families).toEqual(['quote-agent']);
    expect(rows[0]!.trainingExamples).toBe(examples.families.filter((name) => name === 'quote-agent').length);
    expect((runs[3]!.model as typeof fitted).trainedOn.families).toEqual(['review-agent']);
    for (const row of rows) {
      expect(row.shippedModelSawFamily).toBe(false);
      expect(row.heldOut.sessions).toBe(2);
      expect(row.heldOut.calls).toBeGreaterThan(0);
      expect(row.heldOut.calls).toBe(row.shipped.calls);
      expect(row.withoutModel.calls).toBe(row.shipped.calls);
      expect(row.heldOut.strictNoImpactChanged.total).toBeGreaterThan(0);
    }
    expect(stages.at(-1)).toBe('leave one family out 2/2: quote-agent (2 sessions)');

    const markdown = renderMarkdown({ ...sampleSummary(), leaveOneFamilyOut: rows });
    expect(markdown).toContain('## Leave one family out');
    expect(markdown).toMatch(/\| review-agent \| 2 \| .* \| no \| /);
    expect(markdown).toContain('no model: strict no-impact [95% CI]');
  }, 120_000);

  it('says why it cannot run on one family', async () => {
    const single = loadSessions([files[0]!]);
    await expect(
      holdOutFamilies(single, { window: 1500, shippedModel: defaultEntryModel() }, runEval),
    ).rejects.toThrow(BadInputError);
    await expect(
      holdOutFamilies(single, { window: 1500, shippedModel: defaultEntryModel() }, runEval),
    ).rejects.toThrow(/at least two files: each file is a family/);
  });
});
