import { describe, expect, it } from 'vitest';
import { indexTranscript } from '../core/ledger.js';
import type { ViewState } from '../core/operations.js';
import {
  assistantMessage,
  systemMessage,
  toolRound,
  userMessage,
} from '../core/testing/transcript-builders.js';
import { approximateTokenCounter } from '../core/tokens.js';
import type { Message } from '../core/transcript.js';
import { recoverableMap } from './recoverable-map.js';

/** 0 system, 1 user, 2–3 read_file src/cache.py, 4–5 failing bash. */
function cachePrefix(): Message[] {
  return [
    systemMessage('You are a coding agent.'),
    userMessage('Fix the failing test in tests/test_cache.py.'),
    ...toolRound('call_1', 'read_file', { file_path: 'src/cache.py' }, 'MAX_ENTRIES = 4096'),
    ...toolRound('call_2', 'bash', { command: 'pytest tests/test_cache.py' }, 'FAILED', { isError: true }),
  ];
}

function setup(prefix = cachePrefix()) {
  return { ledger: indexTranscript(prefix, { tokenCounter: approximateTokenCounter }) };
}

describe('recoverableMap', () => {
  it('maps a function object to its tool message and a conversation to its whole span', () => {
    const prefix = [
      ...cachePrefix(),
      assistantMessage('KeyError fixed.'),
      userMessage('Now look at src/store.py.'),
      ...toolRound('call_4', 'read_file', { file_path: 'src/store.py' }, 'STORE = {}'),
      assistantMessage('Read it.'),
      userMessage('Thanks.'),
    ];
    const { ledger } = setup(prefix);
    const conversation = ledger.get('conversation:user:2')!;
    expect(conversation.span).toEqual({ start: 7, end: 11 });
    const state: ViewState = {
      'function:read_file:1': { operation: 'fold', replacement: 'x', commitId: 'c1' },
      'conversation:user:2': { operation: 'prune', replacement: '', commitId: 'c1' },
      'function:nowhere:99': { operation: 'prune', replacement: '', commitId: 'c1' },
    };
    expect(recoverableMap(ledger, state)).toEqual({
      'function:read_file:1': [3],
      'conversation:user:2': [7, 8, 9, 10],
    });
  });

  it('keys a span fold as the sidecar does, `id@end`, covering the request and the folded work', () => {
    const { ledger } = setup();
    const state: ViewState = {
      'conversation:user:1': {
        operation: 'fold',
        replacement: 'x',
        commitId: 'c1',
        keepRequest: true,
        spanEnd: 4,
      },
    };
    expect(recoverableMap(ledger, state)).toEqual({ 'conversation:user:1@4': [1, 2, 3] });
  });

  it('is empty without a sidecar', () => {
    const { ledger } = setup();
    expect(recoverableMap(ledger, undefined)).toEqual({});
    expect(recoverableMap(ledger, {})).toEqual({});
  });
});
