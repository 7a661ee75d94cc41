/**
 * A session far larger than its window, for tests that every SDK path sends the governed view:
 * what the upstream received must fit the window, whatever helper sent it.
 */
import { countMessageTokens } from '../../core/ledger.js';
import { longSession } from '../../core/testing/long-session.js';
import type { TokenCounter } from '../../core/tokens.js';
import type { Message } from '../../core/transcript.js';

/** The window the governor is given: a few percent of the session. */
export const WINDOW = 6000;

/** About 150k characters (48k tokens) of file reads under one request. */
export function oversizedSession(): Message[] {
  return longSession({ rounds: 36, lines: 60 });
}

/** Tokens of a conversation as the governor counts a view. */
export function conversationTokens(counter: TokenCounter, messages: readonly Message[]): number {
  return messages.reduce((sum, message) => sum + countMessageTokens(counter, message), 0);
}
