/**
 * A session's governance state as the store keeps it: the committed object states (which,
 * with the ledger, determine the view) and the governor's trigger bookkeeping.
 */
import { StoreError } from './errors.js';
import type { ViewState } from './operations.js';
import type { SidecarStore } from './store.js';

export const SESSION_STATE_VERSION = 1;

/** Trigger bookkeeping carried from call to call (see `governor/`). */
export interface TriggerBookkeeping {
  /** Transcript length at the last governance run, committed or not. */
  lastRunAt: number;
  /** Transcript length at the last commit. */
  lastCommitAt: number;
  /** Governance runs in a row that freed nothing; opens the circuit breaker. */
  fruitlessRuns: number;
  /**
   * Milliseconds of the model call at the last governance run (for the cache TTL clock; the
   * governor also keeps the time of every call it sees in memory, and the later one counts).
   */
  lastCallTime?: number;
}

export interface SessionState {
  schemaVersion: number;
  /** Committed object states: absent means live. */
  objects: ViewState;
  /** Commits written so far; the next commit's sequence is this plus one. */
  sequence: number;
  triggers: TriggerBookkeeping;
}

export function emptySessionState(): SessionState {
  return {
    schemaVersion: SESSION_STATE_VERSION,
    objects: {},
    sequence: 0,
    triggers: { lastRunAt: 0, lastCommitAt: 0, fruitlessRuns: 0 },
  };
}

/** The stored state of a session (or an empty one at version 0), with its schema checked. */
export async function readSessionState(
  store: SidecarStore,
  sessionId: string,
): Promise<{ version: number; state: SessionState }> {
  const snapshot = await store.readSession(sessionId);
  if (!snapshot) return { version: 0, state: emptySessionState() };
  const state = snapshot.state as Partial<SessionState> | null;
  if (!state || state.schemaVersion !== SESSION_STATE_VERSION) {
    throw new StoreError(
      `session ${sessionId}: state schema version ${String(state?.schemaVersion)} is not ${SESSION_STATE_VERSION}`,
    );
  }
  return { version: snapshot.version, state: state as SessionState };
}
