/**
 * The `recoverable` field of the emitted format (`selfgc replay --emit`): which messages' exact
 * content each sidecar key holds, so that another tool can judge a view on its own.
 */
import type { Ledger } from '../core/ledger.js';
import type { ViewState } from '../core/operations.js';
import { foldKey } from '../core/render-replacement.js';

/** Sidecar key → message indexes the sidecar holds. */
export function recoverableMap(ledger: Ledger, state: ViewState | undefined): Record<string, number[]> {
  const map: Record<string, number[]> = {};
  for (const [id, entry] of Object.entries(state ?? {})) {
    const object = ledger.get(id);
    if (!object) continue;
    const end = entry.spanEnd ?? object.span.end;
    map[foldKey(ledger, id, entry.spanEnd)] =
      object.kind === 'conversation'
        ? Array.from({ length: end - object.span.start }, (_, offset) => object.span.start + offset)
        : [object.messageIndex];
  }
  return map;
}
