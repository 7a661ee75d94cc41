/**
 * After the load: every sidecar record is where it belongs. Each session's namespace holds only
 * payloads carrying that session's marker, every removed object has its payload, and a key that
 * names another key's session id finds nothing.
 */

import { sidecarKey } from '../src/core/render-replacement.js';
import { type SessionState, sidecarKeyOf } from '../src/core/session-state.js';
import type { SidecarStore } from '../src/core/store.js';
import { hashApiKey } from '../src/proxy/session-identity.js';
import type { LoadSession, TurnResult } from './proxy-load-sessions.js';
import type { Check } from './proxy-load-stats.js';

function namespaceOf(session: LoadSession, sessionId: string): string {
  return `${hashApiKey(new Headers({ authorization: `Bearer ${session.apiKey}` }))}:${sessionId}`;
}

export interface SidecarAudit {
  checks: Check[];
  payloads: number;
  commits: number;
}

export async function auditSidecar(
  store: SidecarStore,
  results: readonly TurnResult[],
): Promise<SidecarAudit> {
  const sessionIds = new Map<LoadSession, Set<string>>();
  for (const result of results) {
    const ids = sessionIds.get(result.session) ?? new Set<string>();
    if (result.sessionId !== null) ids.add(result.sessionId);
    sessionIds.set(result.session, ids);
  }
  const stable = [...sessionIds.values()].every((ids) => ids.size === 1);
  const markers = [...sessionIds.keys()].map((session) => session.marker);
  let payloads = 0;
  let commits = 0;
  const foreign: string[] = [];
  const missing: string[] = [];
  for (const [session, ids] of sessionIds) {
    const [sessionId] = ids;
    if (sessionId === undefined) continue;
    const namespace = namespaceOf(session, sessionId);
    const records = await store.listPayloads(namespace);
    payloads += records.length;
    commits += (await store.listCommits(namespace)).length;
    for (const record of records) {
      const own = record.payload.includes(`(${session.marker})`);
      const other = markers.some(
        (marker) => marker !== session.marker && record.payload.includes(`(${marker})\\n`),
      );
      if (!own || other || record.sessionId !== namespace)
        foreign.push(`${session.marker}/${record.objectId}`);
    }
    const state = (await store.readSession(namespace))?.state as SessionState | undefined;
    const stored = new Set(records.map((record) => record.objectId));
    // Each removed object's payload sits under its recovery key bound to the content it was
    // taken from (`key#link`); a span fold has a recovery key of its own (`id@spanEnd`).
    for (const [objectId, entry] of Object.entries(state?.objects ?? {})) {
      const key = sidecarKey(objectId, entry.spanEnd);
      const bound = state === undefined ? undefined : sidecarKeyOf(state, key);
      if (bound === undefined || !stored.has(bound)) missing.push(`${session.marker}/${key}`);
    }
  }
  // Explicit session names repeat across keys: under a key that never used a name, it is empty.
  const named = [...sessionIds.keys()].filter((session) => session.sessionHeader !== undefined);
  let leaks = 0;
  for (const session of named.slice(0, 20)) {
    const stranger = { ...session, apiKey: `${session.apiKey}-stranger` };
    const name = session.sessionHeader!;
    leaks += (await store.listPayloads(namespaceOf(stranger, name))).length;
    leaks += (await store.listCommits(namespaceOf(stranger, name))).length;
  }
  return {
    payloads,
    commits,
    checks: [
      { name: 'one session id per session', ok: stable, detail: `${sessionIds.size} sessions` },
      {
        name: 'sidecar records only in their own session',
        ok: foreign.length === 0,
        detail:
          foreign.length === 0
            ? `${payloads} records checked`
            : `misplaced: ${foreign.slice(0, 5).join(', ')}`,
      },
      {
        name: 'no sidecar record lost',
        ok: missing.length === 0 && payloads > 0,
        detail:
          missing.length === 0
            ? `every removed object has its payload`
            : `missing: ${missing.slice(0, 5).join(', ')}`,
      },
      {
        name: 'another key sees nothing',
        ok: leaks === 0,
        detail: `${named.slice(0, 20).length} names probed`,
      },
    ],
  };
}
