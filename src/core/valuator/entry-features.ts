/**
 * The valuator's signals for the anchors a fold index may list (a path, a name, a number from
 * one message): what the transcript shows about whether the agent will use the anchor again soon. Pure functions of the ledger at the time of the call; the learned model in
 * `entry-model.ts` turns them into a future-use score.
 */
import { type Anchor, anchorWeight } from '../anchors.js';
import { entriesOf, messageEntries } from '../index-entries.js';
import { carriesOutput, type Ledger, messageReferenceText, requestParts } from '../ledger.js';
import { recentStepsStart } from '../ledger-measures.js';
import { messageMemo } from '../message-memo.js';
import type { Message } from '../transcript.js';

/** Feature names, in the order `entryFeatures` returns them (and a model stores its weights). */
export const ENTRY_FEATURES = [
  /** log(1 + assistant steps since the message that holds the entry). */
  'age',
  /** log(1 + assistant steps since any message last held the entry). */
  'lastSeen',
  /** log(1 + messages that hold the entry). */
  'mentions',
  /** log(1 + assistant messages that hold the entry: the agent wrote it or ran it). */
  'agentMentions',
  /** 1 when a user message holds the entry. */
  'userMention',
  /** 1 when the holder is an assistant message (its own plan, command or code). */
  'holderIsAgent',
  /** 1 for a path or URL. */
  'isPath',
  /** 1 for a number or hash. */
  'isNumber',
  /** log(1 + characters). */
  'length',
  /** Share of the entry's words that the latest messages use (lexical nearness to the live task). */
  'latestOverlap',
  /** The extractor's kind weight, as fold summaries rank anchors without a model. */
  'kindWeight',
  /** log(1 + the entry's place among its message's anchors, best first): a message's best names are its few first. */
  'rankInMessage',
  /** log(1 + anchors its message holds): one name among a listing's hundreds says less. */
  'messageAnchors',
] as const;

export type EntryFeatureName = (typeof ENTRY_FEATURES)[number];

/** How many of the latest messages count as the live task for `latestOverlap`. */
const LATEST_MESSAGES = 4;

const WORDS = /[A-Za-z0-9_]{3,}/g;

interface EntryStats {
  count: number;
  agent: number;
  user: boolean;
  /** Held by a user or system message (visible while the request or the instructions are). */
  request: boolean;
  /** Index of the last message that held it. */
  last: number;
}

/** Per-ledger statistics, extended as the ledger grows (a ledger only appends). */
interface LedgerStats {
  upTo: number;
  byValue: Map<string, EntryStats>;
  /** `assistantBefore[i]`: assistant messages before index `i`. */
  assistantBefore: number[];
  latestWords: { at: number; words: Set<string> } | undefined;
}

const statsByLedger = new WeakMap<Ledger, LedgerStats>();

function statsOf(ledger: Ledger): LedgerStats {
  let stats = statsByLedger.get(ledger);
  if (!stats) {
    stats = { upTo: 0, byValue: new Map(), assistantBefore: [0], latestWords: undefined };
    statsByLedger.set(ledger, stats);
  }
  const { byValue } = stats;
  for (let index = stats.upTo; index < ledger.messages.length; index += 1) {
    const message = ledger.messages[index]!;
    const agent = message.role === 'assistant';
    // A user message that is a text-protocol client's observation is output, not the user's words;
    // so are the outputs a client attached to a request.
    const user = message.role === 'user' && !carriesOutput(ledger, index);
    const request = user || message.role === 'system';
    const record = (entry: Anchor, spoken: boolean) => {
      const known = byValue.get(entry.value);
      if (known) {
        known.count += 1;
        if (agent) known.agent += 1;
        if (user && spoken) known.user = true;
        if (request && spoken) known.request = true;
        known.last = index;
      } else {
        const said = { user: user && spoken, request: request && spoken };
        byValue.set(entry.value, { count: 1, agent: agent ? 1 : 0, ...said, last: index });
      }
    };
    const { words, attached } = user ? requestParts(message) : { words: message };
    const own = entriesOf(words);
    for (const entry of own) record(entry, true);
    if (attached) {
      const heard = new Set(own.map((entry) => entry.value));
      for (const entry of entriesOf(attached)) if (!heard.has(entry.value)) record(entry, false);
    }
    stats.assistantBefore[index + 1] = (stats.assistantBefore[index] ?? 0) + (agent ? 1 : 0);
  }
  stats.upTo = ledger.messages.length;
  return stats;
}

function latestWords(ledger: Ledger, stats: LedgerStats): Set<string> {
  const at = ledger.messages.length;
  if (stats.latestWords?.at === at) return stats.latestWords.words;
  const words = new Set<string>();
  for (let index = Math.max(0, at - LATEST_MESSAGES); index < at; index += 1)
    for (const word of messageReferenceText(ledger.messages[index]!).match(WORDS) ?? [])
      words.add(word.toLowerCase());
  stats.latestWords = { at, words };
  return words;
}

const ranksByMessage = messageMemo<Map<string, number>>();

/** Each anchor of a message by its place in the message's ranked anchors (the first place kept). */
function anchorRanks(message: Message): Map<string, number> {
  let ranks = ranksByMessage.get(message);
  if (!ranks) {
    ranks = new Map();
    for (const [rank, entry] of messageEntries(message).anchors.entries())
      if (!ranks.has(entry.value)) ranks.set(entry.value, rank);
    ranksByMessage.set(message, ranks);
  }
  return ranks;
}

/** Computes the features of entries against one ledger as it stands now. */
export interface EntryFeaturizer {
  features(entry: Anchor, holder: number): number[];
  /**
   * Whether the entry is visible without any index: a request or the instructions hold it, or a
   * message of the latest steps does. The model is fitted on the other entries only.
   */
  shownElsewhere(entry: Anchor): boolean;
}

/** Assistant steps at the end of a transcript that count as its latest steps. */
export const LATEST_STEPS = 6;

export function entryFeaturizer(ledger: Ledger): EntryFeaturizer {
  const stats = statsOf(ledger);
  const now = stats.assistantBefore[ledger.messages.length] ?? 0;
  const latest = latestWords(ledger, stats);
  const latestStart = recentStepsStart(ledger, ledger.messages.length, LATEST_STEPS);
  return {
    shownElsewhere(entry) {
      const seen = stats.byValue.get(entry.value);
      return seen !== undefined && (seen.request || seen.last >= latestStart);
    },
    features(entry, holder) {
      const seen = stats.byValue.get(entry.value);
      const holderMessage = ledger.messages[holder];
      const words = entry.value.match(WORDS) ?? [];
      const ranks = holderMessage === undefined ? undefined : anchorRanks(holderMessage);
      let near = 0;
      for (const word of words) if (latest.has(word.toLowerCase())) near += 1;
      return [
        Math.log1p(now - (stats.assistantBefore[holder] ?? 0)),
        Math.log1p(now - (stats.assistantBefore[seen?.last ?? holder] ?? 0)),
        Math.log1p(seen?.count ?? 1),
        Math.log1p(seen?.agent ?? 0),
        seen?.user === true ? 1 : 0,
        holderMessage?.role === 'assistant' ? 1 : 0,
        entry.kind === 'path' || entry.kind === 'url' ? 1 : 0,
        entry.kind === 'number' || entry.kind === 'hash' ? 1 : 0,
        Math.log1p(entry.value.length),
        words.length === 0 ? 0 : near / words.length,
        anchorWeight(entry),
        Math.log1p(ranks?.get(entry.value) ?? ranks?.size ?? 0),
        Math.log1p(ranks?.size ?? 0),
      ];
    },
  };
}
