/**
 * The contract every adapter passes, run from each adapter's own test file: for random canonical
 * transcripts, `from(to(t))` gives back every text, tool call (id, name, arguments), tool
 * result (id, name, content) and opaque part of its own (whole, in place), with no orphaned
 * results; the wire form is a fixed point (`to(from(w))` is `w`, byte for byte); and whatever an
 * adapter cannot carry, another provider's opaque parts included, is warned about (a warning
 * names every message that changed), never dropped silently.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { BadInputError } from '../core/errors.js';
import type { Message, Part, Warning } from '../core/transcript.js';
import { normalizeTranscript } from './normalize-transcript.js';
import type { ElementReading } from './read-resume.js';
import { type TranscriptArbitraryOptions, transcriptArbitrary } from './transcript-arbitrary.js';

export interface AdapterUnderTest {
  name: string;
  to(messages: Message[]): { wire: unknown; warnings: Warning[] };
  from(wire: unknown): { messages: Message[]; warnings: Warning[]; ends?: number[] };
  /**
   * `to` given the wire form the transcript was read from and the reading (`WireSource`): the
   * wire form of a view of that transcript, the client's own messages where they stand whole.
   */
  toFrom?(view: Message[], wire: unknown, reading: ElementReading): unknown;
  /** The transcripts this adapter carries in full. */
  carries: TranscriptArbitraryOptions;
  /** Part details this adapter cannot carry even then (compared without them). */
  ignores?: { isError?: 'always' | 'with-list-content' };
  /** Tool arguments travel as parsed objects (Anthropic): their JSON value survives, not their spacing. */
  argumentsAsJson?: boolean;
}

const RUNS = { numRuns: 150 };

/** What must survive a round trip: everything but providerData. */
function project(messages: readonly Message[], adapter: AdapterUnderTest): unknown[] {
  return messages.map((message) => ({
    role: message.role,
    parts: message.parts.map((part) => projectPart(part, adapter)),
  }));
}

/** A part without its providerData (an opaque part has none: it is all data). */
function withoutProviderData<P extends Part>(part: P): Omit<P, 'providerData'> {
  const { providerData: _ignored, ...rest } = part as P & { providerData?: unknown };
  return rest;
}

function projectPart(part: Part, adapter: AdapterUnderTest): unknown {
  const rest = withoutProviderData(part);
  if (part.type === 'tool-call' && adapter.argumentsAsJson)
    return { ...rest, arguments: JSON.parse(part.arguments) };
  if (part.type === 'tool-result') {
    const listContent = typeof part.content !== 'string';
    const content = typeof part.content === 'string' ? part.content : part.content.map(withoutProviderData);
    const ignore = adapter.ignores?.isError;
    const dropError = ignore === 'always' || (ignore === 'with-list-content' && listContent);
    const { isError, ...withoutError } = { ...rest, content } as typeof rest & { isError?: boolean };
    return dropError || isError !== true ? withoutError : { ...withoutError, isError };
  }
  return rest;
}

function answeredInOrder(messages: readonly Message[]): boolean {
  const calls = new Set<string>();
  for (const message of messages) {
    for (const part of message.parts) {
      if (part.type === 'tool-call') calls.add(part.id);
      if (part.type === 'tool-result' && !calls.has(part.callId)) return false;
    }
  }
  return true;
}

export function describeAdapterContract(adapter: AdapterUnderTest): void {
  it(`${adapter.name}: from(to(t)) keeps every text, tool call and tool result`, () => {
    fc.assert(
      fc.property(transcriptArbitrary(adapter.carries), (transcript) => {
        const back = adapter.from(adapter.to(transcript).wire).messages;
        expect(project(back, adapter)).toEqual(project(transcript, adapter));
        expect(answeredInOrder(back)).toBe(true);
        const codes = normalizeTranscript(back).warnings.map((warning) => warning.code);
        expect(codes).not.toContain('orphan-tool-result');
        expect(codes).not.toContain('duplicate-tool-call-id');
      }),
      RUNS,
    );
  });

  it(`${adapter.name}: the wire form is a fixed point, byte for byte`, () => {
    fc.assert(
      fc.property(transcriptArbitrary(adapter.carries), (transcript) => {
        const wire = adapter.to(transcript).wire;
        const again = adapter.to(adapter.from(wire).messages);
        expect(JSON.stringify(again.wire)).toBe(JSON.stringify(wire));
      }),
      RUNS,
    );
  });

  it(`${adapter.name}: whatever is lost on the way is warned about`, () => {
    const everything = { toolResultImages: true, endMidCall: true, foreignOpaque: true };
    fc.assert(
      fc.property(transcriptArbitrary(everything), (transcript) => {
        const { wire, warnings } = adapter.to(transcript);
        const back = adapter.from(wire).messages;
        const strict = { ...adapter, ignores: {} };
        const before = project(transcript, strict);
        const after = project(back, strict);
        if (after.length !== before.length) {
          expect(warnings.length).toBeGreaterThan(0);
          return;
        }
        const warned = new Set(warnings.map((warning) => warning.messageIndex));
        before.forEach((message, index) => {
          if (JSON.stringify(message) !== JSON.stringify(after[index])) expect(warned).toContain(index);
        });
      }),
      RUNS,
    );
  });
}

/** A view of a read transcript as governance makes one: messages dropped, changed, or new beside them. */
const viewEdits = fc.array(fc.constantFrom('keep', 'keep', 'drop', 'change', 'note-before'), {
  minLength: 1,
  maxLength: 16,
});

function editedView(messages: readonly Message[], edits: readonly string[]): Message[] {
  return messages.flatMap((message, index) => {
    const edit = edits[index % edits.length];
    if (edit === 'drop') return [];
    if (edit === 'change')
      return [
        { ...message, parts: [{ type: 'text' as const, text: `[folded: ${message.parts.length} parts]` }] },
      ];
    if (edit === 'note-before' && message.role !== 'system')
      return [
        { role: 'user' as const, parts: [{ type: 'text' as const, text: 'a note read from nowhere' }] },
        message,
      ];
    return [message];
  });
}

/**
 * Writing with the wire form a transcript was read from (`toFrom`): an unedited view is the
 * client's wire messages themselves, and any view is written as the same JSON as without them.
 */
export function describeWritingFromSource(
  adapter: AdapterUnderTest,
  wireMessages: (wire: unknown) => unknown[],
): void {
  const toFrom = adapter.toFrom!;
  const readOf = (wire: unknown): ElementReading => {
    const { messages, ends } = adapter.from(wire);
    return { messages, ends: ends ?? [] };
  };

  it(`${adapter.name}: an unedited view is written as the client's own wire messages`, () => {
    fc.assert(
      fc.property(transcriptArbitrary(adapter.carries), (transcript) => {
        const wire = adapter.to(transcript).wire;
        const reading = readOf(wire);
        const again = wireMessages(toFrom([...reading.messages], wire, reading));
        const own = wireMessages(wire);
        expect(again.length).toBe(own.length);
        again.forEach((element, index) => {
          expect(element).toBe(own[index]);
        });
      }),
      RUNS,
    );
  });

  it(`${adapter.name}: any view is written as the same JSON with the source as without`, () => {
    fc.assert(
      fc.property(transcriptArbitrary(adapter.carries), viewEdits, (transcript, edits) => {
        const wire = adapter.to(transcript).wire;
        const reading = readOf(wire);
        const view = editedView(reading.messages, edits);
        expect(JSON.stringify(toFrom([...view], wire, reading))).toBe(
          JSON.stringify(adapter.to([...view]).wire),
        );
      }),
      RUNS,
    );
  });
}

/** A hand-written wire fixture next to the test that reads it. */
export function readFixture(url: URL): unknown {
  return JSON.parse(readFileSync(url, 'utf8'));
}

/** `convert` throws a BadInputError matching `pattern` that names the wire message at `messageIndex`. */
export function expectBadInputAt(convert: () => unknown, pattern: RegExp, messageIndex: number): void {
  expect(convert).toThrow(pattern);
  try {
    convert();
  } catch (error) {
    expect(error).toBeInstanceOf(BadInputError);
    expect((error as BadInputError).messageIndex).toBe(messageIndex);
  }
}
