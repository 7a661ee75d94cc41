import { describe, expect, it } from 'vitest';
import { indexTranscript } from './ledger.js';
import { KIND_RULES, liveTokens, rulesOf } from './object-kinds.js';
import { rehearsePlan } from './rehearse-plan.js';
import { threeRequestSession } from './testing/sample-session.js';
import { approximateTokenCounter } from './tokens.js';

const ledger = indexTranscript(threeRequestSession(), { tokenCounter: approximateTokenCounter });
const object = (id: string) => {
  const found = ledger.get(id);
  if (!found) throw new Error(`no ${id}`);
  return found;
};

describe('the rules of each kind', () => {
  it('has a row for every kind of object the ledger makes', () => {
    for (const entry of ledger.objects) expect(KIND_RULES[entry.kind]).toBeDefined();
  });

  it('never edits the instructions, but prunes a copy that restates them', () => {
    const system = object('system:1');
    for (const operation of ['fold', 'mask', 'prune', 'expand', 'keep'] as const)
      expect(rulesOf(system).refuses(system, operation)).toMatch(/never edited/);
    expect(rulesOf(system).refuses({ ...system, restates: 'system:0' }, 'prune')).toBeUndefined();
  });

  it('masks only single tool outputs', () => {
    const request = object('conversation:user:2');
    const output = object('function:bash:5');
    expect(rulesOf(request).refuses(request, 'mask')).toMatch(/single tool output/);
    expect(rulesOf(request).refuses(request, 'fold')).toBeUndefined();
    expect(rulesOf(output).refuses(output, 'mask')).toBeUndefined();
  });

  it('counts a request live with the work after it, an output by itself', () => {
    const request = object('conversation:user:2');
    let span = 0;
    for (let index = request.span.start; index < request.span.end; index += 1)
      span += ledger.messageTokens[index] ?? 0;
    expect(liveTokens(ledger, request)).toBe(span);
    expect(span).toBeGreaterThan(request.tokens);
    expect(liveTokens(ledger, object('function:bash:5'))).toBe(object('function:bash:5').tokens);
  });

  it('is what rehearsal applies: a request refused a mask, an output taking its call shell along', () => {
    const rehearsal = rehearsePlan(
      ledger,
      {},
      {
        planner: 'test',
        operations: [
          { objectId: 'conversation:user:2', operation: 'mask', reason: 'test' },
          { objectId: 'function:bash:5', operation: 'prune', reason: 'test', dropShell: true },
        ],
      },
    );
    expect(rehearsal.rejected.map((entry) => [entry.operation.objectId, entry.reason])).toEqual([
      ['conversation:user:2', 'not-applicable'],
    ]);
    expect(rehearsal.stateAfter['function:bash:5']).toMatchObject({ operation: 'prune', dropShell: true });
  });
});
