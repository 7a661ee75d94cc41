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

/**
 * The wire messages a transcript was read from, with the reading: a writer may send back as it
 * came each one whose canonical messages its view holds whole.
 */
export interface WireSource<E> {
  elements: readonly E[];
  reading: Readonly<ElementReading>;
}

/** Wire messages a view holds whole: the client's own, and how many canonical messages they were read as. */
export interface WholeElements<E> {
  elements: readonly E[];
  length: number;
}

/**
 * A lookup of `source`: the wire messages read as the canonical messages from `index` of
 * `messages` on, when those stand there whole (the same objects, in order). A wire message read
 * as no message of its own (a Responses item that joins the assistant message before it) goes
 * with the wire message before it.
 */
export function wholeElementsOf<E>(
  source: WireSource<E>,
): (messages: readonly Message[], index: number) => WholeElements<E> | undefined {
  const { elements, reading } = source;
  const { messages: read, ends } = reading;
  const groups = new Map<Message, { from: number; to: number; start: number; end: number }>();
  let group: { from: number; to: number; start: number; end: number } | undefined;
  for (let wire = 0; wire < elements.length && wire + 1 < ends.length; wire += 1) {
    const [start, end] = [ends[wire]!, ends[wire + 1]!];
    if (end > start) {
      group = { from: wire, to: wire + 1, start, end };
      groups.set(read[start]!, group);
    } else if (group !== undefined) group.to = wire + 1;
  }
  return (messages, index) => {
    const found = groups.get(messages[index]!);
    if (found === undefined) return undefined;
    for (let at = found.start; at < found.end; at += 1)
      if (messages[index + at - found.start] !== read[at]) return undefined;
    return { elements: elements.slice(found.from, found.to), length: found.end - found.start };
  };
}

/**
 * A view written as wire messages one canonical message at a time by `write`, except where a
 * `source` holds the messages whole: there the client's own wire messages.
 */
export function writeEachMessage<E>(
  messages: readonly Message[],
  source: WireSource<E> | undefined,
  write: (message: Message, index: number) => readonly E[],
): E[] {
  const out: E[] = [];
  const wholeAt = source === undefined ? undefined : wholeElementsOf(source);
  for (let index = 0; index < messages.length; index += 1) {
    const whole = wholeAt?.(messages, index);
    if (whole === undefined) out.push(...write(messages[index]!, index));
    else {
      out.push(...whole.elements);
      index += whole.length - 1;
    }
  }
  return out;
}
