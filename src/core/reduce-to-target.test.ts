import { describe, expect, it } from 'vitest';
import { indexTranscript } from './ledger.js';
import type { PlannedOperation } from './operations.js';
import { planAgain, reduceToTarget } from './reduce-to-target.js';
import { type Rehearsal, rehearsePlan } from './rehearse-plan.js';
import { threeRequestSession } from './testing/sample-session.js';
import { approximateTokenCounter } from './tokens.js';

const ledger = indexTranscript(threeRequestSession(), { tokenCounter: approximateTokenCounter });

function rehearse(...operations: PlannedOperation[]): Rehearsal {
  return rehearsePlan(ledger, {}, { planner: 'test', operations });
}

const fold = (objectId: string): PlannedOperation => ({ objectId, operation: 'fold', reason: 'test' });
const prune = (objectId: string): PlannedOperation => ({ objectId, operation: 'prune', reason: 'test' });

describe('reduceToTarget', () => {
  const first = rehearse();
  // One more object per round, each measured by rehearsal.
  const queue = ['function:bash:5', 'function:bash:2', 'function:read_file:1'];
  const oneMore = (measured: Rehearsal, index: number) => {
    const next = queue[index];
    if (next === undefined) return { rehearsal: measured, done: true };
    return { rehearsal: planAgain(ledger, {}, measured, [prune(next)], 'test', {}) };
  };

  it('plans again on what each round measured until the view is at the target', () => {
    const oneRound = planAgain(ledger, {}, first, [prune(queue[0]!)], 'test', {});
    const reduced = reduceToTarget(first, { target: oneRound.tokensAfter, rounds: 5, round: oneMore });
    expect(reduced.tokensAfter).toBe(oneRound.tokensAfter);
    expect(reduced.plan.operations.map((operation) => operation.objectId)).toEqual([queue[0]]);
  });

  it('stops after its rounds, or when a round says nothing more can go', () => {
    const twoRounds = reduceToTarget(first, { target: 0, rounds: 2, round: oneMore });
    expect(twoRounds.plan.operations).toHaveLength(2);
    const all = reduceToTarget(first, { target: 0, rounds: 10, round: oneMore });
    expect(all.plan.operations).toHaveLength(queue.length);
    expect(all.tokensAfter).toBeLessThan(twoRounds.tokensAfter);
  });

  it('does not run a round when the first rehearsal is already at the target', () => {
    let rounds = 0;
    const reduced = reduceToTarget(first, {
      target: first.tokensAfter,
      rounds: 3,
      round: (measured) => {
        rounds += 1;
        return { rehearsal: measured };
      },
    });
    expect(rounds).toBe(0);
    expect(reduced).toBe(first);
  });
});

describe('planAgain', () => {
  it('puts later operations in the place of earlier ones on the same object', () => {
    const folded = rehearse(fold('function:bash:5'), fold('function:read_file:1'));
    const again = planAgain(ledger, {}, folded, [prune('function:bash:5')], 'deeper', {});
    expect(again.plan.planner).toBe('deeper');
    expect(again.plan.operations.map(({ objectId, operation }) => `${operation} ${objectId}`)).toEqual([
      'fold function:read_file:1',
      'prune function:bash:5',
    ]);
    expect(again.stateAfter['function:bash:5']?.operation).toBe('prune');
  });
});
