import type { RemovingOperation, SidecarRecord } from '../core/store.js';
import { checkSchemaVersion } from './record-codec.js';

/** A payload record as the SQL stores (SQLite, Postgres) keep it: one column per field. */
export interface PayloadRow {
  session_id: string;
  object_id: string;
  schema_version: number;
  operation: string;
  payload: string;
  search_text: string;
  tokens: number;
  commit_id: string;
  /** Postgres returns its bigint columns as strings; SQLite returns numbers. */
  created_at: number | string;
}

/** The columns of `PayloadRow`, in the order `payloadRowValues` gives their values. */
export const PAYLOAD_COLUMNS =
  'session_id, object_id, schema_version, operation, payload, search_text, tokens, commit_id, created_at';

/** The values of `PAYLOAD_COLUMNS` for one record, for a parameterised INSERT. */
export function payloadRowValues(record: SidecarRecord): (string | number)[] {
  return [
    record.sessionId,
    record.objectId,
    record.schemaVersion,
    record.operation,
    record.payload,
    record.searchText,
    record.tokens,
    record.commitId,
    record.createdAt,
  ];
}

/** The record a row holds; refuses unknown schema versions. */
export function recordFromRow(row: PayloadRow): SidecarRecord {
  checkSchemaVersion(row.schema_version, `payload ${row.session_id}/${row.object_id}`);
  return {
    schemaVersion: row.schema_version,
    sessionId: row.session_id,
    objectId: row.object_id,
    operation: row.operation as RemovingOperation,
    payload: row.payload,
    searchText: row.search_text,
    tokens: row.tokens,
    commitId: row.commit_id,
    // Milliseconds since the epoch fit a double exactly.
    createdAt: Number(row.created_at),
  };
}
