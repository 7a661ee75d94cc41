/**
 * The commit path: sidecar payloads are written durably first, then the commit record and the
 * new state replace the old one in a single atomic, version-checked write. A failure at any
 * step leaves the stored session exactly as it was; writing the same commit twice is a no-op.
 */
import { BadInputError, NotFoundError } from './errors.js';
import { hashText } from './hash.js';
import type { Ledger } from './ledger.js';
import { objectPayload, payloadSearchText } from './object-payload.js';
import type { ContentBinding, ObjectState } from './operations.js';
import { bindingAt, coveredEnd } from './reconcile-state.js';
import type { Rehearsal } from './rehearse-plan.js';
import { foldKey } from './render-replacement.js';
import { payloadKey, readSessionState, type SessionState, withoutDeferral } from './session-state.js';
import {
  type CommitRecord,
  type CommittedOperation,
  type SidecarRecord,
  type SidecarStore,
  STORE_SCHEMA_VERSION,
} from './store.js';

export interface CommitContext {
  store: SidecarStore;
  sessionId: string;
  /** Injected clock (milliseconds since the epoch). */
  now?: () => number;
  /** What set the governance run off, recorded in the commit. */
  trigger?: string;
  /** For a plan held pending: the transcript length it was planned at (`CommitRecord.pendingSince`). */
  pendingSince?: number;
}

export type CommitOutcome =
  | { status: 'committed'; record: CommitRecord; state: SessionState; version: number }
  | { status: 'duplicate'; state: SessionState; version: number }
  | { status: 'conflict'; version: number }
  | { status: 'empty' };

/**
 * The deterministic id of a commit: the same plan for the same transcript (`head`, the content
 * chain's last link) on the same state version gets the same id, and a plan of the same
 * operations for other content another.
 */
export function commitIdFor(sessionId: string, version: number, head: string, rehearsal: Rehearsal): string {
  const operations = rehearsal.accepted
    .map((entry) => `${entry.operation.operation}:${entry.operation.objectId}`)
    .join('|');
  return `c${version + 1}-${hashText(`${sessionId}\n${version}\n${head}\n${operations}`)}`;
}

/**
 * Commit a rehearsal made against `snapshot`. Payloads first (idempotent puts), then one
 * atomic `writeCommit`. Returns `conflict` when another writer moved the session on.
 */
export async function commitRehearsal(
  context: CommitContext,
  ledger: Ledger,
  snapshot: { version: number; state: SessionState },
  rehearsal: Rehearsal,
): Promise<CommitOutcome> {
  if (rehearsal.accepted.length === 0) return { status: 'empty' };
  const now = context.now ?? Date.now;
  const createdAt = now();
  const commitId = commitIdFor(context.sessionId, snapshot.version, ledger.chain.at(-1) ?? '', rehearsal);
  const payloads: SidecarRecord[] = [];
  const operations: CommittedOperation[] = [];
  const objects: Record<string, ObjectState> = { ...snapshot.state.objects };
  const bound: Record<string, ContentBinding> = { ...snapshot.state.payloads };
  for (const entry of rehearsal.accepted) {
    const object = ledger.get(entry.operation.objectId)!;
    operations.push({
      objectId: object.id,
      // Rehearsal refuses `keep`: what is accepted removes bytes or brings them back.
      operation: entry.operation.operation as CommittedOperation['operation'],
      reason: entry.operation.reason,
      tokensBefore: entry.tokensBefore,
      tokensAfter: entry.tokensAfter,
    });
    if (!entry.state) {
      delete objects[object.id];
      continue;
    }
    // The state and its payload are bound to the content they were made from: the sidecar key
    // names that content, so another conversation's object of the same id never shares it.
    const binding = bindingAt(ledger, coveredEnd(ledger, object.id, entry.state)!);
    objects[object.id] = { ...entry.state, commitId, binding };
    // A span fold is shown under its own key: a deeper one later holds more messages.
    const key = foldKey(ledger, object.id, entry.state.spanEnd);
    bound[key] = binding;
    payloads.push({
      schemaVersion: STORE_SCHEMA_VERSION,
      sessionId: context.sessionId,
      objectId: payloadKey(key, binding),
      operation: entry.state.operation,
      payload: JSON.stringify(objectPayload(ledger, object, entry.state.spanEnd)),
      searchText: payloadSearchText(ledger, object, entry.state.spanEnd),
      tokens: entry.tokensBefore,
      commitId,
      createdAt,
    });
  }
  const record: CommitRecord = {
    schemaVersion: STORE_SCHEMA_VERSION,
    sessionId: context.sessionId,
    commitId,
    sequence: snapshot.state.sequence + 1,
    createdAt,
    planner: rehearsal.plan.planner,
    trigger: context.trigger ?? 'request',
    operations,
    tokensBefore: rehearsal.tokensBefore,
    tokensAfter: rehearsal.tokensAfter,
    ...(context.pendingSince === undefined ? {} : { pendingSince: context.pendingSince }),
  };
  const state: SessionState = {
    ...snapshot.state,
    objects,
    payloads: bound,
    head: bindingAt(ledger, ledger.messages.length),
    sequence: record.sequence,
    // A deferral was weighed on the view this commit changes.
    triggers: { ...withoutDeferral(snapshot.state.triggers), lastCommitAt: ledger.messages.length },
  };
  // Sidecars before the view: if this throws, nothing the model sees has changed.
  if (payloads.length > 0) await context.store.putPayloads(payloads);
  const result = await context.store.writeCommit(context.sessionId, record, state, snapshot.version);
  if (result.status === 'conflict') return { status: 'conflict', version: result.version };
  if (result.status === 'duplicate') {
    const current = await readSessionState(context.store, context.sessionId);
    return { status: 'duplicate', state: current.state, version: current.version };
  }
  return { status: 'committed', record, state, version: result.version };
}

/**
 * Undo a commit: the objects it removed from the view come back, as a new commit. Objects that
 * a later commit changed again are left as they are.
 */
export async function undoCommit(context: CommitContext, commitId: string): Promise<CommitOutcome> {
  const commits = await context.store.listCommits(context.sessionId);
  const target = commits.find((commit) => commit.commitId === commitId);
  if (!target) throw new NotFoundError(`session ${context.sessionId} has no commit ${commitId}`);
  if (target.operations.some((operation) => operation.operation === 'expand')) {
    throw new BadInputError(`commit ${commitId} expanded objects; fold them again instead of undoing it`);
  }
  const snapshot = await readSessionState(context.store, context.sessionId);
  const objects: Record<string, ObjectState> = { ...snapshot.state.objects };
  const operations: CommittedOperation[] = [];
  for (const operation of target.operations) {
    if (objects[operation.objectId]?.commitId !== commitId) continue;
    delete objects[operation.objectId];
    operations.push({
      ...operation,
      operation: 'expand',
      reason: `undo of ${commitId}`,
      tokensBefore: operation.tokensAfter,
      tokensAfter: operation.tokensBefore,
    });
  }
  if (operations.length === 0) return { status: 'empty' };
  const record: CommitRecord = {
    schemaVersion: STORE_SCHEMA_VERSION,
    sessionId: context.sessionId,
    commitId: `undo-${commitId}`,
    sequence: snapshot.state.sequence + 1,
    createdAt: (context.now ?? Date.now)(),
    planner: 'undo',
    trigger: 'request',
    operations,
    tokensBefore: target.tokensAfter,
    tokensAfter: target.tokensBefore,
    undoes: commitId,
  };
  const state: SessionState = {
    ...snapshot.state,
    objects,
    sequence: record.sequence,
    // A deferral was weighed on the view this undo changes.
    triggers: withoutDeferral(snapshot.state.triggers),
  };
  const result = await context.store.writeCommit(context.sessionId, record, state, snapshot.version);
  if (result.status === 'conflict') return { status: 'conflict', version: result.version };
  if (result.status === 'duplicate')
    return { status: 'duplicate', state: snapshot.state, version: result.version };
  return { status: 'committed', record, state, version: result.version };
}
