import { BadInputError, StoreError } from '../core/errors.js';
import { type CommitRecord, type SidecarRecord, STORE_SCHEMA_VERSION } from '../core/store.js';

/** Throw a `StoreError` unless `version` is the record schema this code reads and writes. */
export function checkSchemaVersion(version: unknown, where: string): void {
  if (version !== STORE_SCHEMA_VERSION) {
    throw new StoreError(
      `${where}: unknown schema version ${String(version)} (this reader knows ${STORE_SCHEMA_VERSION})`,
    );
  }
}

/**
 * Write-side check of a payload batch, done before anything is written: a store never writes
 * a record it could not read back, so a batch with one unknown version is refused whole.
 */
export function checkPayloadsWritable(records: readonly SidecarRecord[]): void {
  for (const record of records) {
    checkSchemaVersion(record.schemaVersion, `payload ${record.sessionId}/${record.objectId}`);
  }
}

/** Write-side check of a commit: known schema version, and filed under its own session. */
export function checkCommitWritable(sessionId: string, commit: CommitRecord): void {
  checkSchemaVersion(commit.schemaVersion, `commit ${commit.commitId}`);
  if (commit.sessionId !== sessionId) {
    throw new BadInputError(
      `commit ${commit.commitId} belongs to session ${commit.sessionId}, not ${sessionId}`,
    );
  }
}

/** JSON text of anything the store keeps as JSON; `undefined` state is kept as `null`. */
export function encodeJson(value: unknown): string {
  return JSON.stringify(value) ?? 'null';
}

function decodeJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new StoreError(`${where}: stored JSON is corrupt`, { cause: error });
  }
}

/** Session state as stored by `encodeJson`. */
export function decodeState(text: string, sessionId: string): unknown {
  return decodeJson(text, `state of session ${sessionId}`);
}

function decodeVersioned(text: string, where: string): Record<string, unknown> {
  const value = decodeJson(text, where);
  if (typeof value !== 'object' || value === null) throw new StoreError(`${where}: not a record`);
  checkSchemaVersion((value as { schemaVersion?: unknown }).schemaVersion, where);
  return value as Record<string, unknown>;
}

/** A commit stored as JSON text; refuses unknown schema versions. */
export function decodeCommit(text: string, sessionId: string): CommitRecord {
  return decodeVersioned(text, `commit of session ${sessionId}`) as unknown as CommitRecord;
}

/** A payload record stored as JSON text (Redis); refuses unknown schema versions. */
export function decodePayload(text: string, sessionId: string): SidecarRecord {
  return decodeVersioned(text, `payload of session ${sessionId}`) as unknown as SidecarRecord;
}

/** Commits in sequence order; the sort is stable, so equal sequences keep write order. */
export function sortCommits(commits: CommitRecord[]): CommitRecord[] {
  return commits.sort((left, right) => left.sequence - right.sequence);
}
