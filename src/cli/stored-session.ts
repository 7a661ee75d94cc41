/**
 * A live proxy session as its store holds it, for `selfgc inspect --store` and `selfgc sessions
 * show`. The store has no transcript: it shows the commits, the objects' committed states and
 * the sidecar's payload keys and sizes, never the payloads themselves (they may hold secrets).
 */
import { NotFoundError } from '../core/errors.js';
import { isSpanFold } from '../core/operations.js';
import { readSessionState } from '../core/session-state.js';
import type { SidecarStore } from '../core/store.js';
import { formatTable } from './format-table.js';

export interface StoredSessionReport {
  session: string;
  /** The state's version; 0 when only payloads were written. */
  version: number;
  /** ISO time of the latest write, when the store lists the session. */
  updatedAt?: string;
  /** Commits written so far, and the governor's trigger bookkeeping. */
  sequence: number;
  triggers: object;
  /** Objects that are not live: what the view shows in their place, and which commit did it. */
  objects: Array<{
    id: string;
    operation: string;
    commit: string;
    /** Tokens of the replacement in the view. */
    tokens?: number;
    replacementChars: number;
    spanEnd?: number;
  }>;
  commits: Array<{
    sequence: number;
    commit: string;
    time: string;
    planner: string;
    trigger: string;
    tokensBefore: number;
    tokensAfter: number;
    undoes?: string;
    operations: Array<{
      objectId: string;
      operation: string;
      reason: string;
      tokensBefore: number;
      tokensAfter: number;
    }>;
  }>;
  /** The sidecar's keys and sizes (UTF-8 bytes of the exact payload). */
  payloads: Array<{
    id: string;
    operation: string;
    tokens: number;
    bytes: number;
    commit: string;
    time: string;
  }>;
}

const iso = (milliseconds: number) => new Date(milliseconds).toISOString();

/** Everything the store holds of one session; a `NotFoundError` when it holds nothing. */
export async function readStoredSession(
  store: SidecarStore,
  sessionId: string,
): Promise<StoredSessionReport> {
  const snapshot = await readSessionState(store, sessionId);
  const [commits, payloads, listed] = await Promise.all([
    store.listCommits(sessionId),
    store.listPayloads(sessionId),
    store.listSessions({ prefix: sessionId }),
  ]);
  if (snapshot.version === 0 && commits.length === 0 && payloads.length === 0) {
    throw new NotFoundError(
      `no session "${sessionId}" in the ${store.kind} store (see selfgc sessions list)`,
    );
  }
  const summary = listed.find((entry) => entry.sessionId === sessionId);
  return {
    session: sessionId,
    version: snapshot.version,
    ...(summary === undefined ? {} : { updatedAt: iso(summary.updatedAt) }),
    sequence: snapshot.state.sequence,
    triggers: snapshot.state.triggers,
    objects: Object.entries(snapshot.state.objects).map(([id, state]) => ({
      id,
      operation: isSpanFold(state) ? `${state.operation} (span)` : state.operation,
      commit: state.commitId,
      ...(state.tokens === undefined ? {} : { tokens: state.tokens }),
      replacementChars: state.replacement.length,
      ...(state.spanEnd === undefined ? {} : { spanEnd: state.spanEnd }),
    })),
    commits: commits.map((commit) => ({
      sequence: commit.sequence,
      commit: commit.commitId,
      time: iso(commit.createdAt),
      planner: commit.planner,
      trigger: commit.trigger,
      tokensBefore: commit.tokensBefore,
      tokensAfter: commit.tokensAfter,
      ...(commit.undoes === undefined ? {} : { undoes: commit.undoes }),
      operations: commit.operations.map((operation) => ({ ...operation })),
    })),
    payloads: payloads.map((record) => ({
      id: record.objectId,
      operation: record.operation,
      tokens: record.tokens,
      bytes: Buffer.byteLength(record.payload, 'utf8'),
      commit: record.commitId,
      time: iso(record.createdAt),
    })),
  };
}

/** The report as text: a header line, then commits, object states and payloads as tables. */
export function formatStoredSession(report: StoredSessionReport): string {
  const bytes = report.payloads.reduce((sum, payload) => sum + payload.bytes, 0);
  const lines = [
    `session ${report.session}: version ${report.version}${report.updatedAt ? `, last written ${report.updatedAt}` : ''}, ` +
      `${report.commits.length} commits, ${report.objects.length} objects not live, ` +
      `${report.payloads.length} payloads (${bytes} bytes)\n`,
  ];
  if (report.commits.length > 0) {
    lines.push('\ncommits\n');
    lines.push(
      formatTable([
        ['#', 'commit', 'time', 'planner', 'trigger', 'operations', 'tokens'],
        ...report.commits.map((commit) => [
          String(commit.sequence),
          commit.commit,
          commit.time,
          commit.planner,
          commit.trigger,
          commit.undoes ? `undoes ${commit.undoes}` : String(commit.operations.length),
          `${commit.tokensBefore} → ${commit.tokensAfter}`,
        ]),
      ]),
    );
  }
  if (report.objects.length > 0) {
    lines.push('\nobjects (committed states)\n');
    lines.push(
      formatTable([
        ['id', 'state', 'commit', 'view tokens', 'replacement chars'],
        ...report.objects.map((object) => [
          object.id,
          object.operation,
          object.commit,
          object.tokens === undefined ? '-' : String(object.tokens),
          String(object.replacementChars),
        ]),
      ]),
    );
  }
  if (report.payloads.length > 0) {
    lines.push('\nsidecar payloads\n');
    lines.push(
      formatTable([
        ['id', 'operation', 'tokens', 'bytes', 'commit'],
        ...report.payloads.map((payload) => [
          payload.id,
          payload.operation,
          String(payload.tokens),
          String(payload.bytes),
          payload.commit,
        ]),
      ]),
    );
  }
  return lines.join('');
}
