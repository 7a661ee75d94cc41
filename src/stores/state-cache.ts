/**
 * Decoded session states, kept per store so that a read which finds the very text it decoded
 * last time returns that decoding instead of parsing the same JSON again. The proxy reads each
 * session's state on every request, and a state holds every fold's replacement text, so this
 * parse is a large share of a read.
 *
 * What makes a cached state valid is byte identity with what the store holds, not a version
 * number (a session deleted and written again starts its versions over). A store that can tell
 * when nobody else has written since it last read or wrote a session (SQLite's `data_version`)
 * may also skip reading the text: `remember` what it read or wrote, `invalidate` when another
 * writer may have changed anything. Either way the store stays the source of truth, and nothing
 * is lost on a crash. Cached states are frozen, because every reader shares them.
 */
import type { SessionSnapshot } from '../core/store.js';
import { decodeState } from './record-codec.js';

/** Sessions whose decoded state is kept; the least recently used one goes first. */
const DEFAULT_LIMIT = 1000;

export interface StateCache {
  /** The state stored as `text` (as `decodeState` reads it), decoded once per distinct text. */
  decode(sessionId: string, text: string): unknown;
  /** The snapshot last remembered for a session, unless invalidated since. */
  current(sessionId: string): SessionSnapshot | undefined;
  /** What the store holds for a session now: it has just read or written `text` at `version`. */
  remember(sessionId: string, version: number, text: string): void;
  /** Another writer may have changed any session: no remembered snapshot is current any more. */
  invalidate(): void;
  forget(sessionId: string): void;
}

interface Entry {
  text: string;
  /** Decoded on first use. */
  state?: unknown;
  version: number;
  /** The `invalidate` generation it was remembered in; -1 when only decoded. */
  generation: number;
}

function freezeJson(value: unknown): unknown {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const item of Object.values(value)) freezeJson(item);
    Object.freeze(value);
  }
  return value;
}

export function createStateCache(limit = DEFAULT_LIMIT): StateCache {
  const entries = new Map<string, Entry>();
  let generation = 0;

  /** The entry for this text (the cached one when the text is the same), most recently used. */
  function entryFor(sessionId: string, text: string): Entry {
    const cached = entries.get(sessionId);
    entries.delete(sessionId);
    const entry =
      cached !== undefined && cached.text === text ? cached : { text, version: 0, generation: -1 };
    entries.set(sessionId, entry);
    if (entries.size > limit) entries.delete(entries.keys().next().value!);
    return entry;
  }

  function stateOf(sessionId: string, entry: Entry): unknown {
    if (!('state' in entry)) entry.state = freezeJson(decodeState(entry.text, sessionId));
    return entry.state;
  }

  return {
    decode(sessionId, text) {
      return stateOf(sessionId, entryFor(sessionId, text));
    },
    current(sessionId) {
      const entry = entries.get(sessionId);
      if (entry === undefined || entry.generation !== generation) return undefined;
      entries.delete(sessionId);
      entries.set(sessionId, entry);
      return { version: entry.version, state: stateOf(sessionId, entry) };
    },
    remember(sessionId, version, text) {
      const entry = entryFor(sessionId, text);
      entry.version = version;
      entry.generation = generation;
    },
    invalidate() {
      generation += 1;
    },
    forget(sessionId) {
      entries.delete(sessionId);
    },
  };
}
