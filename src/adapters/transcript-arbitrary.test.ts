import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message } from '../core/transcript.js';
import { spacedJson, transcriptArbitrary } from './transcript-arbitrary.js';

function calls(messages: readonly Message[]) {
  return messages.flatMap((message) =>
    message.parts.flatMap((part) => (part.type === 'tool-call' ? [part] : [])),
  );
}

describe('transcriptArbitrary', () => {
  it('makes valid transcripts: unique ids, every result answers an earlier call, JSON arguments', () => {
    fc.assert(
      fc.property(transcriptArbitrary(), (transcript) => {
        const ids = calls(transcript).map((part) => part.id);
        expect(new Set(ids).size).toBe(ids.length);
        const seen = new Set<string>();
        const answered = new Set<string>();
        for (const message of transcript) {
          expect(message.parts.length).toBeGreaterThan(0);
          for (const part of message.parts) {
            if (part.type === 'tool-call') seen.add(part.id);
            if (part.type === 'tool-result') {
              expect(message.role).toBe('tool');
              expect(seen.has(part.callId)).toBe(true);
              answered.add(part.callId);
            }
          }
        }
        expect([...answered].sort()).toEqual([...seen].sort());
        for (const part of calls(transcript)) expect(() => JSON.parse(part.arguments)).not.toThrow();
      }),
    );
  });

  it('honours its options', () => {
    const options = { system: 'always', reasoning: [], userImages: false, toolErrors: false } as const;
    fc.assert(
      fc.property(transcriptArbitrary(options), (transcript) => {
        expect(transcript[0]?.role).toBe('system');
        const parts = transcript.flatMap((message) => message.parts);
        expect(parts.some((part) => part.type === 'reasoning' || part.type === 'image')).toBe(false);
        expect(parts.some((part) => part.type === 'tool-result' && part.isError)).toBe(false);
      }),
    );
  });

  it('can end a run mid-call, with the last calls unanswered', () => {
    const ends = fc.sample(transcriptArbitrary({ endMidCall: true }), 200).filter((transcript) => {
      const last = transcript.at(-1);
      return last?.role === 'assistant' && last.parts.some((part) => part.type === 'tool-call');
    });
    expect(ends.length).toBeGreaterThan(0);
  });

  it('writes Python-style spaced JSON that parses to the same value', () => {
    const value = { command: 'ls -la', flags: [1, true, null], nested: { a: 'b' } };
    expect(spacedJson(value)).toBe('{"command": "ls -la", "flags": [1, true, null], "nested": {"a": "b"}}');
    expect(JSON.parse(spacedJson(value))).toEqual(value);
  });
});
