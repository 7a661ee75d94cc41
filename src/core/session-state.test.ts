import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../stores/memory-store.js';
import { StoreError } from './errors.js';
import { isSpanFold } from './operations.js';
import { emptySessionState, LEDGER_IDS, readSessionState, SESSION_STATE_VERSION } from './session-state.js';
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
      ids: LEDGER_IDS,
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
    await expect(readSessionState(store, 'future')).rejects.toThrow(/schema version 5 is not 4/);
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

  it('migrates version 2, which held no pending plan, as it is', async () => {
    const store = createMemoryStore();
    const binding = { end: 12, link: 'abc' };
    const v2 = {
      schemaVersion: 2,
      objects: {
        'function:bash:3': { operation: 'fold', replacement: '[folded]', commitId: 'c1-x', binding },
      },
      payloads: { 'function:bash:3': binding },
      head: binding,
      sequence: 1,
      triggers: { lastRunAt: 12, lastCommitAt: 12, fruitlessRuns: 0 },
    };
    await store.writeState('v2', v2, 0);
    expect(await readSessionState(store, 'v2')).toEqual({
      version: 1,
      state: { ...v2, schemaVersion: SESSION_STATE_VERSION },
    });
    await store.writeState('bad-v2', { ...v2, sequence: -1 }, 0);
    await expect(readSessionState(store, 'bad-v2')).rejects.toThrow(/malformed state at sequence/);
  });

  it('migrates version 3, whose keys were never tagged, as it is, and keeps where tagging starts', async () => {
    const store = createMemoryStore();
    const binding = { end: 12, link: 'abc' };
    const v3 = {
      schemaVersion: 3,
      objects: {},
      payloads: { 'function:bash:3': binding },
      sequence: 1,
      triggers: { lastRunAt: 12, lastCommitAt: 12, fruitlessRuns: 0 },
      ids: LEDGER_IDS,
    };
    await store.writeState('v3', v3, 0);
    expect(await readSessionState(store, 'v3')).toEqual({
      version: 1,
      state: { ...v3, schemaVersion: SESSION_STATE_VERSION },
    });
    const tagged = { ...v3, schemaVersion: SESSION_STATE_VERSION, keysTaggedFrom: 9 };
    await store.writeState('v4', tagged, 0);
    expect((await readSessionState(store, 'v4')).state).toEqual(tagged);
  });

  it('keeps a pending plan, and refuses one that is not a plan', async () => {
    const store = createMemoryStore();
    const pending = {
      plan: {
        planner: 'llm',
        operations: [
          { objectId: 'function:bash:3', operation: 'fold' as const, reason: 'old', summary: 'ran tests' },
          { objectId: 'conversation:user:1', operation: 'fold' as const, reason: 'done', spanEnd: 9 },
        ],
      },
      binding: { end: 14, link: 'def' },
    };
    await store.writeState('held', { ...emptySessionState(), pending }, 0);
    expect((await readSessionState(store, 'held')).state.pending).toEqual(pending);
    const unknown = {
      ...pending,
      plan: { planner: 'llm', operations: [{ objectId: 'x', operation: 'drop' }] },
    };
    await store.writeState('odd', { ...emptySessionState(), pending: unknown }, 0);
    await expect(readSessionState(store, 'odd')).rejects.toThrow(
      /malformed state at pending\.plan\.operations\.0/,
    );
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

describe('object states', () => {
  const binding = { end: 9, link: 'abc' };
  const stateWith = (objects: Record<string, unknown>) => ({ ...emptySessionState(), objects });

  it('reads each kind of state by its operation: fold, span fold, mask, prune', async () => {
    const store = createMemoryStore();
    const objects = {
      'function:bash:1': { operation: 'fold', replacement: '[folded]', commitId: 'c1', binding },
      'conversation:user:1': {
        operation: 'fold',
        replacement: '[folded steps]',
        commitId: 'c1',
        keepRequest: true,
        spanEnd: 7,
        binding,
      },
      'function:bash:2': { operation: 'mask', replacement: 'head … tail', commitId: 'c1', binding },
      'function:bash:3': { operation: 'prune', replacement: '', commitId: 'c1', dropShell: true, binding },
    };
    await store.writeState('kinds', stateWith(objects), 0);
    const { state } = await readSessionState(store, 'kinds');
    expect(state.objects).toEqual(objects);
    expect(Object.keys(state.objects).filter((id) => isSpanFold(state.objects[id]))).toEqual([
      'conversation:user:1',
    ]);
  });

  it('reads a fold that keeps its request without saying where its span ends as a whole fold', async () => {
    const store = createMemoryStore();
    const loose = { operation: 'fold', replacement: '[folded]', commitId: 'c1', keepRequest: true, binding };
    await store.writeState('loose', stateWith({ 'conversation:user:2': loose }), 0);
    const entry = (await readSessionState(store, 'loose')).state.objects['conversation:user:2'];
    expect(entry).toEqual({ operation: 'fold', replacement: '[folded]', commitId: 'c1', binding });
    expect(isSpanFold(entry)).toBe(false);
  });

  it('refuses a state whose operation is none of them', async () => {
    const store = createMemoryStore();
    const odd = { operation: 'shred', replacement: '', commitId: 'c1', binding };
    await store.writeState('odd', stateWith({ 'function:bash:4': odd }), 0);
    await expect(readSessionState(store, 'odd')).rejects.toThrow(/objects\.function:bash:4/);
  });
});
