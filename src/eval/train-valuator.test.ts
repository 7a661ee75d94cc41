import { describe, expect, it } from 'vitest';
import { ENTRY_FEATURES } from '../core/valuator/entry-features.js';
import { parseEntryModel } from '../core/valuator/entry-model.js';
import { familyOf, type RecordedSession } from './load-sessions.js';
import { recallingSession } from './testing/eval-fixtures.js';
import {
  collectExamples,
  type ExampleSet,
  evaluateEntryModel,
  fitEntryModel,
  leaveOneFamilyOut,
} from './train-valuator.js';

function sessions(): RecordedSession[] {
  return [
    { id: 'a', file: '/data/review-agent.jsonl', line: 1, messages: recallingSession(24), warnings: [] },
    { id: 'b', file: '/data/review-agent.jsonl', line: 2, messages: recallingSession(18), warnings: [] },
    { id: 'c', file: '/data/other-agent.jsonl', line: 1, messages: recallingSession(30), warnings: [] },
  ];
}

describe('training the entry valuator', () => {
  it('labels an anchor 1 when the next assistant messages use it, from older messages only', () => {
    const set = collectExamples(sessions(), { negativeSampling: 1 });
    expect(set.sessions).toBe(3);
    expect(set.rows.length).toBeGreaterThan(100);
    expect(set.labels).toContain(1);
    expect(set.labels).toContain(0);
    // Every unused anchor is kept at sampling 1, each with weight 1.
    expect(new Set(set.weights)).toEqual(new Set([1]));
    expect(new Set(set.families)).toEqual(new Set(['review-agent', 'other-agent']));
    expect(set.messages).toHaveLength(set.rows.length);
    // The agent quotes the names of the module read two steps back: recent use scores above old.
    const model = fitEntryModel(set);
    expect((model.trainedOn as { auc: number }).auc).toBeGreaterThan(0.6);
  });

  it('samples unused anchors and weighs them back up, the same way on every run', () => {
    const full = collectExamples(sessions(), { negativeSampling: 1 });
    const sampled = collectExamples(sessions(), { negativeSampling: 4 });
    expect(sampled.labels.filter((label) => label === 1)).toHaveLength(
      full.labels.filter((label) => label === 1).length,
    );
    expect(sampled.rows.length).toBeLessThan(full.rows.length);
    expect(sampled.weights.filter((weight) => weight === 4).length).toBeGreaterThan(0);
    expect(collectExamples(sessions(), { negativeSampling: 4 })).toEqual(sampled);
  });

  it('fits a model that reads back as one, and validates each family left out', () => {
    const set = collectExamples(sessions());
    const model = parseEntryModel(JSON.parse(JSON.stringify(fitEntryModel(set))));
    expect(model.trainedOn).toMatchObject({ families: ['other-agent', 'review-agent'] });
    expect(model.withinMessage?.weights).toHaveLength(ENTRY_FEATURES.length);
    const rows = leaveOneFamilyOut(set);
    expect(rows.map((row) => row.family)).toEqual(['other-agent', 'review-agent']);
    for (const row of rows) {
      expect(row.examples).toBeGreaterThan(0);
      expect(row.heldOutAuc).toBeGreaterThan(0.5);
      expect(row.inFamilyAuc).toBeGreaterThan(0.5);
    }
  });

  it('fits the order within a message apart: what sets an entry apart there can differ from what sets messages apart', () => {
    // Across messages, those with longer entries are used less; within a used message, its
    // longest entries are the ones used.
    const length = ENTRY_FEATURES.indexOf('length');
    // The examples are made here, not collected from sessions.
    const set: ExampleSet = collectExamples([], { horizon: 3 });
    for (let message = 0; message < 60; message += 1)
      for (let entry = 0; entry < 10; entry += 1) {
        const row = ENTRY_FEATURES.map(() => 0);
        row[length] = message / 10 + entry / 10;
        set.rows.push(row);
        set.labels.push(message < 30 && (entry >= 7 || (entry === 3 && message % 3 === 0)) ? 1 : 0);
        set.weights.push(1);
        set.families.push(message % 2 === 0 ? 'even' : 'odd');
        set.messages.push(message);
      }
    const model = fitEntryModel(set);
    expect(model.weights[length]).toBeLessThan(0);
    expect(model.withinMessage!.weights[length]).toBeGreaterThan(0);
    const { withinMessage: _, ...scoreOnly } = model;
    const ordered = evaluateEntryModel(model, set);
    expect(ordered.messageAuc).toBeGreaterThan(0.8);
    expect(evaluateEntryModel(scoreOnly, set).messageAuc).toBeLessThan(0.2);
    expect(model.trainedOn).toMatchObject({ messageAuc: Math.round(ordered.messageAuc * 10_000) / 10_000 });
    // Fitted on one family, the order holds on the other.
    for (const row of leaveOneFamilyOut(set)) {
      expect(row.heldOutMessageAuc).toBeGreaterThan(0.8);
      expect(row.inFamilyMessageAuc).toBeGreaterThan(0.8);
    }
  });

  it('names a family by its file', () => {
    expect(familyOf({ file: '/x/codex-cli_entire-checkpoints.jsonl' })).toBe('codex-cli_entire-checkpoints');
  });
});
