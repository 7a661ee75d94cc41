/**
 * Fitting the entry valuator on recorded sessions, with labels from the sessions themselves: at
 * a call, every anchor a fold index could list from the older messages is an example, labelled 1
 * when one of the next assistant messages uses it (writes it, or passes it to a tool). Anchors the
 * request, the instructions or the latest steps show are left out: they are visible without any
 * index.
 */
import { type Anchor, anchorValues } from '../core/anchors.js';
import { BadInputError } from '../core/errors.js';
import { messageEntries } from '../core/index-entries.js';
import { createLedger, messageReferenceText } from '../core/ledger.js';
import { recentStepsStart } from '../core/ledger-measures.js';
import { approximateTokenCounter } from '../core/tokens.js';
import type { Message } from '../core/transcript.js';
import { ENTRY_FEATURES, entryFeaturizer, LATEST_STEPS } from '../core/valuator/entry-features.js';
import { ENTRY_MODEL_FORMAT, type EntryModel } from '../core/valuator/entry-model.js';
import { fitLogistic, rocAuc } from '../core/valuator/logistic.js';
import { familyOf, type RecordedSession } from './load-sessions.js';

export interface TrainingOptions {
  /** Calls sampled per session, evenly spread (default 16). */
  callsPerSession?: number;
  /** One unused entry in this many is kept, weighted back up (default 16). */
  negativeSampling?: number;
  /**
   * Assistant messages after a call whose use of an anchor labels it (default 20): a fold's
   * index stands for many calls after the one that folded it, so the label looks that far.
   */
  horizon?: number;
}

export const DEFAULT_HORIZON = 20;

/**
 * The anchors the next `count` assistant messages from `cut` on use: in what they write and in
 * the arguments of the tools they call.
 */
function usedAnchors(messages: readonly Message[], cut: number, count: number): Set<string> {
  const used = new Set<string>();
  let seen = 0;
  for (let index = cut; index < messages.length && seen < count; index += 1) {
    const message = messages[index]!;
    if (message.role !== 'assistant') continue;
    seen += 1;
    for (const value of anchorValues(messageReferenceText(message))) used.add(value);
  }
  return used;
}

/** Examples as flat arrays, grouped by family (the file a session came from). */
export interface ExampleSet {
  rows: number[][];
  labels: number[];
  weights: number[];
  families: string[];
  sessions: number;
}

/** A small deterministic hash for sampling (FNV-1a). */
function sampleHash(value: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < value.length; index += 1) {
    hash ^= value.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

function callIndexes(messages: readonly Message[], count: number): number[] {
  const calls = messages.flatMap((message, index) =>
    message.role === 'assistant' && index > 2 ? [index] : [],
  );
  if (calls.length <= count) return calls;
  return Array.from(
    { length: count },
    (_, order) => calls[Math.floor(((order + 0.5) * calls.length) / count)]!,
  );
}

/** Collect the examples of the given sessions. */
export function collectExamples(
  sessions: readonly RecordedSession[],
  options: TrainingOptions = {},
  onSession?: (done: number) => void,
): ExampleSet {
  const set: ExampleSet = { rows: [], labels: [], weights: [], families: [], sessions: 0 };
  const sampling = Math.max(1, options.negativeSampling ?? 16);
  const horizon = Math.max(1, options.horizon ?? DEFAULT_HORIZON);
  for (const session of sessions) {
    const family = familyOf(session);
    const ledger = createLedger({ tokenCounter: approximateTokenCounter, indexAnchors: false });
    for (const cut of callIndexes(session.messages, options.callsPerSession ?? 16)) {
      ledger.append(session.messages.slice(ledger.messages.length, cut));
      const featurizer = entryFeaturizer(ledger);
      const recentStart = recentStepsStart(ledger, cut, LATEST_STEPS);
      const used = usedAnchors(session.messages, cut, horizon);
      const holders = new Map<string, { entry: Anchor; holder: number }>();
      for (let index = 0; index < recentStart; index += 1) {
        const message = ledger.messages[index]!;
        if (message.role !== 'assistant' && message.role !== 'tool') continue;
        for (const entry of messageEntries(message).anchors)
          if (!featurizer.shownElsewhere(entry)) holders.set(entry.value, { entry, holder: index });
      }
      if (holders.size === 0) continue;
      for (const [value, { entry, holder }] of holders) {
        const label = used.has(value) ? 1 : 0;
        if (label === 0 && sampleHash(`${session.id}\n${cut}\n${value}`) % sampling !== 0) continue;
        set.rows.push(featurizer.features(entry, holder));
        set.labels.push(label);
        set.weights.push(label === 1 ? 1 : sampling);
        set.families.push(family);
      }
    }
    set.sessions += 1;
    onSession?.(set.sessions);
  }
  return set;
}

/** Rows of the set that pass `keep(family)`. */
function subset(set: ExampleSet, keep: (family: string) => boolean) {
  const rows: number[][] = [];
  const labels: number[] = [];
  const weights: number[] = [];
  set.families.forEach((family, index) => {
    if (!keep(family)) return;
    rows.push(set.rows[index]!);
    labels.push(set.labels[index]!);
    weights.push(set.weights[index]!);
  });
  return { rows, labels, weights };
}

/** Fit a model on the rows whose family passes `keep` (all by default). */
export function fitEntryModel(set: ExampleSet, keep: (family: string) => boolean = () => true): EntryModel {
  const { rows, labels, weights } = subset(set, keep);
  if (rows.length === 0)
    throw new BadInputError('no training examples: the sessions hold no calls with older work');
  if (!labels.includes(1) || !labels.includes(0))
    throw new BadInputError(
      'training needs anchors the agent used again and anchors it did not: these sessions hold only one kind',
    );
  const fit = fitLogistic(rows, labels, weights);
  const families = [...new Set(set.families.filter(keep))].sort();
  return {
    format: ENTRY_MODEL_FORMAT,
    version: 1,
    features: [...ENTRY_FEATURES],
    mean: fit.mean,
    scale: fit.scale,
    weights: fit.weights,
    bias: fit.bias,
    trainedOn: {
      families,
      examples: rows.length,
      used: labels.filter((label) => label === 1).length,
      auc: round(modelAuc({ ...fit }, rows, labels, weights)),
    },
  };
}

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}

function modelAuc(
  model: Pick<EntryModel, 'mean' | 'scale' | 'weights' | 'bias'>,
  rows: readonly number[][],
  labels: readonly number[],
  weights: readonly number[],
): number {
  const scores = rows.map((row) => {
    let z = model.bias;
    row.forEach((value, column) => {
      z += model.weights[column]! * ((value - model.mean[column]!) / model.scale[column]!);
    });
    return z;
  });
  return rocAuc(scores, labels, weights);
}

/** AUC of a model on the rows whose family passes `keep`. */
export function evaluateEntryModel(
  model: EntryModel,
  set: ExampleSet,
  keep: (family: string) => boolean = () => true,
): number {
  const { rows, labels, weights } = subset(set, keep);
  return modelAuc(model, rows, labels, weights);
}

/** One row of leave-one-family-out: the family's AUC under a model fitted without it, and with it. */
export interface FamilyValidation {
  family: string;
  examples: number;
  heldOutAuc: number;
  inFamilyAuc: number;
}

/**
 * Leave-one-family-out: for each family, fit on all the others and score it; beside that, the
 * model fitted on every family (the shipped way) scored on the same family.
 */
export function leaveOneFamilyOut(set: ExampleSet): FamilyValidation[] {
  const all = fitEntryModel(set);
  const families = [...new Set(set.families)].sort();
  return families.map((family) => {
    const only = (candidate: string) => candidate === family;
    const withoutIt = families.length > 1 ? fitEntryModel(set, (candidate) => candidate !== family) : all;
    return {
      family,
      examples: set.families.filter(only).length,
      heldOutAuc: round(evaluateEntryModel(withoutIt, set, only)),
      inFamilyAuc: round(evaluateEntryModel(all, set, only)),
    };
  });
}
