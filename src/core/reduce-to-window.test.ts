import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countMessageTokens } from './ledger.js';
import { EXACT_COUNT_CHARS, reduceToWindow } from './reduce-to-window.js';
import { gcTranscriptArbitrary } from './testing/gc-transcript-arbitrary.js';
import { assistantMessage, systemMessage, toolRound, userMessage } from './testing/transcript-builders.js';
import { approximateTokenCounter, type TokenCounter } from './tokens.js';
import type { Message } from './transcript.js';

const counter = approximateTokenCounter;

/** A coding session: system prompt, task, then `rounds` file reads of about 700 tokens each. */
function session(rounds: number, lines = 48): Message[] {
  const messages = [
    systemMessage('You are a careful coding agent.'),
    userMessage('Fix computeValue for module 3.'),
  ];
  for (let round = 0; round < rounds; round += 1) {
    const output = Array.from(
      { length: lines },
      (_, line) => `export const v${round}_${line} = compute(${round}, ${line});`,
    );
    messages.push(
      ...toolRound(`call_${round}`, 'read_file', { path: `src/m${round}.ts` }, output.join('\n')),
    );
  }
  return messages;
}

const tokensOf = (messages: readonly Message[]) =>
  messages.reduce((sum, message) => sum + countMessageTokens(counter, message), 0);

/** Problems with tool call/result pairing: orphaned results, or calls that lost a result they had. */
function pairingProblems(before: readonly Message[], after: readonly Message[]): string[] {
  const answered = new Set(
    before.flatMap((message) =>
      message.parts.flatMap((part) => (part.type === 'tool-result' ? [part.callId] : [])),
    ),
  );
  const calls = new Set<string>();
  const results = new Set<string>();
  const problems: string[] = [];
  for (const message of after) {
    for (const part of message.parts) {
      if (part.type === 'tool-call') calls.add(part.id);
      if (part.type === 'tool-result') {
        if (!calls.has(part.callId)) problems.push(`orphaned result ${part.callId}`);
        results.add(part.callId);
      }
    }
  }
  for (const id of calls)
    if (answered.has(id) && !results.has(id)) problems.push(`call ${id} lost its result`);
  return problems;
}

const isPrefix = (prefix: readonly Message[], of: readonly Message[]) =>
  prefix.length <= of.length &&
  prefix.every((message, index) => JSON.stringify(message) === JSON.stringify(of[index]));

describe('reduceToWindow', () => {
  it('leaves a transcript that fits as it is', () => {
    const messages = session(3);
    const reduced = reduceToWindow(messages, { room: 100_000, tokenCounter: counter });
    expect(reduced.messages).toEqual(messages);
    expect(reduced.messages.every((message, index) => message === messages[index])).toBe(true);
    expect(reduced).toMatchObject({ changed: false, elided: 0, dropped: 0, trimmed: 0, fits: true });
    expect(reduced.tokensAfter).toBe(reduced.tokensBefore);
    expect(reduced.tokensBound).toBe(false);
  });

  it('says when its figures hold a huge text counted by its bytes: upper bounds, not counts', () => {
    const huge = 'log line: request served in 12 ms\n'.repeat(7_500);
    expect(huge.length).toBeGreaterThan(EXACT_COUNT_CHARS);
    const messages = [...session(2), ...toolRound('call_big', 'bash', { command: 'cat log' }, huge)];
    const roomy = reduceToWindow(messages, { room: 400_000, tokenCounter: counter });
    expect(roomy).toMatchObject({ changed: false, tokensBound: true });
    expect(roomy.tokensBefore).toBeGreaterThan(huge.length);
  });

  it('elides the oldest tool results first, keeping every call with its result, the head and the latest turn', () => {
    const messages = session(20);
    const room = 6_000;
    const reduced = reduceToWindow(messages, { room, tokenCounter: counter });
    expect(reduced.fits).toBe(true);
    expect(reduced.tokensAfter).toBeLessThanOrEqual(room);
    expect(reduced.tokensAfter).toBe(tokensOf(reduced.messages));
    expect(reduced.elided).toBeGreaterThan(0);
    expect(reduced.dropped).toBe(0);
    expect(reduced.messages).toHaveLength(messages.length);
    expect(pairingProblems(messages, reduced.messages)).toEqual([]);
    expect(reduced.messages.slice(0, 2)).toEqual(messages.slice(0, 2));
    expect(reduced.messages.slice(-2)).toEqual(messages.slice(-2));
    // Oldest first: every elided result comes before every kept one.
    const elided = reduced.messages
      .filter((message) => message.role === 'tool')
      .map((message) => JSON.stringify(message).includes('elided to fit'));
    expect(elided[0]).toBe(true);
    expect(elided.slice(elided.indexOf(false)).filter(Boolean)).toEqual([]);
    expect(JSON.stringify(reduced.messages[3])).toContain(
      '[output of read_file elided to fit the context window',
    );
  });

  it('keeps the results a compaction prompt follows (past instructions) in the latest turn', () => {
    // A client asking for its summary right after the latest results: the model has not seen
    // them, so they stay whole with their call, whatever instructions come between.
    const messages = [
      ...session(10),
      systemMessage('Approval policy: never.'),
      userMessage('Summarize the conversation so far for another model.'),
    ];
    const reduced = reduceToWindow(messages, { room: 700, tokenCounter: counter });
    expect(reduced.fits).toBe(true);
    expect(reduced.elided).toBeGreaterThan(0);
    expect(reduced.messages.slice(-4)).toEqual(messages.slice(-4));
  });

  it('is deterministic', () => {
    const messages = session(30);
    const first = reduceToWindow(messages, { room: 5_000, tokenCounter: counter });
    const second = reduceToWindow(structuredClone(messages), { room: 5_000, tokenCounter: counter });
    expect(JSON.stringify(second)).toBe(JSON.stringify(first));
  });

  it('keeps the reduced prefix byte for byte while a conversation grows, breaking it only when the cut moves', () => {
    const room = 8_000;
    const views = Array.from({ length: 60 }, (_, index) =>
      reduceToWindow(session(index + 1), { room, tokenCounter: counter }),
    );
    let reducedCalls = 0;
    let breaks = 0;
    for (let index = 0; index + 1 < views.length; index += 1) {
      const [current, next] = [views[index]!, views[index + 1]!];
      expect(next.tokensAfter).toBeLessThanOrEqual(room);
      if (next.elided > 0) reducedCalls += 1;
      if (!isPrefix(current.messages, next.messages)) breaks += 1;
    }
    expect(reducedCalls).toBeGreaterThan(40);
    // Eliding just enough each call would break the prefix on almost every call.
    expect(breaks).toBeGreaterThan(0);
    expect(breaks).toBeLessThan(reducedCalls / 2);
  });

  it('leaves out the oldest steps whole when elided outputs are not enough, and says so', () => {
    const messages: Message[] = [systemMessage('System.'), userMessage('The task.')];
    for (let turn = 0; turn < 40; turn += 1) {
      messages.push(assistantMessage(`Thinking out loud about step ${turn}. ${'words '.repeat(150)}`));
      messages.push(...toolRound(`call_${turn}`, 'bash', { command: `make ${turn}` }, `ok ${turn}`));
    }
    const room = 2_000;
    const reduced = reduceToWindow(messages, { room, tokenCounter: counter });
    expect(reduced.fits).toBe(true);
    expect(reduced.dropped).toBeGreaterThan(0);
    expect(reduced.messages.length).toBeLessThan(messages.length);
    expect(pairingProblems(messages, reduced.messages)).toEqual([]);
    expect(reduced.messages[0]).toEqual(messages[0]);
    const task = reduced.messages[1]!;
    expect(task.parts[0]).toEqual(messages[1]!.parts[0]);
    expect(JSON.stringify(task.parts.at(-1))).toContain(`${reduced.dropped} earlier messages were left out`);
    expect(reduced.messages.slice(-2)).toEqual(messages.slice(-2));
    // What stays is the newest work, in order.
    const kept = reduced.messages.slice(2);
    expect(isPrefix(kept, messages.slice(messages.length - kept.length))).toBe(true);
  });

  it('keeps the instructions a client sent among the steps it leaves out, in their order', () => {
    // Codex sends developer messages mid-way (a collaboration mode, permissions): instructions
    // that hold on, as the system prompt does.
    const messages: Message[] = [systemMessage('System.'), userMessage('The task.')];
    for (let turn = 0; turn < 40; turn += 1) {
      if (turn === 5 || turn === 12)
        messages.push(systemMessage(`<collaboration_mode>Mode ${turn}</collaboration_mode>`));
      messages.push(assistantMessage(`Thinking out loud about step ${turn}. ${'words '.repeat(150)}`));
      messages.push(...toolRound(`call_${turn}`, 'bash', { command: `make ${turn}` }, `ok ${turn}`));
    }
    const reduced = reduceToWindow(messages, { room: 2_000, tokenCounter: counter });
    expect(reduced.fits).toBe(true);
    expect(reduced.dropped).toBeGreaterThan(20);
    const systems = (list: readonly Message[]) => list.filter((message) => message.role === 'system');
    expect(systems(reduced.messages)).toEqual(systems(messages));
    expect(reduced.messages.slice(2, 4)).toEqual(systems(messages).slice(1));
    expect(pairingProblems(messages, reduced.messages)).toEqual([]);
    expect(reduced.tokensAfter).toBe(tokensOf(reduced.messages));
  });

  it('cuts the middle of a latest output that alone is over the room, keeping its head and tail', () => {
    const huge = Array.from({ length: 5_000 }, (_, line) => `line ${line} of the build log`).join('\n');
    const messages = [...session(2), ...toolRound('call_big', 'bash', { command: 'make' }, huge)];
    const room = 3_000;
    const reduced = reduceToWindow(messages, { room, tokenCounter: counter });
    expect(reduced.fits).toBe(true);
    expect(reduced.trimmed).toBe(1);
    const last = reduced.messages.at(-1)!.parts[0]!;
    expect(last.type === 'tool-result' && typeof last.content === 'string').toBe(true);
    const content = (last as { content: string }).content;
    expect(content.startsWith('line 0 of the build log')).toBe(true);
    expect(content.endsWith('line 4999 of the build log')).toBe(true);
    expect(content).toMatch(/characters elided to fit the context window/);
    expect(pairingProblems(messages, reduced.messages)).toEqual([]);
  });

  it('tokenizes only what it keeps: a transcript many times the room is never counted whole', () => {
    let countedChars = 0;
    let longest = 0;
    const spy: TokenCounter = {
      name: 'spy',
      count: (text) => {
        countedChars += text.length;
        longest = Math.max(longest, text.length);
        return counter.count(text);
      },
    };
    const messages = [
      ...session(200),
      ...toolRound('call_dump', 'bash', { command: 'cat dump' }, 'x'.repeat(3_000_000)),
      ...toolRound('call_next', 'bash', { command: 'ls' }, 'a b c'),
    ];
    const transcriptChars = JSON.stringify(messages).length;
    const reduced = reduceToWindow(messages, { room: 4_000, tokenCounter: spy });
    expect(reduced).toMatchObject({ changed: true, fits: true });
    expect(reduced.tokensAfter).toBeLessThanOrEqual(4_000);
    expect(longest).toBeLessThanOrEqual(EXACT_COUNT_CHARS);
    expect(countedChars).toBeLessThan(transcriptChars / 20);
    expect(JSON.stringify(reduced.messages)).not.toContain('x'.repeat(1000));
  });

  it('counts what it keeps with the real counter, eliding more when the estimate fell short', () => {
    // A counter that finds three times the tokens characters suggest (dense, non-English text).
    const dense: TokenCounter = { name: 'dense', count: (text) => Math.ceil((text.length * 3) / 4) };
    const reduced = reduceToWindow(session(40), { room: 6_000, tokenCounter: dense });
    expect(reduced.fits).toBe(true);
    expect(reduced.tokensAfter).toBeLessThanOrEqual(6_000);
    expect(reduced.tokensAfter).toBe(
      reduced.messages.reduce((sum, message) => sum + countMessageTokens(dense, message), 0),
    );
  });

  it('reports a transcript whose system prompt alone is over the room as not fitting', () => {
    const messages = [systemMessage('rule '.repeat(4_000)), userMessage('Go.')];
    const reduced = reduceToWindow(messages, { room: 500, tokenCounter: counter });
    expect(reduced.fits).toBe(false);
    expect(reduced.messages[0]).toEqual(messages[0]);
  });

  it('for any transcript and room: pairs stay whole, the system prompt stays, and what fits is under the room', () => {
    fc.assert(
      fc.property(gcTranscriptArbitrary(), fc.integer({ min: 50, max: 4_000 }), (messages, room) => {
        const reduced = reduceToWindow(messages, { room, tokenCounter: counter });
        expect(pairingProblems(messages, reduced.messages)).toEqual([]);
        const systems = (list: readonly Message[]) => list.filter((message) => message.role === 'system');
        expect(systems(reduced.messages)).toEqual(systems(messages));
        expect(reduced.tokensAfter).toBe(tokensOf(reduced.messages));
        if (reduced.fits) expect(reduced.tokensAfter).toBeLessThanOrEqual(room);
        else expect(reduced.tokensAfter).toBeGreaterThan(room);
      }),
      { numRuns: 150 },
    );
  });
});
