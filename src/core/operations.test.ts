import { describe, expect, it } from 'vitest';
import { type PlannedOperation, supersedeOperations } from './operations.js';

describe('supersedeOperations', () => {
  it('appends the new operations, each replacing an earlier one on its object', () => {
    const first: PlannedOperation[] = [
      { objectId: 'conversation:user:1', operation: 'fold', spanEnd: 8, reason: 'old work' },
      { objectId: 'function:bash:2', operation: 'fold', reason: 'idle' },
    ];
    const more: PlannedOperation[] = [
      { objectId: 'conversation:user:1', operation: 'fold', spanEnd: 14, reason: 'deeper' },
      { objectId: 'function:bash:5', operation: 'mask', reason: 'log' },
    ];
    expect(supersedeOperations(first, more)).toEqual([first[1], ...more]);
    expect(first).toHaveLength(2);
  });
});
