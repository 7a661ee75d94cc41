/**
 * The learned part of the valuator: a logistic model over the entry features that scores how
 * likely the agent is to use an entry of a fold index within its next steps. The score compares
 * entries across messages and spans; a second set of weights,
 * fitted with each message's own traits taken out, orders one message's entries against each
 * other (which of them an index lists first). Stored as JSON (`selfgc train` writes one
 * from a user's own sessions); `defaultEntryModel()` is the one fitted on the recorded sessions
 * the project evaluates on.
 */
import { z } from 'zod';
import type { Anchor } from '../anchors.js';
import { BadInputError } from '../errors.js';
import type { Ledger } from '../ledger.js';
import defaultModelJson from './default-entry-model.json' with { type: 'json' };
import { ENTRY_FEATURES, entryFeaturizer } from './entry-features.js';
import { predictLogistic, sigmoid } from './logistic.js';

export const ENTRY_MODEL_FORMAT = 'selfgc-entry-valuator';

const finite = z.number().finite();
const positive = finite.refine((value) => value > 0, 'scale must be positive');

const entryModelSchema = z
  .object({
    format: z.literal(ENTRY_MODEL_FORMAT),
    version: z.literal(1),
    features: z.array(z.string()),
    mean: z.array(finite),
    scale: z.array(positive),
    weights: z.array(finite),
    bias: finite,
    /**
     * Weights fitted within messages (each feature less its mean over the message's entries),
     * over features divided by `scale`: they order one message's entries. Without them, the
     * score above orders them.
     */
    withinMessage: z.object({ scale: z.array(positive), weights: z.array(finite) }).optional(),
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
    for (const key of ['scale', 'weights'] as const)
      if (model.withinMessage && model.withinMessage[key].length !== ENTRY_FEATURES.length)
        context.addIssue({
          code: 'custom',
          message: `withinMessage.${key} needs ${ENTRY_FEATURES.length} numbers`,
        });
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

/** Scores entries of the ledger as it stands now, in [0, 1]. */
export type EntryScorer = (entry: Anchor, holder: number) => number;

/** Both uses of a model on one ledger as it stands now. */
export interface EntryScorers {
  /** P(used within the next steps): compares entries of different messages and spans. */
  score: EntryScorer;
  /** Orders the entries of one message (higher first); comparable only within a message. */
  rank: EntryScorer;
}

/** The latest scorers of each ledger: one governance call rehearses many folds on the same ledger. */
const scorers = new WeakMap<Ledger, { model: EntryModel; length: number; scorers: EntryScorers }>();

/** The same scorers while the ledger holds the same messages, so that what is kept by scorer is reused. */
export function entryScorers(model: EntryModel, ledger: Ledger): EntryScorers {
  const length = ledger.messages.length;
  const known = scorers.get(ledger);
  if (known?.model === model && known.length === length) return known.scorers;
  const featurizer = entryFeaturizer(ledger);
  const score: EntryScorer = (entry, holder) =>
    featurizer.shownElsewhere(entry) ? 0 : predictLogistic(model, featurizer.features(entry, holder));
  const rank: EntryScorer =
    model.withinMessage === undefined
      ? score
      : (entry, holder) =>
          featurizer.shownElsewhere(entry) ? 0 : rankInMessage(model, featurizer.features(entry, holder));
  const made = { score, rank };
  scorers.set(ledger, { model, length, scorers: made });
  return made;
}

/**
 * An entry's order among the entries of its message under `model`, from its features: higher
 * first, in (0, 1), comparable only within one message.
 */
export function rankInMessage(model: EntryModel, features: readonly number[]): number {
  const within = model.withinMessage;
  if (within === undefined) return predictLogistic(model, features);
  let linear = 0;
  for (let index = 0; index < features.length; index += 1)
    linear += (within.weights[index]! * features[index]!) / within.scale[index]!;
  return sigmoid(linear);
}

/** P(used within the next steps) of entries of the ledger as it stands now. */
export function entryScorer(model: EntryModel, ledger: Ledger): EntryScorer {
  return entryScorers(model, ledger).score;
}
