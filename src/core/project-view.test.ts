import { describe, expect, it } from 'vitest';
import { countMessageTokens, indexTranscript, type Ledger } from './ledger.js';
import { objectPayload } from './object-payload.js';
import type { ViewState } from './operations.js';
import { projectView } from './project-view.js';
import { rehearsePlan } from './rehearse-plan.js';
import { threeRequestSession } from './testing/sample-session.js';
import {
  assistantCalls,
  assistantMessage,
  toolCall,
  toolMessage,
  toolResult,
  userMessage,
} from './testing/transcript-builders.js';
import { approximateTokenCounter } from './tokens.js';

function session(): Ledger {
  return indexTranscript(threeRequestSession(), { tokenCounter: approximateTokenCounter });
}

function stateWith(
  ledger: Ledger,
  operations: Array<[string, 'fold' | 'mask' | 'prune']>,
  tombstones = true,
): ViewState {
  const rehearsal = rehearsePlan(
    ledger,
    {},
    {
      planner: 'test',
      operations: operations.map(([objectId, operation]) => ({ objectId, operation, reason: 'test' })),
    },
    { tombstones },
  );
  expect(rehearsal.rejected).toEqual([]);
  return rehearsal.stateAfter;
}

describe('projectView', () => {
  it('is the transcript itself, message by message, when nothing is committed', () => {
    const ledger = session();
    const view = projectView(ledger, {});
    expect(view.items.map((item) => item.message)).toEqual(ledger.messages);
    view.items.forEach((item, index) => {
      expect(item.message).toBe(ledger.messages[index]);
      expect(item.source).toBe(index);
      expect(item.changed).toBe(false);
    });
    expect(view.tokens).toBe(ledger.totalTokens);
  });

  it('passes unchanged messages through by reference and marks changed ones', () => {
    const ledger = session();
    const view = projectView(ledger, stateWith(ledger, [['function:bash:2', 'fold']]));
    for (const item of view.items) {
      if (item.source === 5) {
        expect(item.changed).toBe(true);
        expect(item.message).not.toBe(ledger.messages[5]);
      } else {
        expect(item.changed).toBe(false);
        expect(item.message).toBe(ledger.messages[item.source]);
      }
    }
  });

  it('keeps the result part shape (call id, name, error flag) when replacing its content', () => {
    const ledger = session();
    const state = stateWith(ledger, [['function:bash:2', 'fold']]);
    const part = projectView(ledger, state).items.find((item) => item.source === 5)?.message.parts[0];
    const original = ledger.messages[5]?.parts[0];
    expect(part).toEqual({ ...original, content: state['function:bash:2']?.replacement });
  });

  it('shows ids as a header on user requests and a tag after tool results', () => {
    const ledger = session();
    const view = projectView(ledger, {}, { showIds: true });
    const request = view.items.find((item) => item.source === 11)?.message;
    expect(request?.parts[0]).toEqual({ type: 'text', text: '[id: conversation:user:2]' });
    expect(request?.parts.slice(1)).toEqual(ledger.messages[11]?.parts);
    const result = view.items.find((item) => item.source === 13)?.message.parts[0];
    expect(
      result?.type === 'tool-result' &&
        typeof result.content === 'string' &&
        result.content.endsWith('\n[id: function:bash:5]'),
    ).toBe(true);
    // Assistant messages never carry ids: later turns would imitate them.
    for (const item of view.items) {
      if (item.message.role === 'assistant') expect(item.message).toBe(ledger.messages[item.source]);
    }
    expect(view.tokens).toBe(
      view.items.reduce((sum, item) => sum + countMessageTokens(approximateTokenCounter, item.message), 0),
    );
  });

  it('tags a tool result with list content with an extra text part', () => {
    const ledger = indexTranscript(
      [
        { role: 'user', parts: [{ type: 'text', text: 'look' }] },
        { role: 'assistant', parts: [{ type: 'tool-call', id: 'c', name: 'screenshot', arguments: '{}' }] },
        {
          role: 'tool',
          parts: [
            {
              type: 'tool-result',
              callId: 'c',
              name: 'screenshot',
              content: [{ type: 'image', ref: 'file-1', source: 'file-id' }],
            },
          ],
        },
      ],
      { tokenCounter: approximateTokenCounter },
    );
    const part = projectView(ledger, {}, { showIds: true }).items[2]?.message.parts[0];
    expect(part?.type === 'tool-result' ? part.content : undefined).toEqual([
      { type: 'image', ref: 'file-1', source: 'file-id' },
      { type: 'text', text: '[id: function:screenshot:1]' },
    ]);
  });

  it('projects a prefix with `end`', () => {
    const ledger = session();
    const view = projectView(ledger, {}, { end: 5 });
    expect(view.items.map((item) => item.source)).toEqual([0, 1, 2, 3, 4]);
    expect(view.tokens).toBe(ledger.messageTokens.slice(0, 5).reduce((sum, value) => sum + value, 0));
    expect(projectView(ledger, {}, { end: 1000 }).items).toHaveLength(ledger.messages.length);
  });

  it('does not apply a conversation fold to a prefix that cuts its span', () => {
    const ledger = session();
    const state = stateWith(ledger, [['conversation:user:2', 'fold']]);
    expect(projectView(ledger, state, { end: 14 }).items.map((item) => item.source)).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
    ]);
    expect(projectView(ledger, state, { end: 17 }).items.map((item) => item.source)).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
    ]);
  });

  it('hides object states inside a folded conversation and shows them again when it is expanded', () => {
    const ledger = session();
    const masked = stateWith(ledger, [['function:bash:5', 'mask']]);
    const both = rehearsePlan(ledger, masked, {
      planner: 'test',
      operations: [{ objectId: 'conversation:user:2', operation: 'fold', reason: 'test' }],
    }).stateAfter;
    expect(projectView(ledger, both).items.some((item) => item.source === 13)).toBe(false);
    const expanded = rehearsePlan(ledger, both, {
      planner: 'test',
      operations: [{ objectId: 'conversation:user:2', operation: 'expand', reason: 'test' }],
    }).stateAfter;
    expect(projectView(ledger, expanded)).toEqual(projectView(ledger, masked));
  });

  it('counts tokens consistently with counting every view message', () => {
    const ledger = session();
    const states = [
      stateWith(ledger, [['function:bash:5', 'mask']]),
      stateWith(ledger, [['conversation:user:2', 'fold']]),
      stateWith(ledger, [['conversation:user:2', 'prune']], false),
      stateWith(
        ledger,
        [
          ['function:bash:2', 'prune'],
          ['function:read_file:1', 'prune'],
        ],
        false,
      ),
    ];
    for (const state of states) {
      for (const showIds of [false, true]) {
        const view = projectView(ledger, state, { showIds });
        const fromScratch = view.items.reduce(
          (sum, item) => sum + countMessageTokens(approximateTokenCounter, item.message),
          0,
        );
        expect(view.tokens).toBe(fromScratch);
      }
    }
  });
});

describe('projectView: pruning with the shell', () => {
  function parallelSession(): Ledger {
    return indexTranscript(
      [
        userMessage('look around'),
        assistantCalls(
          [toolCall('a', 'ls', { path: 'src' }), toolCall('b', 'ls', { path: 'test' })],
          'Listing both folders.',
        ),
        toolMessage(toolResult('a', 'ls', 'one.ts\ntwo.ts')),
        toolMessage(toolResult('b', 'ls', 'one.test.ts')),
        assistantCalls([toolCall('c', 'read_file', { path: 'src/one.ts' })], 'Reading one.'),
        toolMessage(toolResult('c', 'read_file', 'export const one = 1;')),
        assistantMessage('done'),
      ],
      { tokenCounter: approximateTokenCounter },
    );
  }
  const prune = (objectId: string, dropShell: boolean) => ({
    objectId,
    operation: 'prune' as const,
    reason: 'test',
    dropShell,
  });

  it('drops the assistant step, text included, once every call it made left with its shell', () => {
    const ledger = parallelSession();
    const rehearsal = rehearsePlan(
      ledger,
      {},
      { planner: 'test', operations: [prune('function:ls:1', true), prune('function:ls:2', true)] },
    );
    expect(rehearsal.rejected).toEqual([]);
    const view = projectView(ledger, rehearsal.stateAfter);
    expect(view.items.map((item) => item.source)).toEqual([0, 4, 5, 6]);
    expect(view.tokens).toBe(
      view.items.reduce((sum, item) => sum + countMessageTokens(approximateTokenCounter, item.message), 0),
    );
  });

  it('keeps the step and its text while one of its calls stays', () => {
    const ledger = parallelSession();
    const rehearsal = rehearsePlan(
      ledger,
      {},
      { planner: 'test', operations: [prune('function:ls:1', true)] },
    );
    const view = projectView(ledger, rehearsal.stateAfter);
    const step = view.items.find((item) => item.source === 1)!;
    expect(step.message.parts).toEqual([
      { type: 'text', text: 'Listing both folders.' },
      toolCall('b', 'ls', { path: 'test' }),
    ]);
    expect(view.items.map((item) => item.source)).toEqual([0, 1, 3, 4, 5, 6]);
  });

  it('upgrades a tombstoned prune to a shell prune, and keeps the shell in the payload', () => {
    const ledger = parallelSession();
    const first = rehearsePlan(
      ledger,
      {},
      { planner: 'test', operations: [prune('function:read_file:3', false)] },
    );
    expect(first.stateAfter['function:read_file:3']?.replacement).toMatch(/^\[pruned function:read_file:3/);
    const second = rehearsePlan(ledger, first.stateAfter, {
      planner: 'test',
      operations: [prune('function:read_file:3', true)],
    });
    expect(second.accepted).toHaveLength(1);
    expect(projectView(ledger, second.stateAfter).items.map((item) => item.source)).toEqual([0, 1, 2, 3, 6]);
    const payload = objectPayload(ledger, ledger.get('function:read_file:3')!);
    expect(payload.kind === 'function' && payload.shell?.message).toBe(ledger.messages[4]);
  });
});
