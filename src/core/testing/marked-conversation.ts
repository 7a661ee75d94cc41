/**
 * Conversations whose every tool output carries its conversation's marker (`alpha`, `bravo`),
 * for tests that check no content of one history reaches another's view or recovery.
 */

import { type Message, messageText } from '../transcript.js';
import { systemMessage, toolRound, userMessage } from './transcript-builders.js';

/** Output of one file read: every line names the conversation's marker and the round. */
export function fileBody(marker: string, round: number): string {
  return Array.from(
    { length: 24 },
    (_, line) =>
      `${marker}_secret_${round}_${line} = compute_${marker}(${round}, ${line})  # ${marker}_note_${round}`,
  ).join('\n');
}

export function round(marker: string, index: number): Message[] {
  return toolRound(
    `call_${marker}_${index}`,
    'read_file',
    { path: `src/${marker}/mod_${index}.py` },
    fileBody(marker, index),
    {
      text: `Reading module ${index}.`,
    },
  );
}

/** One conversation: the same system prompt and request every time (so the same auto session id). */
export function conversation(marker: string, rounds: number, from = 1): Message[] {
  const messages = [systemMessage('You are a coding agent.'), userMessage('Review every module and report.')];
  for (let index = from; index < from + rounds; index += 1) messages.push(...round(marker, index));
  return messages;
}

export const MARKER = /\b(?:alpha|bravo)_(?:secret|note)_\d+(?:_\d+)?\b|\bcompute_(?:alpha|bravo)\b/g;

export function markersOf(textValue: string): Set<string> {
  return new Set(textValue.match(MARKER) ?? []);
}

export function transcriptText(messages: readonly Message[]): string {
  return messages.map((message) => messageText(message)).join('\n');
}

/** What the view or a recovered payload shows that the transcript does not hold. */
export function foreign(shown: string, messages: readonly Message[]): string[] {
  const sent = markersOf(transcriptText(messages));
  return [...markersOf(shown)].filter((marker) => !sent.has(marker));
}
