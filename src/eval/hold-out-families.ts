/**
 * Leave-one-family-out in the evaluation: for each family (the file its sessions came from), the
 * valuator's model is fitted on every other family, and `selfgc` replays the family's sessions
 * in session mode with that model; beside it, the same replay with the shipped model and with
 * none. A model that holds only on the families it was fitted on shows here as a gap between the
 * first two; what a model adds at all, as the gap to the third.
 */
import type { EntryModel } from '../core/valuator/entry-model.js';
import type { EvalSummary, FamilyHoldOut, FamilyResult } from './eval-summary.js';
import { familyOf, type RecordedSession, requireTwoFamilies } from './load-sessions.js';
import type { RunEvalOptions } from './run-eval.js';
import { collectExamples, fitEntryModel } from './train-valuator.js';

export interface HoldOutOptions {
  window: number;
  workers?: number;
  /** The model that ships (`--model default`). */
  shippedModel: EntryModel;
  /** Where the work is: `fitting` or `replaying`, the family, and how many of how many. */
  onStage?: (stage: string) => void;
}

type Run = (sessions: RecordedSession[], options: RunEvalOptions) => Promise<EvalSummary>;

function familiesIn(model: EntryModel): string[] {
  const families = (model.trainedOn as { families?: unknown } | undefined)?.families;
  return Array.isArray(families)
    ? families.filter((value): value is string => typeof value === 'string')
    : [];
}

/** `selfgc` on `sessions` with `model`: its session-mode result, as a family's. */
async function replayFamily(
  run: Run,
  family: string,
  sessions: RecordedSession[],
  model: EntryModel | 'none',
  options: HoldOutOptions,
): Promise<FamilyResult> {
  const summary = await run(sessions, {
    strategies: ['none', 'selfgc'],
    modes: ['session'],
    sweep: [],
    window: options.window,
    cutsPerSession: 0,
    inputs: [],
    command: '',
    entryModel: model,
    ...(options.workers === undefined ? {} : { workers: options.workers }),
  });
  const result = summary.sessionMode.find((entry) => entry.strategy === 'selfgc')!;
  return {
    family,
    sessions: sessions.length,
    calls: result.calls,
    overWindowCalls: result.overWindowCalls,
    costRelative: result.costRelative,
    strictNoImpactChanged: result.strictNoImpactChanged,
  };
}

export async function holdOutFamilies(
  sessions: readonly RecordedSession[],
  options: HoldOutOptions,
  run: Run,
): Promise<FamilyHoldOut[]> {
  const byFamily = new Map<string, RecordedSession[]>();
  for (const session of sessions) {
    const family = familyOf(session);
    byFamily.set(family, [...(byFamily.get(family) ?? []), session]);
  }
  requireTwoFamilies(sessions);
  options.onStage?.(`leave one family out: collecting training examples from ${sessions.length} sessions`);
  const examples = collectExamples(sessions);
  const shippedFamilies = new Set(familiesIn(options.shippedModel));
  const rows: FamilyHoldOut[] = [];
  let position = 0;
  for (const [family, members] of byFamily) {
    position += 1;
    options.onStage?.(
      `leave one family out ${position}/${byFamily.size}: ${family} (${members.length} sessions)`,
    );
    const keep = (name: string) => name !== family;
    const model = fitEntryModel(examples, keep);
    rows.push({
      family,
      trainingExamples: examples.families.filter(keep).length,
      shippedModelSawFamily: shippedFamilies.has(family),
      heldOut: await replayFamily(run, family, members, model, options),
      shipped: await replayFamily(run, family, members, options.shippedModel, options),
      withoutModel: await replayFamily(run, family, members, 'none', options),
    });
  }
  return rows;
}
