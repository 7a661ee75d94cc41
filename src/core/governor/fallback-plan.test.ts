import { describe, expect, it } from 'vitest';
import { indexTranscript, type Ledger } from '../ledger.js';
import type { ViewState } from '../operations.js';
import { projectView } from '../project-view.js';
import { rehearsePlan } from '../rehearse-plan.js';
import { longSession } from '../testing/long-session.js';
import { toolRound, userMessage } from '../testing/transcript-builders.js';
import { approximateTokenCounter } from '../tokens.js';
import type { Message } from '../transcript.js';
import { planFallback } from './fallback-plan.js';

function ledgerOf(messages: Message[]): Ledger {
  return indexTranscript(messages, { tokenCounter: approximateTokenCounter });
}

describe('planFallback', () => {
  it('prunes tool outputs oldest first until the target is reached', () => {
    const ledger = ledgerOf(longSession({ rounds: 20 }));
    const viewTokens = projectView(ledger, {}).tokens;
    const operations = planFallback(ledger, {}, viewTokens, viewTokens - 1_000);
    expect(operations.map((operation) => operation.objectId)).toEqual([
      'function:read_file:1',
      'function:read_file:2',
      'function:read_file:3',
      'function:read_file:4',
    ]);
    for (const operation of operations) {
      expect(operation).toMatchObject({
        operation: 'prune',
        reason: 'fallback: the view must fit the window',
      });
    }
    const rehearsal = rehearsePlan(ledger, {}, { planner: 'fallback', operations });
    expect(rehearsal.tokensAfter).toBeLessThanOrEqual(viewTokens - 1_000);
  });

  it('proposes nothing when the view is already at the target', () => {
    const ledger = ledgerOf(longSession({ rounds: 5 }));
    expect(planFallback(ledger, {}, 100, 100)).toEqual([]);
  });

  it('goes on to past conversations, the pinned first request only last and keeping it, never the latest turn', () => {
    const ledger = ledgerOf(longSession({ rounds: 20, requestEvery: 5 }));
    const operations = planFallback(ledger, {}, projectView(ledger, {}).tokens, 0);
    const ids = operations.map((operation) => operation.objectId);
    expect(ids.filter((id) => id.startsWith('conversation:'))).toEqual([
      'conversation:user:2',
      'conversation:user:3',
      'conversation:user:1',
    ]);
    expect(operations.at(-1)).toMatchObject({ objectId: 'conversation:user:1', operation: 'fold' });
    expect(operations.at(-1)?.reason).toMatch(/pinned request/);
    // Without the harness's permission the pinned request is refused; with it, the request stays.
    expect(
      rehearsePlan(ledger, {}, { planner: 'fallback', operations: [operations.at(-1)!] }).rejected[0]?.reason,
    ).toBe('pinned');
    const allowed = rehearsePlan(
      ledger,
      {},
      { planner: 'fallback', operations: [operations.at(-1)!] },
      { spansOfPinnedRequests: true },
    );
    const view = projectView(ledger, allowed.stateAfter);
    expect(view.items[1]?.message).toBe(ledger.messages[1]);
    expect(view.items[2]?.message.parts[0]).toMatchObject({
      type: 'text',
      text: expect.stringMatching(/^\[folded conversation:user:1/),
    });
    expect(ids).not.toContain('conversation:user:4');
    // Functions come before conversations.
    expect(ids.findIndex((id) => id.startsWith('conversation:'))).toBe(
      ids.filter((id) => id.startsWith('function:')).length,
    );
  });

  it('does not count the outputs of a conversation twice when it prunes the conversation too', () => {
    const ledger = ledgerOf(longSession({ rounds: 20, requestEvery: 5 }));
    const viewTokens = projectView(ledger, {}).tokens;
    const allOutputs = ledger.objects
      .filter((object) => object.kind === 'function')
      .map((object) => ({ objectId: object.id, operation: 'prune' as const, reason: 'test' }));
    const outputsPruned = rehearsePlan(ledger, {}, { planner: 'test', operations: allOutputs }).tokensAfter;
    // Reachable only by pruning both past conversations (the first is pinned, the last is open).
    const target = outputsPruned - 300;
    const operations = planFallback(ledger, {}, viewTokens, target);
    expect(
      operations
        .filter((operation) => operation.objectId.startsWith('conversation:'))
        .map((operation) => operation.objectId),
    ).toEqual(['conversation:user:2', 'conversation:user:3']);
    const rehearsal = rehearsePlan(ledger, {}, { planner: 'fallback', operations });
    expect(rehearsal.tokensAfter).toBeLessThanOrEqual(target);
  });

  it('prunes outputs whose tombstone saves something first, then drops old steps with their shells', () => {
    const messages: Message[] = [userMessage('go')];
    for (let index = 0; index < 10; index += 1)
      messages.push(...toolRound(`c${index}`, 'bash', { command: `echo ${index}` }, 'ok'));
    messages.push(...longSession({ rounds: 3 }).slice(2));
    const ledger = ledgerOf(messages);
    const state: ViewState = {
      'function:read_file:11': { operation: 'prune', replacement: '', commitId: 'c1' },
    };
    const operations = planFallback(ledger, state, projectView(ledger, state).tokens, 0);
    // Phase one: only the reads save anything as tombstones (Read 13 is the last output but not
    // the latest turn: the closing assistant message is). Phase two takes every step, oldest first.
    expect(operations.slice(0, 2).map((operation) => operation.objectId)).toEqual([
      'function:read_file:12',
      'function:read_file:13',
    ]);
    expect(operations.every((operation) => operation.operation === 'prune')).toBe(true);
    const shells = operations.slice(2);
    expect(shells.length).toBeGreaterThan(3);
    expect(shells.every((operation) => operation.dropShell === true)).toBe(true);
    expect(shells.map((operation) => operation.objectId)).toEqual(
      Array.from({ length: shells.length }, (_, index) => `function:bash:${index + 1}`),
    );
  });

  it('counts an object already folded at its folded size', () => {
    const ledger = ledgerOf(longSession({ rounds: 6 }));
    const folded = rehearsePlan(
      ledger,
      {},
      {
        planner: 'test',
        operations: [{ objectId: 'function:read_file:1', operation: 'fold', reason: 'test' }],
      },
    ).stateAfter;
    const viewTokens = projectView(ledger, folded).tokens;
    // Pruning the folded read frees only the difference between its fold and its tombstone.
    const operations = planFallback(ledger, folded, viewTokens, viewTokens - 100);
    expect(operations.map((operation) => operation.objectId)).toEqual([
      'function:read_file:1',
      'function:read_file:2',
    ]);
  });
});
