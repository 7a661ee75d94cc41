import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../stores/memory-store.js';
import { commitIdFor, commitRehearsal, undoCommit } from './commit-plan.js';
import { BadInputError, NotFoundError } from './errors.js';
import { indexTranscript, type Ledger } from './ledger.js';
import { objectPayload } from './object-payload.js';
import type { PlannedOperation } from './operations.js';
import { projectView } from './project-view.js';
import { type RehearseOptions, rehearsePlan } from './rehearse-plan.js';
import { LEDGER_IDS, payloadKey, readSessionState } from './session-state.js';
import type { SidecarStore } from './store.js';
import { threeRequestSession } from './testing/sample-session.js';
import { approximateTokenCounter } from './tokens.js';

const SESSION = 'session-1';
const NOW = 1_767_225_600_000;

function session(): Ledger {
  return indexTranscript(threeRequestSession(), { tokenCounter: approximateTokenCounter });
}

function operation(
  objectId: string,
  kind: PlannedOperation['operation'],
  reason = `reason for ${objectId}`,
): PlannedOperation {
  return { objectId, operation: kind, reason };
}

/** Rehearse against the stored state and commit. */
async function commit(
  store: SidecarStore,
  ledger: Ledger,
  operations: PlannedOperation[],
  options: { trigger?: string; planner?: string; rehearse?: RehearseOptions } = {},
) {
  const snapshot = await readSessionState(store, SESSION);
  const rehearsal = rehearsePlan(
    ledger,
    snapshot.state.objects,
    { planner: options.planner ?? 'embedded', operations },
    options.rehearse,
  );
  const outcome = await commitRehearsal(
    { store, sessionId: SESSION, now: () => NOW, ...(options.trigger ? { trigger: options.trigger } : {}) },
    ledger,
    snapshot,
    rehearsal,
  );
  return { snapshot, rehearsal, outcome };
}

/** A memory store that logs the order of its writes. */
function recordingStore(log: string[]): SidecarStore {
  const store = createMemoryStore();
  return {
    ...store,
    putPayloads: async (records) => {
      log.push(`putPayloads:${records.map((record) => record.objectId).join(',')}`);
      await store.putPayloads(records);
    },
    writeCommit: async (...args) => {
      log.push(`writeCommit:${args[1].commitId}`);
      return store.writeCommit(...args);
    },
  };
}

describe('commitRehearsal', () => {
  it('records sequence, tokens, reasons, planner, trigger and time', async () => {
    const store = createMemoryStore();
    const ledger = session();
    const { rehearsal, outcome } = await commit(
      store,
      ledger,
      [operation('function:bash:5', 'mask'), operation('function:bash:2', 'prune')],
      { trigger: 'pressure' },
    );
    expect(outcome.status).toBe('committed');
    if (outcome.status !== 'committed') return;
    const { record } = outcome;
    expect(record).toMatchObject({
      sessionId: SESSION,
      sequence: 1,
      createdAt: NOW,
      planner: 'embedded',
      trigger: 'pressure',
      tokensBefore: rehearsal.tokensBefore,
      tokensAfter: rehearsal.tokensAfter,
    });
    expect(record.commitId).toBe(commitIdFor(SESSION, 0, ledger.chain.at(-1)!, rehearsal));
    expect(record.commitId).toMatch(/^c1-[0-9a-f]{16}$/);
    expect(record.operations).toEqual(
      rehearsal.accepted.map((entry) => ({
        objectId: entry.operation.objectId,
        operation: entry.operation.operation,
        reason: entry.operation.reason,
        tokensBefore: entry.tokensBefore,
        tokensAfter: entry.tokensAfter,
      })),
    );
    expect(await store.listCommits(SESSION)).toEqual([record]);
    const second = await commit(store, ledger, [operation('function:read_file:1', 'fold')]);
    expect(second.outcome.status === 'committed' && second.outcome.record.sequence).toBe(2);
    expect(second.outcome.status === 'committed' && second.outcome.record.trigger).toBe('request');
  });

  it('stores the new state: object states stamped with the commit id, the sequence and the commit point', async () => {
    const store = createMemoryStore();
    const ledger = session();
    const { outcome, rehearsal } = await commit(store, ledger, [operation('function:bash:5', 'fold')]);
    if (outcome.status !== 'committed') throw new Error(outcome.status);
    const stored = await readSessionState(store, SESSION);
    expect(stored).toEqual({ version: outcome.version, state: outcome.state });
    expect(stored.state.sequence).toBe(1);
    expect(stored.state.triggers.lastCommitAt).toBe(ledger.messages.length);
    expect(stored.state.objects['function:bash:5']).toEqual({
      ...rehearsal.stateAfter['function:bash:5'],
      commitId: outcome.record.commitId,
      binding: { end: ledger.get('function:bash:5')!.messageIndex + 1, link: expect.any(String) },
    });
    // The state is bound to the content it was made from, and so is its payload.
    const binding = stored.state.objects['function:bash:5']!.binding!;
    expect(binding.link).toBe(ledger.chain[binding.end - 1]);
    expect(stored.state.payloads).toEqual({ 'function:bash:5': binding });
    expect(stored.state.head).toEqual({ end: ledger.messages.length, link: ledger.chain.at(-1) });
    expect(projectView(ledger, stored.state.objects).tokens).toBe(rehearsal.tokensAfter);
  });

  it('writes every payload to the sidecar before the commit', async () => {
    const log: string[] = [];
    const store = recordingStore(log);
    const ledger = session();
    const { outcome } = await commit(store, ledger, [
      operation('function:bash:5', 'mask'),
      operation('conversation:user:2', 'prune'),
    ]);
    if (outcome.status !== 'committed') throw new Error(outcome.status);
    const key = payloadKey('conversation:user:2', outcome.state.payloads['conversation:user:2']!);
    // Under this version's numbering: a record an older one stored under the same binding is apart.
    expect(key).toMatch(new RegExp(`^conversation:user:2#[0-9a-f]{16}\\.${LEDGER_IDS}$`));
    expect(log).toEqual([`putPayloads:${key}`, `writeCommit:${outcome.record.commitId}`]);
    const record = await store.getPayload(SESSION, key);
    expect(record).toMatchObject({
      sessionId: SESSION,
      objectId: key,
      operation: 'prune',
      commitId: outcome.record.commitId,
      createdAt: NOW,
      payload: JSON.stringify(objectPayload(ledger, ledger.get('conversation:user:2')!)),
    });
    expect(record?.searchText).toContain('Now list the modules');
  });

  it('writes no payload for an expand', async () => {
    const log: string[] = [];
    const store = recordingStore(log);
    const ledger = session();
    await commit(store, ledger, [operation('function:bash:5', 'fold')]);
    log.length = 0;
    const { outcome } = await commit(store, ledger, [operation('function:bash:5', 'expand')]);
    expect(outcome.status).toBe('committed');
    expect(log.filter((entry) => entry.startsWith('putPayloads'))).toEqual([]);
    expect((await readSessionState(store, SESSION)).state.objects).toEqual({});
  });

  it('does nothing for an empty rehearsal', async () => {
    const log: string[] = [];
    const store = recordingStore(log);
    const { outcome } = await commit(store, session(), [
      operation('system:1', 'fold'),
      operation('nope', 'prune'),
    ]);
    expect(outcome).toEqual({ status: 'empty' });
    expect(log).toEqual([]);
    expect(await store.readSession(SESSION)).toBeUndefined();
  });

  it('is idempotent: the same rehearsal twice is a duplicate with the stored state', async () => {
    const store = createMemoryStore();
    const ledger = session();
    const { snapshot, rehearsal, outcome } = await commit(store, ledger, [
      operation('function:bash:5', 'fold'),
    ]);
    const again = await commitRehearsal(
      { store, sessionId: SESSION, now: () => NOW + 1 },
      ledger,
      snapshot,
      rehearsal,
    );
    expect(outcome.status).toBe('committed');
    expect(again.status).toBe('duplicate');
    if (again.status !== 'duplicate' || outcome.status !== 'committed') return;
    expect(again.state).toEqual(outcome.state);
    expect(again.version).toBe(outcome.version);
    expect(await store.listCommits(SESSION)).toHaveLength(1);
  });

  it('reports a conflict when the session moved on since the snapshot, and changes nothing', async () => {
    const store = createMemoryStore();
    const ledger = session();
    const stale = await readSessionState(store, SESSION);
    await commit(store, ledger, [operation('function:bash:5', 'fold')]);
    const before = await readSessionState(store, SESSION);
    const rehearsal = rehearsePlan(ledger, stale.state.objects, {
      planner: 'llm',
      operations: [operation('function:bash:2', 'prune')],
    });
    const outcome = await commitRehearsal(
      { store, sessionId: SESSION, now: () => NOW },
      ledger,
      stale,
      rehearsal,
    );
    expect(outcome).toEqual({ status: 'conflict', version: before.version });
    expect(await readSessionState(store, SESSION)).toEqual(before);
    expect(await store.listCommits(SESSION)).toHaveLength(1);
  });

  it('gives the same plan on the same version the same commit id, and another plan another id', () => {
    const ledger = session();
    const one = rehearsePlan(
      ledger,
      {},
      { planner: 'a', operations: [operation('function:bash:5', 'fold')] },
    );
    const same = rehearsePlan(
      ledger,
      {},
      { planner: 'b', operations: [operation('function:bash:5', 'fold', 'other reason')] },
    );
    const other = rehearsePlan(
      ledger,
      {},
      { planner: 'a', operations: [operation('function:bash:5', 'mask')] },
    );
    const head = ledger.chain.at(-1)!;
    expect(commitIdFor(SESSION, 3, head, one)).toBe(commitIdFor(SESSION, 3, head, same));
    expect(commitIdFor(SESSION, 3, head, one)).not.toBe(commitIdFor(SESSION, 3, head, other));
    expect(commitIdFor(SESSION, 3, head, one)).not.toBe(commitIdFor(SESSION, 4, head, one));
    expect(commitIdFor(SESSION, 3, head, one)).not.toBe(commitIdFor('session-2', 3, head, one));
    // The same operations for other content are another commit.
    expect(commitIdFor(SESSION, 3, head, one)).not.toBe(commitIdFor(SESSION, 3, `${head}x`, one));
  });
});

describe('undoCommit', () => {
  it('brings the objects back, as a new commit that names the one it undoes', async () => {
    const store = createMemoryStore();
    const ledger = session();
    const original = projectView(ledger, {});
    const { outcome } = await commit(store, ledger, [
      operation('function:bash:5', 'mask'),
      operation('function:bash:2', 'prune'),
      operation('function:read_file:1', 'fold'),
    ]);
    if (outcome.status !== 'committed') throw new Error(outcome.status);
    const undone = await undoCommit(
      { store, sessionId: SESSION, now: () => NOW + 5 },
      outcome.record.commitId,
    );
    expect(undone.status).toBe('committed');
    if (undone.status !== 'committed') return;
    expect(undone.record).toMatchObject({
      commitId: `undo-${outcome.record.commitId}`,
      sequence: 2,
      planner: 'undo',
      trigger: 'request',
      createdAt: NOW + 5,
      undoes: outcome.record.commitId,
      tokensBefore: outcome.record.tokensAfter,
      tokensAfter: outcome.record.tokensBefore,
    });
    expect(undone.record.operations.map((entry) => [entry.objectId, entry.operation, entry.reason])).toEqual(
      outcome.record.operations.map((entry) => [
        entry.objectId,
        'expand',
        `undo of ${outcome.record.commitId}`,
      ]),
    );
    const stored = await readSessionState(store, SESSION);
    expect(stored.state.objects).toEqual({});
    expect(stored.state.sequence).toBe(2);
    expect(projectView(ledger, stored.state.objects)).toEqual(original);
    expect((await store.listCommits(SESSION)).map((entry) => entry.sequence)).toEqual([1, 2]);
  });

  it('leaves objects that a later commit changed again', async () => {
    const store = createMemoryStore();
    const ledger = session();
    const first = await commit(store, ledger, [
      operation('function:bash:5', 'mask'),
      operation('function:bash:2', 'fold'),
    ]);
    const second = await commit(store, ledger, [operation('function:bash:5', 'prune')]);
    if (first.outcome.status !== 'committed' || second.outcome.status !== 'committed')
      throw new Error('not committed');
    const undone = await undoCommit({ store, sessionId: SESSION }, first.outcome.record.commitId);
    expect(undone.status === 'committed' && undone.record.operations.map((entry) => entry.objectId)).toEqual([
      'function:bash:2',
    ]);
    const objects = (await readSessionState(store, SESSION)).state.objects;
    expect(Object.keys(objects)).toEqual(['function:bash:5']);
    expect(objects['function:bash:5']?.operation).toBe('prune');
  });

  it('has nothing left to do when undone twice', async () => {
    const store = createMemoryStore();
    const { outcome } = await commit(store, session(), [operation('function:bash:5', 'fold')]);
    if (outcome.status !== 'committed') throw new Error(outcome.status);
    await undoCommit({ store, sessionId: SESSION }, outcome.record.commitId);
    expect(await undoCommit({ store, sessionId: SESSION }, outcome.record.commitId)).toEqual({
      status: 'empty',
    });
    expect(await store.listCommits(SESSION)).toHaveLength(2);
  });

  it('refuses an unknown commit and a commit that expanded objects', async () => {
    const store = createMemoryStore();
    const ledger = session();
    await expect(undoCommit({ store, sessionId: SESSION }, 'c9-nope')).rejects.toThrow(NotFoundError);
    await commit(store, ledger, [operation('function:bash:5', 'fold')]);
    const expanded = await commit(store, ledger, [operation('function:bash:5', 'expand')]);
    if (expanded.outcome.status !== 'committed') throw new Error(expanded.outcome.status);
    await expect(undoCommit({ store, sessionId: SESSION }, expanded.outcome.record.commitId)).rejects.toThrow(
      BadInputError,
    );
  });
});
