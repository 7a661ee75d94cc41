import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../stores/memory-store.js';
import { StoreError } from './errors.js';
import { emptySessionState, readSessionState, SESSION_STATE_VERSION } from './session-state.js';
import { STORE_SCHEMA_VERSION } from './store.js';

describe('readSessionState', () => {
  it('gives an empty state at version 0 for a session never written', async () => {
    const store = createMemoryStore();
    expect(await readSessionState(store, 'new')).toEqual({ version: 0, state: emptySessionState() });
    expect(emptySessionState()).toEqual({
      schemaVersion: SESSION_STATE_VERSION,
      objects: {},
      payloads: {},
      sequence: 0,
      triggers: { lastRunAt: 0, lastCommitAt: 0, fruitlessRuns: 0 },
    });
  });

  it('gives the stored state and its version', async () => {
    const store = createMemoryStore();
    const state = { ...emptySessionState(), sequence: 3 };
    await store.writeState('s', state, 0);
    expect(await readSessionState(store, 's')).toEqual({ version: 1, state });
  });

  it('refuses a state of another schema version, and a state that is not one', async () => {
    const store = createMemoryStore();
    await store.writeState('future', { ...emptySessionState(), schemaVersion: SESSION_STATE_VERSION + 1 }, 0);
    await expect(readSessionState(store, 'future')).rejects.toThrow(StoreError);
    await expect(readSessionState(store, 'future')).rejects.toThrow(/schema version 3 is not 2/);
    await store.writeState('null', null, 0);
    await expect(readSessionState(store, 'null')).rejects.toThrow(StoreError);
    expect(STORE_SCHEMA_VERSION).toBe(1);
  });

  it('migrates version 1 by dropping object states it cannot check against content', async () => {
    const store = createMemoryStore();
    const v1 = {
      schemaVersion: 1,
      objects: { 'function:bash:3': { operation: 'fold', replacement: '[folded]', commitId: 'c1-x' } },
      sequence: 4,
      triggers: { lastRunAt: 30, lastCommitAt: 28, fruitlessRuns: 2, lastCallTime: 5 },
    };
    await store.writeState('old', v1, 0);
    expect(await readSessionState(store, 'old')).toEqual({
      version: 1,
      state: {
        ...emptySessionState(),
        sequence: 4,
        triggers: { lastRunAt: 0, lastCommitAt: 0, fruitlessRuns: 0, lastCallTime: 5 },
      },
    });
  });

  it('refuses a malformed state with the path of what is wrong', async () => {
    const store = createMemoryStore();
    const unbound = {
      ...emptySessionState(),
      objects: { 'function:bash:3': { operation: 'fold', replacement: '[folded]', commitId: 'c1-x' } },
    };
    await store.writeState('unbound', unbound, 0);
    await expect(readSessionState(store, 'unbound')).rejects.toThrow(
      /session unbound: malformed state at objects\.function:bash:3\.binding/,
    );
  });
});
