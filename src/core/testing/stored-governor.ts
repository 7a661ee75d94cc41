/**
 * Governors over stored state, for tests of what a store holds between calls: a window nothing
 * these tests send fills, so that only the stored state changes the view.
 */
import { createMemoryStore } from '../../stores/memory-store.js';
import { createGovernor } from '../governor/create-governor.js';
import type { Ledger } from '../ledger.js';
import type { ContentBinding, ViewState } from '../operations.js';
import type { SessionState } from '../session-state.js';
import { approximateTokenCounter } from '../tokens.js';

/** A governor over a memory store that holds `state` for session `s`, when given. */
export async function storedGovernor(state?: SessionState) {
  const store = createMemoryStore();
  if (state !== undefined) await store.writeState('s', state, 0);
  const governor = createGovernor({
    provider: 'anthropic',
    window: 100_000,
    store,
    tokenCounter: approximateTokenCounter,
  });
  return { governor, store };
}

/**
 * A state as a version before `LEDGER_IDS` stored it (no `ids`), its head and bookkeeping at the
 * end of `ledger`'s transcript.
 */
export function olderState(
  ledger: Ledger,
  objects: ViewState,
  payloads: Record<string, ContentBinding> = {},
): SessionState {
  const end = ledger.messages.length;
  return {
    schemaVersion: 3,
    objects,
    payloads,
    head: { end, link: ledger.chain[end - 1]! },
    sequence: 1,
    triggers: { lastRunAt: end, lastCommitAt: end, fruitlessRuns: 0 },
  };
}
