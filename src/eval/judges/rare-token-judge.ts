/**
 * The rare-token judge: a second definition of no-impact, reported beside the anchor judge's so
 * that no result hinges on what one extractor calls an anchor. It knows no kinds of string; it
 * asks whether the tokens the agent went on to use that are rare — in the session and in
 * general language — are still in what the model was shown.
 *
 * Defined per judged view (a cut, or a model call in session mode), over the prefix P of N
 * messages before it:
 *
 * - **Tokens** of a text: maximal runs of letters, digits and `_`, lowercased, of 3 to 64
 *   characters (`src/cache.py` gives `src`, `cache`; `evict_entry` stays whole).
 * - **Text** of a message: its text, reasoning and opaque parts, each tool call's name and
 *   argument values, each tool result's text.
 * - **Document frequency** df(t): the messages of P whose text holds token t.
 * - **Rare**: 1 ≤ df(t) ≤ max(1, ⌊RARE_SHARE × N⌋) — present before the cut, in few messages —
 *   and t is no common word of general language (`word-vocabulary.ts`: o200k_base does not
 *   encode ` t` as one piece). A session alone is too small a corpus to tell `probably` from
 *   `evict_entry`: both may sit in two of its messages.
 * - **Needed**: the tokens of the continuation (assistant messages only: their text and tool
 *   calls, reasoning left out as for the anchor judge) that are rare.
 * - **Visible**: a needed token is visible when an unchanged view item stands for a message that
 *   holds it, or the text of a changed item (a fold summary, a tombstone) holds it as a token.
 * - **Pass**: every needed token is visible (a view that needs none passes).
 * - **Score**: the share of needed tokens visible, each weighted by idf(t) = ln(1 + N / df(t)),
 *   so the rarest weigh most; 1 when none is needed.
 *
 * Nothing recoverable counts here: a token behind a recovery pointer is not visible.
 */
import type { ViewItem } from '../../core/project-view.js';
import type { Message, Part } from '../../core/transcript.js';
import { argumentValues } from './anchor-extractor.js';
import { createBpeVocabulary, type WordVocabulary } from './word-vocabulary.js';

/** A token held by more than this share of the prefix's messages is common: the session's own vocabulary. */
export const RARE_SHARE = 0.05;
/** Shorter runs are syntax and stop words; longer ones are blobs (base64, minified code). */
const SHORTEST_TOKEN = 3;
const LONGEST_TOKEN = 64;

const TOKEN = /[\p{L}\p{N}_]+/gu;

/** Shared by every judged view of the process; its table loads on the first question. */
const BPE_VOCABULARY = createBpeVocabulary();

/** The distinct tokens of a text. */
export function rareJudgeTokens(textValue: string): Set<string> {
  const tokens = new Set<string>();
  for (const [run] of textValue.matchAll(TOKEN))
    if (run.length >= SHORTEST_TOKEN && run.length <= LONGEST_TOKEN) tokens.add(run.toLowerCase());
  return tokens;
}

function partText(part: Part): string {
  switch (part.type) {
    case 'text':
    case 'reasoning':
    case 'opaque':
      return part.text;
    case 'image':
      return '';
    case 'tool-call':
      return `${part.name}\n${argumentValues(part.arguments)}`;
    case 'tool-result':
      return typeof part.content === 'string'
        ? part.content
        : part.content.map((inner) => (inner.type === 'image' ? '' : inner.text)).join('\n');
  }
}

/** What the model reads of a message. */
function shownText(message: Message): string {
  return message.parts.map(partText).join('\n');
}

/** What the agent wrote in a continuation message: its text and tool calls. */
function writtenText(message: Message): string {
  return message.parts
    .filter((part) => part.type === 'text' || part.type === 'tool-call')
    .map(partText)
    .join('\n');
}

/**
 * The prefix's tokens, message by message: which messages hold each token. Grows with the
 * prefix, so a replay indexes each message once however many views it judges.
 */
export interface TokenIndex {
  /** Messages indexed so far: the prefix P. */
  readonly size: number;
  append(messages: readonly Message[]): void;
  /** Indexes of the messages that hold `token`, ascending (empty when none does). */
  holders(token: string): readonly number[];
}

export function createTokenIndex(messages: readonly Message[] = []): TokenIndex {
  const postings = new Map<string, number[]>();
  let size = 0;
  const index: TokenIndex = {
    get size() {
      return size;
    },
    append(appended) {
      for (const message of appended) {
        for (const token of rareJudgeTokens(shownText(message))) {
          const list = postings.get(token);
          if (list) list.push(size);
          else postings.set(token, [size]);
        }
        size += 1;
      }
    },
    holders(token) {
      return postings.get(token) ?? [];
    },
  };
  index.append(messages);
  return index;
}

/** A needed token: the prefix messages that hold it, and its idf weight. */
export interface RareToken {
  holders: readonly number[];
  weight: number;
}

/** The rare tokens a continuation needs, computed once per cut and shared by every strategy judged there. */
export type NeededRareTokens = ReadonlyMap<string, RareToken>;

/** The most messages a rare token may sit in, for a prefix of `size` messages. */
export function rareLimit(size: number): number {
  return Math.max(1, Math.floor(RARE_SHARE * size));
}

export function neededRareTokens(
  index: TokenIndex,
  continuation: readonly Message[],
  vocabulary: WordVocabulary = BPE_VOCABULARY,
): NeededRareTokens {
  const needed = new Map<string, RareToken>();
  const limit = rareLimit(index.size);
  for (const message of continuation) {
    if (message.role !== 'assistant') continue;
    for (const token of rareJudgeTokens(writtenText(message))) {
      const holders = index.holders(token);
      if (holders.length === 0 || holders.length > limit || needed.has(token)) continue;
      if (vocabulary.isCommonWord(token)) continue;
      // A copy: the index's list grows as the prefix does.
      needed.set(token, { holders: [...holders], weight: Math.log(1 + index.size / holders.length) });
    }
  }
  return needed;
}

export interface RareTokenVerdict {
  needed: string[];
  /** Needed tokens no view item shows. */
  missing: string[];
  pass: boolean;
  /** Idf-weighted share of the needed tokens that are visible, in [0, 1]. */
  score: number;
}

export interface RareTokenJudgeInput {
  /** The prefix's tokens, indexed up to the cut. */
  index: TokenIndex;
  items: readonly ViewItem[];
  continuation: readonly Message[];
  /** `neededRareTokens(index, continuation)`, when the caller already has it. */
  needed?: NeededRareTokens;
  /** Which tokens are common words (default: o200k_base's vocabulary). */
  vocabulary?: WordVocabulary;
}

export function judgeRareTokens(input: RareTokenJudgeInput): RareTokenVerdict {
  const needed = input.needed ?? neededRareTokens(input.index, input.continuation, input.vocabulary);
  const unchanged = new Set<number>();
  const changedTokens = new Set<string>();
  for (const item of input.items) {
    if (!item.changed) unchanged.add(item.source);
    else for (const token of rareJudgeTokens(shownText(item.message))) changedTokens.add(token);
  }
  const missing: string[] = [];
  let total = 0;
  let visible = 0;
  for (const [token, { holders, weight }] of needed) {
    total += weight;
    if (changedTokens.has(token) || holders.some((holder) => unchanged.has(holder))) visible += weight;
    else missing.push(token);
  }
  return {
    needed: [...needed.keys()],
    missing,
    pass: missing.length === 0,
    score: total === 0 ? 1 : visible / total,
  };
}
