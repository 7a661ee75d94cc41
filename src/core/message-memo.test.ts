import { describe, expect, it } from 'vitest';
import { messageEntries } from './index-entries.js';
import { createLedger } from './ledger.js';
import { carryMessageMemos, messageMemo } from './message-memo.js';
import { approximateTokenCounter } from './tokens.js';
import type { Message } from './transcript.js';

const messages: Message[] = [
  { role: 'user', parts: [{ type: 'text', text: 'Fix parseConfig in src/config/load.ts' }] },
  {
    role: 'assistant',
    parts: [{ type: 'tool-call', id: 'c1', name: 'read_file', arguments: '{"path":"src/config/load.ts"}' }],
  },
  {
    role: 'tool',
    parts: [
      {
        type: 'tool-result',
        callId: 'c1',
        name: 'read_file',
        content: 'export function parseConfig(raw) { return JSON.parse(raw); }',
      },
    ],
  },
];

/** Module-level, as `messageMemo` asks: each memo is kept for the life of the process. */
const memo = messageMemo<string>();

describe('message memos', () => {
  it('follow a message into the object a ledger adopts for the same content', () => {
    const ledger = createLedger({ tokenCounter: approximateTokenCounter });
    ledger.append(messages);
    const before = messages.map((message) => messageEntries(message));
    // What a client's next request parses to: equal content, new objects.
    const parsedAgain = structuredClone(messages);
    ledger.adoptMessages(parsedAgain);
    expect(ledger.messages).toEqual(parsedAgain);
    parsedAgain.forEach((message, index) => {
      expect(ledger.messages[index]).toBe(message);
      // The same entries object: nothing was extracted again.
      expect(messageEntries(message)).toBe(before[index]);
    });
  });

  it('leave alone what the new object already has, and what a message never had', () => {
    const [from, to, other] = structuredClone(messages);
    memo.set(from!, 'old');
    memo.set(to!, 'own');
    carryMessageMemos(from!, to!);
    expect(memo.get(to!)).toBe('own');
    carryMessageMemos(other!, to!);
    expect(memo.get(to!)).toBe('own');
    carryMessageMemos(from!, other!);
    expect(memo.get(other!)).toBe('old');
  });
});
