import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BadInputError } from '../core/errors.js';
import type { Message, Part } from '../core/transcript.js';
import { normalizeTranscript } from './normalize-transcript.js';
import { transcriptArbitrary } from './transcript-arbitrary.js';

const user = (value: string): Message => ({ role: 'user', parts: [{ type: 'text', text: value }] });
const call = (id: string, args = '{}'): Part => ({ type: 'tool-call', id, name: 'bash', arguments: args });
const result = (
  callId: string,
  content: Extract<Part, { type: 'tool-result' }>['content'] = 'ok',
): Message => ({
  role: 'tool',
  parts: [{ type: 'tool-result', callId, name: 'bash', content }],
});
const codes = (messages: Message[]) =>
  normalizeTranscript(messages).warnings.map((warning) => [warning.code, warning.messageIndex]);

describe('normalizeTranscript errors', () => {
  it('refuses an unknown role, naming the message index', () => {
    const bad = [user('hi'), { role: 'robot', parts: [] } as unknown as Message];
    expect(() => normalizeTranscript(bad)).toThrow(BadInputError);
    expect(() => normalizeTranscript(bad)).toThrow(/message 1: unknown role "robot"/);
    try {
      normalizeTranscript(bad);
    } catch (error) {
      expect((error as BadInputError).messageIndex).toBe(1);
    }
  });

  it('refuses an unknown part type or missing parts', () => {
    expect(() =>
      normalizeTranscript([{ role: 'user', parts: [{ type: 'audio' }] } as unknown as Message]),
    ).toThrow(/message 0: unknown part type "audio"/);
    expect(() => normalizeTranscript([{ role: 'user' } as unknown as Message])).toThrow(
      /parts must be an array/,
    );
  });
});

describe('normalizeTranscript repairs', () => {
  it('orphan-tool-result: becomes user text that keeps the content', () => {
    const { messages, warnings } = normalizeTranscript([user('go'), result('ghost', 'stale output')]);
    expect(messages[1]).toEqual({
      role: 'user',
      parts: [{ type: 'text', text: '[tool result for unknown call ghost]: stale output' }],
    });
    expect(warnings).toEqual([expect.objectContaining({ code: 'orphan-tool-result', messageIndex: 1 })]);
  });

  it('orphan-tool-result with list content keeps every part after a header', () => {
    const image = { type: 'image', ref: 'https://example.com/x.png', source: 'url' } as const;
    const { messages } = normalizeTranscript([result('ghost', [{ type: 'text', text: 'a' }, image])]);
    expect(messages).toEqual([
      {
        role: 'user',
        parts: [
          { type: 'text', text: '[tool result for unknown call ghost]:' },
          { type: 'text', text: 'a' },
          image,
        ],
      },
    ]);
  });

  it('orphan-tool-result: a result before its call is an orphan too', () => {
    expect(codes([result('c1'), { role: 'assistant', parts: [call('c1')] }, result('c1')])).toEqual([
      ['orphan-tool-result', 0],
    ]);
  });

  it('duplicate-tool-call-id: renames the later call and the result that answers it', () => {
    const transcript: Message[] = [
      { role: 'assistant', parts: [call('c1')] },
      result('c1', 'first'),
      { role: 'assistant', parts: [call('c1')] },
      result('c1', 'second'),
    ];
    const { messages, warnings } = normalizeTranscript(transcript);
    expect(messages[2]?.parts[0]).toMatchObject({ id: 'c1__2' });
    expect(messages[3]?.parts[0]).toMatchObject({ callId: 'c1__2', content: 'second' });
    expect(messages[1]).toBe(transcript[1]);
    expect(warnings.map((warning) => [warning.code, warning.messageIndex])).toEqual([
      ['duplicate-tool-call-id', 2],
    ]);
  });

  it('duplicate-tool-call-id: parallel duplicates are answered in order and skip taken ids', () => {
    const transcript: Message[] = [
      { role: 'assistant', parts: [call('x__2')] },
      result('x__2'),
      { role: 'assistant', parts: [call('x'), call('x')] },
      result('x', 'one'),
      result('x', 'two'),
    ];
    const { messages } = normalizeTranscript(transcript);
    expect(messages[2]?.parts.map((part) => (part.type === 'tool-call' ? part.id : ''))).toEqual([
      'x',
      'x__3',
    ]);
    expect(messages[3]?.parts[0]).toMatchObject({ callId: 'x', content: 'one' });
    expect(messages[4]?.parts[0]).toMatchObject({ callId: 'x__3', content: 'two' });
  });

  it('never mutates its input', () => {
    const transcript: Message[] = [
      { role: 'assistant', parts: [call('c'), call('c')] },
      result('c'),
      result('c'),
      result('ghost'),
    ];
    const copy = structuredClone(transcript);
    normalizeTranscript(transcript);
    expect(transcript).toEqual(copy);
  });
});

describe('normalizeTranscript warnings that keep everything', () => {
  it('missing-tool-result: a run that ends mid-call', () => {
    const transcript: Message[] = [user('submit'), { role: 'assistant', parts: [call('end')] }];
    const { messages, warnings } = normalizeTranscript(transcript);
    expect(messages).toEqual(transcript);
    expect(warnings.map((warning) => [warning.code, warning.messageIndex])).toEqual([
      ['missing-tool-result', 1],
    ]);
  });

  it('malformed-tool-arguments: the text stays as it was', () => {
    const transcript: Message[] = [{ role: 'assistant', parts: [call('c', '{"command": "ls')] }, result('c')];
    expect(normalizeTranscript(transcript).messages).toEqual(transcript);
    expect(codes(transcript)).toEqual([['malformed-tool-arguments', 0]]);
  });

  it('empty-content: only where a provider rejects it', () => {
    const transcript: Message[] = [
      { role: 'user', parts: [] },
      { role: 'assistant', parts: [{ type: 'text', text: ' \n' }, call('c')] },
      result('c', ''),
      { role: 'assistant', parts: [{ type: 'text', text: '' }, call('d')] },
      result('d'),
      { role: 'system', parts: [{ type: 'text', text: '  ' }] },
      { role: 'assistant', parts: [] },
    ];
    expect(codes(transcript)).toEqual([
      ['empty-content', 0],
      ['empty-content', 1],
      ['empty-content', 5],
    ]);
  });

  it('huge-content: over a million characters in one part', () => {
    const huge = 'x'.repeat(1_000_001);
    expect(codes([user(huge), user('x'.repeat(1_000_000))])).toEqual([['huge-content', 0]]);
  });
});

/** For every result, the ordinal (among all calls) of the call it answers. */
function pairing(messages: readonly Message[]): number[] {
  const ordinals = new Map<string, number>();
  const pairs: number[] = [];
  for (const part of messages.flatMap((message) => message.parts)) {
    if (part.type === 'tool-call') ordinals.set(part.id, ordinals.size);
    if (part.type === 'tool-result') pairs.push(ordinals.get(part.callId) ?? -1);
  }
  return pairs;
}

describe('normalizeTranscript properties', () => {
  it('leaves a valid transcript as it is', () => {
    fc.assert(
      fc.property(transcriptArbitrary({ endMidCall: true }), (transcript) => {
        const { messages, warnings } = normalizeTranscript(transcript);
        expect(messages).toEqual(transcript);
        const repairs = warnings.filter(
          (warning) => !['empty-content', 'missing-tool-result'].includes(warning.code),
        );
        expect(repairs).toEqual([]);
      }),
    );
  });

  it('when every call shares one id, renaming restores the original pairing, idempotently', () => {
    fc.assert(
      fc.property(transcriptArbitrary(), (transcript) => {
        const collapsed = transcript.map((message) => ({
          ...message,
          parts: message.parts.map((part): Part => {
            if (part.type === 'tool-call') return { ...part, id: 'same' };
            return part.type === 'tool-result' ? { ...part, callId: 'same' } : part;
          }),
        }));
        const once = normalizeTranscript(collapsed).messages;
        expect(pairing(once)).toEqual(pairing(transcript));
        expect(normalizeTranscript(once).messages).toEqual(once);
      }),
    );
  });
});
