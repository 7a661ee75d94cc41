import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message } from '../core/transcript.js';
import { fromAnthropicMessages } from './anthropic/convert-from-anthropic-messages.js';
import { toAnthropicMessages } from './anthropic/convert-to-anthropic-messages.js';
import { fromOpenAIChat } from './openai-chat/convert-from-openai-chat.js';
import { toOpenAIChat } from './openai-chat/convert-to-openai-chat.js';
import { fromOpenAIResponses } from './openai-responses/convert-from-openai-responses.js';
import { toOpenAIResponses } from './openai-responses/convert-to-openai-responses.js';
import type { ElementReading, ReadResume } from './read-resume.js';
import { transcriptArbitrary } from './transcript-arbitrary.js';

/** Each adapter as wire messages plus what else it reads (Anthropic's `system`). */
interface Reader {
  name: string;
  wire(transcript: Message[]): {
    elements: unknown[];
    read(elements: unknown[], resume?: ReadResume): ElementReading;
  };
}

const READERS: Reader[] = [
  {
    name: 'anthropic',
    wire(transcript) {
      const { system, messages } = toAnthropicMessages(transcript);
      return {
        elements: messages,
        read: (elements, resume) =>
          fromAnthropicMessages(
            { ...(system === undefined ? {} : { system }), messages: elements } as never,
            resume,
          ),
      };
    },
  },
  {
    name: 'openai-chat',
    wire: (transcript) => ({
      elements: toOpenAIChat(transcript).messages,
      read: (elements, resume) => fromOpenAIChat(elements as never, resume),
    }),
  },
  {
    name: 'openai-responses',
    wire: (transcript) => ({
      elements: toOpenAIResponses(transcript).messages,
      read: (elements, resume) => fromOpenAIResponses(elements as never, resume),
    }),
  },
];

describe('reading from part-way (ReadResume)', () => {
  it.each(READERS)(
    '$name: reads as a whole reading does, after an earlier reading of the prefix',
    (reader) => {
      fc.assert(
        fc.property(
          transcriptArbitrary({ maxTurns: 3 }),
          fc.nat(),
          fc.nat(),
          (transcript, cut, earlierEnd) => {
            const { elements, read } = reader.wire(transcript);
            fc.pre(elements.length > 1);
            const index = 1 + (cut % (elements.length - 1));
            // The earlier request held the same elements up to `index` and maybe some of what follows.
            const before = read(elements.slice(0, index + (earlierEnd % (elements.length - index + 1))));
            const whole = read(elements);
            const resumed = read(elements, { index, before });
            expect(resumed.messages).toEqual(whole.messages);
            expect(resumed.ends).toEqual(whole.ends);
            expect(whole.ends).toHaveLength(elements.length + 1);
            expect(whole.ends.at(-1)).toBe(whole.messages.length);
          },
        ),
        { numRuns: 150 },
      );
    },
  );

  it('a Responses run that goes on past the resume point is read again whole', () => {
    const items = [
      { role: 'user', content: 'go' },
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'thinking' }] },
      { type: 'function_call', call_id: 'c1', name: 'read_file', arguments: '{}' },
    ];
    const before = fromOpenAIResponses(items.slice(0, 2) as never);
    const resumed = fromOpenAIResponses(items as never, { index: 2, before });
    expect(resumed).toEqual(fromOpenAIResponses(items as never));
    expect(resumed.messages).toHaveLength(2);
    expect(resumed.messages[1]!.parts.map((part) => part.type)).toEqual(['reasoning', 'tool-call']);
    // The earlier reading's run is not changed in place.
    expect(before.messages[1]!.parts).toHaveLength(1);
  });

  it('names the absolute index of a malformed message met after the resume point', () => {
    const messages = [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user' }];
    const before = fromOpenAIChat(messages.slice(0, 2) as never);
    expect(() => fromOpenAIChat(messages as never, { index: 2, before })).toThrow(/openai-chat message 2/);
  });
});
