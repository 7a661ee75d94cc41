/**
 * The learned part of the valuator: a logistic model over the entry features that scores how
 * likely the agent is to use an entry of a fold index within its next steps. With a model, fold
 * indexes list each message's entries by this score. Stored as JSON (`selfgc train` writes one
 * from a user's own sessions); `defaultEntryModel()` is the one fitted on the recorded sessions
 * the project evaluates on.
 */
import { z } from 'zod';
import type { Anchor } from '../anchors.js';
import { BadInputError } from '../errors.js';
import type { Ledger } from '../ledger.js';
import defaultModelJson from './default-entry-model.json' with { type: 'json' };
import { ENTRY_FEATURES, entryFeaturizer } from './entry-features.js';
import { predictLogistic } from './logistic.js';

export const ENTRY_MODEL_FORMAT = 'selfgc-entry-valuator';

const finite = z.number().finite();

const entryModelSchema = z
  .object({
    format: z.literal(ENTRY_MODEL_FORMAT),
    version: z.literal(1),
    features: z.array(z.string()),
    mean: z.array(finite),
    scale: z.array(finite.refine((value) => value > 0, 'scale must be positive')),
    weights: z.array(finite),
    bias: finite,
    /** What it was fitted on, for the record (sessions, examples, families, training AUC). */
    trainedOn: z.record(z.string(), z.unknown()).optional(),
  })
  .superRefine((model, context) => {
    const expected = ENTRY_FEATURES.join(',');
    if (model.features.join(',') !== expected)
      context.addIssue({
        code: 'custom',
        message: `features must be ${expected} (this version's signals), not ${model.features.join(',')}`,
      });
    for (const key of ['mean', 'scale', 'weights'] as const)
      if (model[key].length !== ENTRY_FEATURES.length)
        context.addIssue({ code: 'custom', message: `${key} needs ${ENTRY_FEATURES.length} numbers` });
  });

export type EntryModel = z.infer<typeof entryModelSchema>;

/** Read a model from parsed JSON; a clear error names what is wrong. */
export function parseEntryModel(value: unknown, source = 'model'): EntryModel {
  const parsed = entryModelSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    throw new BadInputError(`${source} is not a Self-GC entry valuator model${where}: ${issue.message}`);
  }
  return parsed.data;
}

let defaultModel: EntryModel | undefined;

/** The model fitted on the project's recorded sessions (`--model default`). */
export function defaultEntryModel(): EntryModel {
  defaultModel ??= parseEntryModel(defaultModelJson, 'the default entry model');
  return defaultModel;
}

/** Scores entries of the ledger as it stands now: P(used within the next steps). */
export type EntryScorer = (entry: Anchor, holder: number) => number;

/** The latest scorer of each ledger: one governance call rehearses many folds on the same ledger. */
const scorers = new WeakMap<Ledger, { model: EntryModel; length: number; score: EntryScorer }>();

/** The same scorer while the ledger holds the same messages, so that what is kept by scorer is reused. */
export function entryScorer(model: EntryModel, ledger: Ledger): EntryScorer {
  const length = ledger.messages.length;
  const known = scorers.get(ledger);
  if (known?.model === model && known.length === length) return known.score;
  const featurizer = entryFeaturizer(ledger);
  const score: EntryScorer = (entry, holder) =>
    featurizer.shownElsewhere(entry) ? 0 : predictLogistic(model, featurizer.features(entry, holder));
  scorers.set(ledger, { model, length, score });
  return score;
}
