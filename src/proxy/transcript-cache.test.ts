import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { transcriptChain } from '../core/content-hash.js';
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import { responsesDialect } from './responses-dialect.js';
import { conversationBody, type WireRoute } from './testing/agent-conversation.js';
import { createTranscriptCache, type TranscriptCache } from './transcript-cache.js';
import type { JsonObject, WireDialect } from './wire-dialect.js';

const DIALECTS: Record<WireRoute, WireDialect> = {
  chat: chatDialect,
  responses: responsesDialect,
  messages: anthropicMessagesDialect,
};
const encoder = new TextEncoder();
const bytesOf = (body: unknown) => encoder.encode(JSON.stringify(body));

/** Read a body through the cache, bind its transcript, keep it; what a governed request does. */
function readAndKeep(cache: TranscriptCache, route: WireRoute, body: unknown, namespace = 'key-a') {
  const dialect = DIALECTS[route];
  const reading = cache.read({ dialect, namespace, bytes: bytesOf(body) });
  if (reading === undefined) throw new Error('no reading');
  const bound = reading.transcript();
  bound.keep();
  return { reading, bound, fresh: dialect.readTranscript(JSON.parse(JSON.stringify(body)) as JsonObject) };
}

function conversationOf(body: Record<string, unknown>, route: WireRoute): Array<Record<string, unknown>> {
  return body[DIALECTS[route].conversationField] as Array<Record<string, unknown>>;
}

describe('transcript cache', () => {
  it.each(['chat', 'responses', 'messages'] as const)(
    '%s: an appended turn reuses the known prefix, message objects and chain links',
    (route) => {
      const cache = createTranscriptCache();
      const first = readAndKeep(cache, route, conversationBody(route, { turns: 3 }));
      const second = readAndKeep(cache, route, conversationBody(route, { turns: 4 }));
      const elements = conversationOf(conversationBody(route, { turns: 3 }), route).length;
      expect(second.reading.reusedElements).toBe(elements);
      expect(second.bound.messages).toEqual(second.fresh);
      expect(second.bound.chain).toEqual(transcriptChain(second.fresh));
      // Responses runs may take in what follows; every other message is the kept object itself.
      expect(second.bound.reused).toBeGreaterThanOrEqual(first.bound.messages.length - 1);
      for (let index = 0; index < second.bound.reused; index += 1) {
        expect(second.bound.messages[index]).toBe(first.bound.messages[index]);
      }
      expect(second.bound.messages.length).toBeGreaterThan(first.bound.messages.length);
    },
  );

  it.each(['chat', 'responses', 'messages'] as const)(
    '%s: an edit anywhere in the prefix ends the reuse there',
    (route) => {
      const cache = createTranscriptCache();
      readAndKeep(cache, route, conversationBody(route, { turns: 5 }));
      const edited = conversationBody(route, { turns: 6 });
      const conversation = conversationOf(edited, route);
      // The client redacts one word of an early tool output.
      const target = conversation.findIndex((element) =>
        JSON.stringify(element).includes('computeValue(1, 3)'),
      );
      conversation[target] = JSON.parse(
        JSON.stringify(conversation[target]).replace('computeValue(1, 3)', 'computeValue(1, X)'),
      ) as Record<string, unknown>;
      const { reading, bound, fresh } = readAndKeep(cache, route, edited);
      expect(reading.reusedElements).toBe(target);
      expect(bound.messages).toEqual(fresh);
      expect(bound.chain).toEqual(transcriptChain(fresh));
      expect(JSON.stringify(bound.messages)).toContain('computeValue(1, X)');
      expect(JSON.stringify(bound.messages)).not.toContain('computeValue(1, 3)');
    },
  );

  it('a truncated history (old rounds elided by the client) ends the reuse where it parts', () => {
    const cache = createTranscriptCache();
    readAndKeep(cache, 'chat', conversationBody('chat', { turns: 6 }));
    const body = conversationBody('chat', { turns: 7 });
    const messages = body.messages as unknown[];
    // System, task, the first call, then the rounds from the fourth on.
    body.messages = [...messages.slice(0, 3), ...messages.slice(9)];
    const { reading, bound, fresh } = readAndKeep(cache, 'chat', body);
    expect(reading.reusedElements).toBe(3);
    expect(bound.reused).toBe(3);
    expect(bound.messages).toEqual(fresh);
    expect(bound.chain).toEqual(transcriptChain(fresh));
  });

  it('a moved cache breakpoint changes the message but not its chain link', () => {
    const cache = createTranscriptCache();
    // Claude Code marks its latest user turns: the mark leaves the task once the turns go on.
    const marked = (turns: number, mark: boolean) => {
      const body = conversationBody('messages', { turns });
      const messages = body.messages as Array<{ role: string; content: unknown }>;
      const task = messages[0]!;
      const block = { type: 'text', text: String(task.content) };
      task.content = [mark ? { ...block, cache_control: { type: 'ephemeral' } } : block];
      return body;
    };
    const first = readAndKeep(cache, 'messages', marked(3, true));
    const second = readAndKeep(cache, 'messages', marked(4, false));
    expect(second.reading.reusedElements).toBe(0);
    expect(second.bound.messages).toEqual(second.fresh);
    expect(second.bound.chain.slice(0, first.bound.chain.length)).toEqual(first.bound.chain);
    expect(JSON.stringify(second.bound.messages)).not.toContain('cache_control');
  });

  it('never reuses across conversations or namespaces', () => {
    const cache = createTranscriptCache();
    readAndKeep(cache, 'chat', conversationBody('chat', { turns: 3, task: 'Task one' }));
    const other = readAndKeep(cache, 'chat', conversationBody('chat', { turns: 4, task: 'Task two' }));
    expect(other.reading.reusedElements).toBe(0);
    expect(other.bound.reused).toBe(0);
    const elsewhere = readAndKeep(
      cache,
      'chat',
      conversationBody('chat', { turns: 4, task: 'Task one' }),
      'key-b',
    );
    expect(elsewhere.reading.reusedElements).toBe(0);
    expect(elsewhere.bound.reused).toBe(0);
    // The same content under its own namespace is found again.
    const again = readAndKeep(cache, 'chat', conversationBody('chat', { turns: 4, task: 'Task one' }));
    expect(again.reading.reusedElements).toBe(2 + 2 * 3);
  });

  it('keeps two conversations that open alike apart, each extending its own', () => {
    const cache = createTranscriptCache();
    readAndKeep(cache, 'chat', conversationBody('chat', { turns: 3, marker: 'run-A' }));
    readAndKeep(cache, 'chat', conversationBody('chat', { turns: 3, marker: 'run-B' }));
    const a = readAndKeep(cache, 'chat', conversationBody('chat', { turns: 4, marker: 'run-A' }));
    const b = readAndKeep(cache, 'chat', conversationBody('chat', { turns: 4, marker: 'run-B' }));
    expect(a.reading.reusedElements).toBe(8);
    expect(b.reading.reusedElements).toBe(8);
    expect(JSON.stringify(b.bound.messages)).not.toContain('run-A');
    expect(cache.size().entries).toBe(2);
  });

  it('holds at most its entries and bytes, the least recently used leaving first', () => {
    const body = (task: string) => conversationBody('chat', { turns: 2, task });
    const cache = createTranscriptCache({ maxEntries: 2 });
    for (const task of ['one', 'two', 'three']) readAndKeep(cache, 'chat', body(task));
    expect(cache.size().entries).toBe(2);
    expect(readAndKeep(cache, 'chat', body('one')).reading.reusedElements).toBe(0);
    expect(readAndKeep(cache, 'chat', body('three')).reading.reusedElements).toBe(6);

    const size = bytesOf(body('one')).byteLength;
    const small = createTranscriptCache({ maxBytes: size * 2 + 10 });
    for (const task of ['one', 'two', 'six']) readAndKeep(small, 'chat', body(task));
    expect(small.size().entries).toBe(2);
    expect(small.size().bytes).toBeLessThanOrEqual(size * 2 + 10);
    const tiny = createTranscriptCache({ maxBytes: size - 1 });
    readAndKeep(tiny, 'chat', body('one'));
    expect(tiny.size()).toEqual({ entries: 0, bytes: 0 });
  });

  it('counts what a governed body serialised in the bytes it holds, and lets it go with the body', () => {
    const cache = createTranscriptCache();
    const { reading } = readAndKeep(cache, 'chat', conversationBody('chat', { turns: 3 }));
    const held = cache.size().bytes;
    const messages = reading.body.messages as unknown[];
    const summary = { role: 'user', content: `[folded] ${'index line\n'.repeat(300)}` };
    const out = reading.render({ ...reading.body, messages: [messages[0], summary, ...messages.slice(3)] });
    const serialised = new TextEncoder().encode(JSON.stringify(summary)).byteLength;
    expect(cache.size().bytes).toBe(held + serialised);
    expect(JSON.parse(new TextDecoder().decode(out)).messages[1]).toEqual(summary);
    // The next body of the conversation replaces it, and what it held leaves with it.
    const next = readAndKeep(cache, 'chat', conversationBody('chat', { turns: 4 }));
    expect(cache.size()).toEqual({ entries: 1, bytes: bytesOf(next.reading.body).byteLength });
  });

  it('gives no reading for bodies the layout cannot take, so they are parsed whole', () => {
    const cache = createTranscriptCache();
    const read = (text: string) =>
      cache.read({ dialect: chatDialect, namespace: 'k', bytes: encoder.encode(text) });
    for (const text of [
      '[1]',
      '{"model":"m","messages":[}',
      '{"model":"m","model":"n","messages":[]}',
      '{"__proto__":{"x":1},"messages":[]}',
      '{"model":"m","messages":[{"role":"user","content":"\\x"}]}',
    ]) {
      expect(read(text), text).toBeUndefined();
    }
    expect(read('{"model":"m","messages":[]}')?.body).toEqual({ model: 'm', messages: [] });
  });

  it('a reading that is not kept leaves nothing behind', () => {
    const cache = createTranscriptCache();
    const body = conversationBody('chat', { turns: 2 });
    const reading = cache.read({ dialect: chatDialect, namespace: 'k', bytes: bytesOf(body) });
    reading!.transcript();
    expect(cache.size().entries).toBe(0);
  });

  it('binds exactly the fresh transcript and its chain through appends, edits, cuts and swaps', () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('append' as const) }),
      fc.record({ kind: fc.constant('edit' as const), at: fc.nat() }),
      fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
      fc.record({ kind: fc.constant('swap' as const) }),
    );
    fc.assert(
      fc.property(
        fc.constantFrom<WireRoute>('chat', 'responses', 'messages'),
        fc.array(step, { maxLength: 8 }),
        (route, steps) => {
          const cache = createTranscriptCache();
          let marker = 'a';
          let turns = 2;
          let edits: Array<{ at: number; text: string }> = [];
          let cutFrom: number | undefined;
          for (const [index, move] of steps.entries()) {
            if (move.kind === 'append') turns += 1;
            if (move.kind === 'swap') {
              marker = `${marker}x`;
              edits = [];
              cutFrom = undefined;
            }
            const body = conversationBody(route, { turns, marker, lines: 4 });
            const conversation = conversationOf(body, route);
            if (move.kind === 'edit')
              edits.push({ at: move.at % conversation.length, text: `edit ${index}` });
            if (move.kind === 'cut' && conversation.length > 4)
              cutFrom = 1 + (move.at % (conversation.length - 3));
            for (const edit of edits) {
              if (edit.at < conversation.length)
                conversation[edit.at] = { ...conversation[edit.at], note: edit.text } as Record<
                  string,
                  unknown
                >;
            }
            if (cutFrom !== undefined) conversation.splice(cutFrom, 2);
            const { bound, fresh } = readAndKeep(cache, route, body);
            expect(bound.messages).toEqual(fresh);
            expect(bound.chain).toEqual(transcriptChain(fresh));
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
