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
    await expect(readSessionState(store, 'future')).rejects.toThrow(/schema version 2 is not 1/);
    await store.writeState('null', null, 0);
    await expect(readSessionState(store, 'null')).rejects.toThrow(StoreError);
    expect(STORE_SCHEMA_VERSION).toBe(1);
  });
});
