import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { transcriptArbitrary } from '../transcript-arbitrary.js';
import { toAnthropicMessages } from './convert-to-anthropic-messages.js';
import { countBreakpoints, limitCacheBreakpoints, MAX_CACHE_BREAKPOINTS } from './limit-cache-breakpoints.js';

const cache = { type: 'ephemeral' };
const text = (value: string, marked = false) => ({
  type: 'text',
  text: value,
  ...(marked ? { cache_control: cache } : {}),
});
const user = (...content: unknown[]) => ({ role: 'user', content });
const assistant = (...content: unknown[]) => ({ role: 'assistant', content });
const call = (id: string) => ({ type: 'tool_use', id, name: 'Read', input: { file_path: `/repo/${id}.ts` } });
const result = (id: string, content: string, marked = false) => ({
  type: 'tool_result',
  tool_use_id: id,
  content,
  ...(marked ? { cache_control: cache } : {}),
});

/** Where the breakpoints of a message list sit, as `message.block` (or `message` for the message). */
function marks(messages: readonly unknown[]): string[] {
  const out: string[] = [];
  messages.forEach((message, index) => {
    const record = message as { cache_control?: unknown; content?: unknown };
    if (record.cache_control) out.push(String(index));
    if (Array.isArray(record.content)) {
      record.content.forEach((block, blockIndex) => {
        if (countBreakpoints(block) > 0) out.push(`${index}.${blockIndex}`);
      });
    }
  });
  return out;
}

describe('limitCacheBreakpoints', () => {
  const system = [text('You are a coding agent.', true)];
  const history = [
    user(text('Fix the parser.')),
    assistant(call('a')),
    user(result('a', 'file a'), text('reminder one', true)),
    assistant(call('b')),
    user(result('b', 'file b'), text('reminder two', true)),
  ];

  it('leaves a request governance did not change as it is', () => {
    const client = { system, messages: history };
    const limited = limitCacheBreakpoints(client, { system, messages: history });
    expect(limited.messages).toBe(history);
    expect(limited).toMatchObject({ moved: 0, removed: 0 });
  });

  it('takes off breakpoints earlier requests left, keeping the latest ones', () => {
    // The client marks its last two user turns; the view still carries the marks of two turns before.
    const client = {
      system,
      messages: history.map((message, index) =>
        index === 2 ? user(result('a', 'file a'), text('reminder one')) : message,
      ),
    };
    const stale = [
      user(text('Fix the parser.', true)),
      assistant(call('a')),
      user(result('a', 'file a', true), text('reminder one', true)),
      history[3],
      history[4],
    ];
    const clientMarked = marks(client.messages);
    expect(clientMarked).toEqual(['4.1']);
    const limited = limitCacheBreakpoints(
      { ...client, messages: [...client.messages.slice(0, 4), history[4]] },
      { system, messages: stale },
    );
    expect(marks(limited.messages)).toEqual(['4.1']);
    expect(limited.removed).toBe(3);
    // The input is not changed.
    expect(marks(stale)).toEqual(['0.0', '2.0', '2.1', '4.1']);
  });

  it('counts tools, system and a top-level cache_control against the same four', () => {
    const tools = [{ name: 'Read', input_schema: {}, cache_control: cache }];
    const governed = [
      user(text('one', true)),
      assistant(text('ok', true)),
      user(text('two', true)),
      assistant(text('ok2', true)),
      user(text('three', true)),
    ];
    const client = { tools, system, cache_control: cache, messages: governed };
    const limited = limitCacheBreakpoints(client, { system, messages: governed });
    // Tools, system and the top level take three of the four: the latest message mark stays.
    expect(marks(limited.messages)).toEqual(['4.0']);
    expect(countBreakpoints(tools) + countBreakpoints(system) + 1 + countBreakpoints(limited.messages)).toBe(
      MAX_CACHE_BREAKPOINTS,
    );
  });

  it('caps a client that sent more than four at four', () => {
    const messages = [1, 2, 3, 4, 5, 6].map((turn) =>
      turn % 2 === 1 ? user(text(`u${turn}`, true)) : assistant(text(`a${turn}`, true)),
    );
    const limited = limitCacheBreakpoints({ messages }, { messages });
    expect(marks(limited.messages)).toEqual(['2.0', '3.0', '4.0', '5.0']);
  });

  it('moves a breakpoint from a folded span to the summary that took its place', () => {
    const client = {
      messages: [
        user(text('Fix the parser.')),
        assistant(call('a')),
        user(result('a', 'file a'), text('look at b next', true)),
        assistant(call('b')),
        user(result('b', 'file b'), text('now fix it', true)),
      ],
    };
    const governed = [
      user(text('Fix the parser.'), text('[folded conversation:user:1@4: 3 messages]')),
      assistant(call('b')),
      user(result('b', 'file b'), text('now fix it', true)),
    ];
    const limited = limitCacheBreakpoints(client, { messages: governed });
    expect(marks(limited.messages)).toEqual(['0.1', '2.1']);
    expect(limited.moved).toBe(1);
  });

  it('finds the marked turns when every turn ends with the same block and earlier turns folded', () => {
    // Cline ends each turn with the same environment block and marks the last two.
    const environment = '<environment_details>\n# VSCode Open Tabs\n</environment_details>';
    const turn = (name: string, marked = false) =>
      user(text(`[read_file for '${name}'] Result:`), text(`file ${name}`), text(environment, marked));
    const step = (name: string) => assistant(text(`<read_file><path>${name}</path></read_file>`));
    const client = {
      messages: [
        user(text('<task>fix it</task>'), text(environment)),
        step('a'),
        turn('a'),
        step('b'),
        turn('b', true),
        step('c'),
        turn('c', true),
      ],
    };
    const governed = [
      client.messages[0],
      step('a'),
      user(text('[folded function:read_file:1]')),
      step('b'),
      user(text('[folded function:read_file:2]')),
      step('c'),
      turn('c', false),
    ];
    const limited = limitCacheBreakpoints(client, { messages: governed });
    expect(marks(limited.messages)).toEqual(['4.0', '6.2']);
    expect(limited.moved).toBe(1);
  });

  it('keeps the mark a folded result carries, and gives one to a folded result that lost it', () => {
    const client = {
      messages: [
        user(text('go')),
        assistant(call('a')),
        user(result('a', 'long file a', true)),
        assistant(text('done')),
      ],
    };
    const kept = [
      user(text('go')),
      assistant(call('a')),
      user(result('a', '[folded function:Read:1]', true)),
      assistant(text('done')),
    ];
    expect(marks(limitCacheBreakpoints(client, { messages: kept }).messages)).toEqual(['2.0']);
    const lost = [
      user(text('go')),
      assistant(call('a')),
      user(result('a', '[folded function:Read:1]')),
      assistant(text('done')),
    ];
    const limited = limitCacheBreakpoints(client, { messages: lost });
    expect(marks(limited.messages)).toEqual(['2.0']);
    expect(limited).toMatchObject({ moved: 0, removed: 0 });
  });

  it("gives a block the client marks the client's mark, not one an earlier request left on it", () => {
    // The client's cache went from an hour to five minutes between requests (Claude Code picks
    // the TTL per request); a one-hour mark after a five-minute one is refused.
    const fiveMinutes = { type: 'ephemeral', ttl: '5m' };
    const client = {
      system: [{ ...text('You are a coding agent.'), cache_control: fiveMinutes }],
      messages: [
        user(text('go')),
        assistant(call('a')),
        user({ ...result('a', 'long file a'), cache_control: fiveMinutes }),
      ],
    };
    const governed = [
      user(text('go')),
      assistant(call('a')),
      user({ ...result('a', '[folded function:Read:1]'), cache_control: { type: 'ephemeral', ttl: '1h' } }),
    ];
    const limited = limitCacheBreakpoints(client, { system: client.system, messages: governed });
    expect(
      (limited.messages[2] as { content: Array<{ cache_control?: unknown }> }).content[0]?.cache_control,
    ).toEqual(fiveMinutes);
  });

  it('drops the mark of what left with nothing in its place, and never marks thinking', () => {
    const client = {
      messages: [
        user(text('go')),
        assistant({ type: 'thinking', thinking: 'x', signature: 's' }, call('a')),
        user(result('a', 'out', true), text('next')),
        assistant(text('done')),
      ],
    };
    // The call and its result pruned: the thinking that stays takes no breakpoint.
    const governed = [
      user(text('go')),
      assistant({ type: 'thinking', thinking: 'x', signature: 's' }),
      user(text('next')),
      assistant(text('done')),
    ];
    const limited = limitCacheBreakpoints(client, { messages: governed });
    expect(marks(limited.messages)).toEqual([]);
  });

  it('puts a mark the client placed since on the view, and takes off a later one it no longer places', () => {
    // The view was first read when the client marked the reminder; now it marks the request.
    const client = {
      messages: [user(text('Fix the parser.', true)), assistant(text('On it.')), user(text('reminder'))],
    };
    const view = [user(text('Fix the parser.')), assistant(text('On it.')), user(text('reminder', true))];
    const limited = limitCacheBreakpoints(client, { messages: view });
    expect(marks(limited.messages)).toEqual(['0.0']);
    expect(limited).toMatchObject({ moved: 0, removed: 1 });
  });

  it('a mid-conversation system message keeps its own breakpoint', () => {
    const messages = [
      user(text('hi')),
      { role: 'system', content: 'Be brief.', cache_control: cache },
      assistant(text('ok')),
    ];
    expect(marks(limitCacheBreakpoints({ messages }, { messages }).messages)).toEqual(['1']);
  });
});

/** Marks `count` random places among the blocks of a message list (or the messages themselves). */
function markedAt(messages: unknown[], picks: readonly number[]): unknown[] {
  const places: Array<[number, number]> = [];
  messages.forEach((message, index) => {
    const content = (message as { content: unknown }).content;
    if (!Array.isArray(content)) return;
    for (let blockIndex = 0; blockIndex < content.length; blockIndex += 1) places.push([index, blockIndex]);
  });
  const chosen = new Set(
    picks
      .map((pick) => places[pick % Math.max(1, places.length)])
      .filter(Boolean)
      .map(String),
  );
  return messages.map((message, index) => {
    const record = message as { content: unknown };
    if (!Array.isArray(record.content)) return message;
    return {
      ...record,
      content: record.content.map((block, blockIndex) => {
        const thinking = (block as { type?: string }).type?.includes('thinking');
        return chosen.has(String([index, blockIndex])) && !thinking
          ? { ...(block as object), cache_control: cache }
          : block;
      }),
    };
  });
}

describe('the rule, for any request', () => {
  it('a client that sends k ≤ 4 breakpoints anywhere gets a governed body with at most k', () => {
    fc.assert(
      fc.property(
        transcriptArbitrary({ reasoning: ['signed'], system: 'always' }),
        fc.array(fc.nat(), { maxLength: 4 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        fc.option(fc.tuple(fc.nat(), fc.nat()), { nil: undefined }),
        fc.boolean(),
        fc.boolean(),
        (transcript, clientPicks, stalePicks, span, systemMarked, folds) => {
          const wire = toAnthropicMessages(transcript);
          const system =
            systemMarked && Array.isArray(wire.system)
              ? [{ ...wire.system[0], cache_control: cache }]
              : wire.system;
          const client = {
            system,
            messages: markedAt(wire.messages, clientPicks.slice(0, systemMarked ? 3 : 4)),
          };
          const clientCount = countBreakpoints(client.system) + countBreakpoints(client.messages);
          expect(clientCount).toBeLessThanOrEqual(MAX_CACHE_BREAKPOINTS);
          // A governed body: stale marks of earlier requests, folded results, a span replaced by a summary.
          let governed = markedAt(client.messages, stalePicks);
          if (folds) {
            governed = governed.map((message) => {
              const content = (message as { content: unknown }).content;
              if (!Array.isArray(content)) return message;
              return {
                ...(message as object),
                content: content.map((block) =>
                  (block as { type: string }).type === 'tool_result'
                    ? { ...(block as object), content: '[folded]' }
                    : block,
                ),
              };
            });
          }
          if (span) {
            const start = span[0] % governed.length;
            const end = start + (span[1] % (governed.length - start));
            governed = [...governed.slice(0, start), user(text('[folded span]')), ...governed.slice(end + 1)];
          }
          const limited = limitCacheBreakpoints(client, { system: client.system, messages: governed });
          const total = countBreakpoints(limited.system) + countBreakpoints(limited.messages);
          expect(total).toBeLessThanOrEqual(clientCount);
          for (const message of limited.messages) {
            const content = (message as { content: unknown }).content;
            if (!Array.isArray(content)) continue;
            for (const block of content as Array<{ type: string; text?: string; cache_control?: unknown }>) {
              if (block.cache_control === undefined) continue;
              expect(block.type.includes('thinking')).toBe(false);
              expect(block.type === 'text' && block.text === '').toBe(false);
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
