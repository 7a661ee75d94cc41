import { describe, expect, it } from 'vitest';
import { indexTranscript } from '../core/ledger.js';
import type { ObjectState } from '../core/operations.js';
import { latestTurnStart } from '../core/rehearse-plan.js';
import type { CommitRecord } from '../core/store.js';
import { sampleSession } from '../core/testing/sample-session.js';
import { approximateTokenCounter } from '../core/tokens.js';
import { commitAuditOf, planAuditOf, touchesLatestTurn } from './latest-turn-audit.js';
import { applyPlan } from './strategies/selfgc-strategies.js';

// The sample session up to its last read: the latest turn is the assistant call at 12 and the
// read it got back (function:read_file:5 at 13), inside the open request conversation:user:2.
const ledger = indexTranscript(sampleSession().slice(0, 14), { tokenCounter: approximateTokenCounter });
const fold = (spanEnd?: number): ObjectState => ({
  operation: 'fold',
  replacement: '[folded]',
  commitId: 'c1',
  ...(spanEnd === undefined ? {} : { spanEnd, keepRequest: true }),
});

describe('touchesLatestTurn', () => {
  it('tells objects of the latest turn, and span folds that reach into it, from older ones', () => {
    const from = latestTurnStart(ledger);
    expect(from).toBe(12);
    expect(touchesLatestTurn(ledger, 'function:read_file:5', fold(), from)).toBe(true);
    expect(touchesLatestTurn(ledger, 'function:read_file:1', fold(), from)).toBe(false);
    expect(touchesLatestTurn(ledger, 'conversation:user:2', fold(13), from)).toBe(true);
    expect(touchesLatestTurn(ledger, 'conversation:user:1', fold(10), from)).toBe(false);
    expect(touchesLatestTurn(ledger, 'conversation:user:1', fold(), from)).toBe(false);
    expect(touchesLatestTurn(ledger, 'function:nothing:9', fold(), from)).toBe(false);
  });
});

describe('planAuditOf', () => {
  it('counts the operations a plan aimed at the latest turn, which the harness refused', () => {
    const output = applyPlan(ledger, {
      planner: 'test',
      operations: [
        { objectId: 'function:read_file:5', operation: 'fold', reason: 'aimed at the latest turn' },
        { objectId: 'function:read_file:1', operation: 'fold', reason: 'old read' },
      ],
    });
    expect(planAuditOf(ledger, output)).toEqual({ operations: 2, refused: 1, applied: 0 });
  });

  it('reads the states themselves, so a state on the latest turn is seen whatever the harness said', () => {
    const output = applyPlan(ledger, { planner: 'test', operations: [] });
    const forged = {
      ...output,
      state: {
        'function:read_file:5': fold(),
        'conversation:user:2': fold(13),
        'function:read_file:1': fold(),
      },
    };
    expect(planAuditOf(ledger, forged)).toEqual({ operations: 0, refused: 0, applied: 2 });
    expect(planAuditOf(ledger, { items: [], tokens: 0 })).toBeUndefined();
  });
});

describe('commitAuditOf', () => {
  const commit = (ids: string[]): CommitRecord => ({
    schemaVersion: 1,
    sessionId: 'replay',
    commitId: `c-${ids.join()}`,
    sequence: 1,
    createdAt: 0,
    planner: 'fallback',
    trigger: 'overflow',
    operations: ids.map((objectId) => ({
      objectId,
      operation: 'fold',
      reason: 'r',
      tokensBefore: 9,
      tokensAfter: 1,
    })),
    tokensBefore: 100,
    tokensAfter: 50,
  });
  const state = { 'function:read_file:5': fold(), 'function:read_file:1': fold() };

  it("counts committed operations on this call's latest turn", () => {
    expect(commitAuditOf(ledger, [commit(['function:read_file:1'])], state, [])).toEqual({
      commits: 1,
      operations: 1,
      applied: 0,
      windowRescue: 0,
    });
    expect(
      commitAuditOf(ledger, [commit(['function:read_file:1']), commit(['function:read_file:5'])], state, []),
    ).toEqual({ commits: 2, operations: 2, applied: 1, windowRescue: 0 });
  });

  it("counts them apart in a call where the governor's window rescue folded the latest turn", () => {
    const rescue = [{ code: 'latest-turn-folded', message: 'the latest turn alone is over the window' }];
    expect(commitAuditOf(ledger, [commit(['function:read_file:5'])], state, rescue)).toEqual({
      commits: 1,
      operations: 1,
      applied: 0,
      windowRescue: 1,
    });
    expect(commitAuditOf(ledger, [], undefined, [])).toEqual({
      commits: 0,
      operations: 0,
      applied: 0,
      windowRescue: 0,
    });
  });
});
