/**
 * The room transparent recovery has: the room of the conversation (the view's, plus what
 * governance kept free for recovery), minus the view, minus what recovery already appended (assistant turns, tool results), measured as the governor
 * measures a view (message by message, with framing, by one token counter). Recovered content is
 * cut into pages that fit that room, so a request sent after an expand stays inside the window.
 */
import { countMessageTokens } from '../core/ledger.js';
import type { TokenCounter } from '../core/tokens.js';
import type { JsonObject, WireDialect } from './wire-dialect.js';

/** Tokens kept free for each call's own note (the line naming the next page, or the lack of room). */
export const NOTE_TOKENS = 64;
/** A page smaller than this is not worth its round: the call is told there is no room instead. */
export const MIN_PAGE_TOKENS = 32;
/**
 * Kept free after a round's results, so that a further round (the model asking for the next
 * page) still fits its own turn and can at least be told there is no room.
 */
export const ROUND_RESERVE_TOKENS = 256;

/**
 * The share of the room a conversation has (the window less tool definitions, instructions and
 * the output reserve) that governance keeps free for recovered pages, when the proxy may answer
 * recovery calls: a view governed to the brim would leave a recovery call no room at all.
 */
export const RECOVERY_ROOM_SHARE = 0.2;
/** And at most this many tokens: a page of a few hundred lines, a few percent of a long window. */
export const MAX_RECOVERY_ROOM = 8_192;

/** The room kept free for recovered pages out of `conversationRoom` tokens. */
export function recoveryRoom(conversationRoom: number): number {
  return Math.min(MAX_RECOVERY_ROOM, Math.floor(Math.max(0, conversationRoom) * RECOVERY_ROOM_SHARE));
}

/**
 * What governance keeps free for recovery out of `conversationRoom`: room for its pages, and what
 * a round needs besides them (its note, and the reserve for a further round), which a view
 * governed close to its room would otherwise leave it without.
 */
export function recoveryReserve(conversationRoom: number): number {
  const pages = recoveryRoom(conversationRoom);
  return pages === 0 ? 0 : pages + NOTE_TOKENS + ROUND_RESERVE_TOKENS;
}

export interface RecoveryWindow {
  /** The room of the conversation: the view's room plus the room kept free for recovery. */
  windowTokens: number;
  /** Tokens of the view, as the governor counted them. */
  viewTokens: number;
}

export interface RecoveryBudget extends RecoveryWindow {
  readonly counter: TokenCounter;
  /** Tokens of the conversation last measured: the view, plus what recovery appended since. */
  used(): number;
  /** Measure a body recovery continued from the first one; returns the tokens it carries. */
  measure(body: JsonObject): number;
  /** Count text appended after the last measure (a result just written). */
  charge(text: string): void;
  /**
   * Tokens one of `calls` results may take: an even share of the room left, notes and reserve set
   * aside, and never more than the room governance keeps free for recovery (a page), so a long
   * object is read in pages of one size whatever the view happens to leave free.
   */
  share(calls: number): number;
}

export function createRecoveryBudget(
  window: RecoveryWindow,
  dialect: WireDialect,
  first: JsonObject,
  counter: TokenCounter,
): RecoveryBudget {
  // Recovery only appends: the first body's messages are the view, already counted.
  const viewMessages = dialect.readTranscript(first).length;
  let used = window.viewTokens;
  return {
    ...window,
    counter,
    used: () => used,
    measure(body) {
      const appended = dialect.readTranscript(body).slice(viewMessages);
      used =
        window.viewTokens + appended.reduce((sum, message) => sum + countMessageTokens(counter, message), 0);
      return used;
    },
    charge(text) {
      used += counter.count(text);
    },
    share(calls) {
      const room = window.windowTokens - used - NOTE_TOKENS * calls - ROUND_RESERVE_TOKENS;
      const even = Math.floor(room / Math.max(1, calls));
      return Math.max(0, Math.min(recoveryRoom(window.windowTokens), even));
    },
  };
}

/** The size of a piece from `offset`, shortened by one when it would end inside a surrogate pair. */
function wholeCharacters(text: string, offset: number, size: number): number {
  const code = text.charCodeAt(offset + size - 1);
  const splits = offset + size < text.length && code >= 0xd800 && code <= 0xdbff;
  return splits ? size - 1 : size;
}

/**
 * The longest piece of `text` from `offset` that fits `budget` tokens, ending at a line break
 * (or an escaped `\n` of JSON text) when one falls in its second half; `end` is where the next page starts (`offset` itself when
 * not even one character fits). A few counts of shrinking candidates, never of the whole text
 * (a span can be hundreds of thousands of characters).
 */
export function cutPage(
  text: string,
  offset: number,
  budget: number,
  counter: TokenCounter,
): { page: string; end: number } {
  const rest = text.length - offset;
  const lead = text.charCodeAt(offset);
  // The first character alone: the least a page can hold.
  const first = Math.min(rest, lead >= 0xd800 && lead <= 0xdbff ? 2 : 1);
  let fits = 0;
  let size = wholeCharacters(text, offset, Math.min(rest, budget * 4));
  for (let attempt = 0; attempt < 8 && size > fits && size >= first; attempt += 1) {
    const tokens = counter.count(text.slice(offset, offset + size));
    if (tokens <= budget) {
      fits = size;
      if (size === rest || tokens >= budget * 0.9) break;
      size = Math.min(rest, Math.floor((size * budget * 0.95) / Math.max(1, tokens)));
    } else {
      size = size === first ? 0 : Math.max(first, Math.floor((size * budget * 0.95) / tokens));
    }
    size = wholeCharacters(text, offset, size);
  }
  let end = offset + fits;
  if (end < text.length) {
    // A line break, or one written as `\n` inside JSON text (tool results a client sends as
    // JSON, Cline's), where the page can end after it.
    const escaped = end < 2 ? -1 : text.lastIndexOf('\\n', end - 2);
    const lineEnd = Math.max(text.lastIndexOf('\n', end - 1) + 1, escaped < 0 ? 0 : escaped + 2);
    if (lineEnd > offset + fits / 2) end = lineEnd;
  }
  return { page: text.slice(offset, end), end };
}
