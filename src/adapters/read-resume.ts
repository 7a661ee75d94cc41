/**
 * Reading a conversation again from part-way: when the wire messages before some index are the
 * ones an earlier reading saw (the proxy's transcript cache knows they are), a `from*` adapter
 * can start at that index with what they read as, instead of reading them again. The result is
 * the same as a whole reading.
 */
import type { Message } from '../core/transcript.js';

/** A reading of wire messages, with where each one's canonical messages end. */
export interface ElementReading {
  messages: Message[];
  /**
   * `ends[0]`: the canonical messages read before the first wire message (a top-level system
   * prompt); `ends[i + 1]`: those read once wire message `i` is.
   */
  ends: number[];
}

/** Where a reading takes up again. */
export interface ReadResume {
  /** The index of the first wire message to read (at least 1). */
  index: number;
  /** An earlier reading of the same wire messages up to `index` at least (and of the same rest). */
  before: Readonly<ElementReading>;
}

/** What an earlier reading held before wire message `index`. */
export function readBefore(resume: ReadResume, index = resume.index): ElementReading {
  const { messages, ends } = resume.before;
  return { messages: messages.slice(0, ends[index]), ends: ends.slice(0, index + 1) };
}

/** Tool names by call id, as a reading has met them by the end of `messages`. */
export function toolNamesOf(messages: readonly Message[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const message of messages) {
    for (const part of message.parts) if (part.type === 'tool-call') names.set(part.id, part.name);
  }
  return names;
}
