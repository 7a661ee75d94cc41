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
import { carriesOutput, createLedger, messageReferenceText } from '../core/ledger.js';
import { recentStepsStart } from '../core/ledger-measures.js';
import { approximateTokenCounter } from '../core/tokens.js';
import type { Message } from '../core/transcript.js';
import { ENTRY_FEATURES, entryFeaturizer, LATEST_STEPS } from '../core/valuator/entry-features.js';
import { ENTRY_MODEL_FORMAT, type EntryModel, rankInMessage } from '../core/valuator/entry-model.js';
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
  /** The message each example's entry came from, at its call: one number per message and call. */
  messages: number[];
  sessions: number;
  /** The horizon the labels looked ahead (assistant messages). */
  horizon: number;
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
  const horizon = Math.max(1, options.horizon ?? DEFAULT_HORIZON);
  const set: ExampleSet = {
    rows: [],
    labels: [],
    weights: [],
    families: [],
    messages: [],
    sessions: 0,
    horizon,
  };
  let messageIds = 0;
  const sampling = Math.max(1, options.negativeSampling ?? 16);
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
        if (message.role !== 'assistant' && !carriesOutput(ledger, index)) continue;
        for (const entry of messageEntries(message).anchors)
          if (!featurizer.shownElsewhere(entry)) holders.set(entry.value, { entry, holder: index });
      }
      if (holders.size === 0) continue;
      const ids = new Map<number, number>();
      for (const [value, { entry, holder }] of holders) {
        const label = used.has(value) ? 1 : 0;
        if (label === 0 && sampleHash(`${session.id}\n${cut}\n${value}`) % sampling !== 0) continue;
        set.rows.push(featurizer.features(entry, holder));
        set.labels.push(label);
        set.weights.push(label === 1 ? 1 : sampling);
        set.families.push(family);
        let id = ids.get(holder);
        if (id === undefined) {
          id = messageIds++;
          ids.set(holder, id);
        }
        set.messages.push(id);
      }
    }
    set.sessions += 1;
    onSession?.(set.sessions);
  }
  return set;
}

type Examples = Pick<ExampleSet, 'rows' | 'labels' | 'weights' | 'messages'>;

/** Rows of the set that pass `keep(family)`. */
function subset(set: ExampleSet, keep: (family: string) => boolean): Examples {
  const rows: number[][] = [];
  const labels: number[] = [];
  const weights: number[] = [];
  const messages: number[] = [];
  set.families.forEach((family, index) => {
    if (!keep(family)) return;
    rows.push(set.rows[index]!);
    labels.push(set.labels[index]!);
    weights.push(set.weights[index]!);
    messages.push(set.messages[index]!);
  });
  return { rows, labels, weights, messages };
}

/** The examples' indexes by message, of the messages that hold a used entry and an unused one. */
function mixedMessages(examples: Examples): number[][] {
  const byMessage = new Map<number, number[]>();
  examples.messages.forEach((message, index) => {
    const indexes = byMessage.get(message);
    if (indexes) indexes.push(index);
    else byMessage.set(message, [index]);
  });
  return [...byMessage.values()].filter((indexes) => {
    const used = indexes.filter((index) => examples.labels[index] === 1).length;
    return used > 0 && used < indexes.length;
  });
}

/**
 * The weights that order a message's entries: a logistic fit on the features less their mean
 * over the message's entries, so that what all of them share (the message's age, its holder, how
 * many anchors it has) drops out and only what sets one entry apart from the others counts.
 */
function fitWithinMessages(examples: Examples): EntryModel['withinMessage'] {
  const rows: number[][] = [];
  const labels: number[] = [];
  const weights: number[] = [];
  for (const indexes of mixedMessages(examples)) {
    const width = examples.rows[indexes[0]!]!.length;
    const mean = new Array<number>(width).fill(0);
    let total = 0;
    for (const index of indexes) {
      total += examples.weights[index]!;
      examples.rows[index]!.forEach((value, column) => {
        mean[column]! += examples.weights[index]! * value;
      });
    }
    for (const index of indexes) {
      rows.push(examples.rows[index]!.map((value, column) => value - mean[column]! / total));
      labels.push(examples.labels[index]!);
      weights.push(examples.weights[index]!);
    }
  }
  if (rows.length === 0) return undefined;
  const fit = fitLogistic(rows, labels, weights);
  return { scale: fit.scale, weights: fit.weights };
}

/**
 * How well a model orders the entries of one message: the AUC within each message that holds a
 * used entry and an unused one, averaged with the used entries as weights.
 */
function messageAuc(model: EntryModel, examples: Examples): number {
  let sum = 0;
  let used = 0;
  for (const indexes of mixedMessages(examples)) {
    const auc = rocAuc(
      indexes.map((index) => rankInMessage(model, examples.rows[index]!)),
      indexes.map((index) => examples.labels[index]!),
      indexes.map((index) => examples.weights[index]!),
    );
    const positives = indexes.filter((index) => examples.labels[index] === 1).length;
    sum += auc * positives;
    used += positives;
  }
  return used === 0 ? Number.NaN : sum / used;
}

/** Fit a model on the rows whose family passes `keep` (all by default). */
export function fitEntryModel(set: ExampleSet, keep: (family: string) => boolean = () => true): EntryModel {
  const examples = subset(set, keep);
  const { rows, labels, weights } = examples;
  if (rows.length === 0)
    throw new BadInputError('no training examples: the sessions hold no calls with older work');
  if (!labels.includes(1) || !labels.includes(0))
    throw new BadInputError(
      'training needs anchors the agent used again and anchors it did not: these sessions hold only one kind',
    );
  const fit = fitLogistic(rows, labels, weights);
  const withinMessage = fitWithinMessages(examples);
  const families = [...new Set(set.families.filter(keep))].sort();
  const model: EntryModel = {
    format: ENTRY_MODEL_FORMAT,
    version: 1,
    features: [...ENTRY_FEATURES],
    mean: fit.mean,
    scale: fit.scale,
    weights: fit.weights,
    bias: fit.bias,
    ...(withinMessage === undefined ? {} : { withinMessage }),
  };
  model.trainedOn = {
    families,
    horizon: set.horizon,
    examples: rows.length,
    used: labels.filter((label) => label === 1).length,
    auc: round(modelAuc(model, rows, labels, weights)),
    messageAuc: round(messageAuc(model, examples)),
  };
  return model;
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

/**
 * AUC of a model on the rows whose family passes `keep`, over all of them (`auc`, the score) and
 * within each message (`messageAuc`, the order).
 */
export function evaluateEntryModel(
  model: EntryModel,
  set: ExampleSet,
  keep: (family: string) => boolean = () => true,
): { auc: number; messageAuc: number } {
  const examples = subset(set, keep);
  return {
    auc: modelAuc(model, examples.rows, examples.labels, examples.weights),
    messageAuc: messageAuc(model, examples),
  };
}

/**
 * One row of leave-one-family-out: the family's AUCs under a model fitted without it, and with
 * it (over all its entries, and within its messages).
 */
export interface FamilyValidation {
  family: string;
  examples: number;
  heldOutAuc: number;
  inFamilyAuc: number;
  heldOutMessageAuc: number;
  inFamilyMessageAuc: number;
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
    const heldOut = evaluateEntryModel(withoutIt, set, only);
    const inFamily = evaluateEntryModel(all, set, only);
    return {
      family,
      examples: set.families.filter(only).length,
      heldOutAuc: round(heldOut.auc),
      inFamilyAuc: round(inFamily.auc),
      heldOutMessageAuc: round(heldOut.messageAuc),
      inFamilyMessageAuc: round(inFamily.messageAuc),
    };
  });
}
