import { describe, expect, it } from 'vitest';
import { createMemoryStore } from './memory-store.js';
import { describeStoreContract } from './store-contract.case.js';
import { commitRecord, newSessionId, payloadRecord } from './store-fixtures.case.js';

// No raw-write hooks: the memory store holds only records it checked on write, so the
// read-side schema check cannot be reached from outside (the write-side one is in the suite).
describeStoreContract('memory', async () => createMemoryStore());

describe('memory store', () => {
  it('never shares objects with its callers', async () => {
    const store = createMemoryStore();
    const session = newSessionId();
    const record = payloadRecord(session, 'function:bash:1');
    const state = { pins: ['system'] };
    const commit = commitRecord(session, 'commit-1', 1);
    await store.putPayloads([record]);
    await store.writeCommit(session, commit, state, 0);
    record.payload = 'changed by caller';
    state.pins.push('changed');
    commit.operations.length = 0;
    expect((await store.getPayload(session, 'function:bash:1'))?.payload).not.toBe('changed by caller');
    expect((await store.readSession(session))?.state).toEqual({ pins: ['system'] });
    expect((await store.listCommits(session))[0]?.operations).toHaveLength(1);
  });
});
