/**
 * Ledger rows: what a planner outside the harness (an LLM, the agent itself) is shown of each
 * object — never the payloads themselves, only sizes, states, protection and a short head.
 */

import { oneLine } from '../compact-text.js';
import { isToolOutput, type Ledger, type LedgerObject, type ObjectKind } from '../ledger.js';
import { assistantStepsAfter } from '../ledger-measures.js';
import { liveTokens } from '../object-kinds.js';
import type { ViewState } from '../operations.js';
import { describeCall, objectText } from '../render-replacement.js';
import type { RemovingOperation } from '../store.js';

export interface LedgerRow {
  id: string;
  kind: ObjectKind;
  /** Tokens the object holds in the view now (a conversation: its whole span, when live). */
  tokens: number;
  state: 'live' | RemovingOperation;
  /** Why no operation may touch it, when one may not: pinned, the latest turn, a system prompt. */
  protection?: 'pinned' | 'latest-turn' | 'system';
  /** Assistant steps since the agent or the user last referred to the object (or since it appeared). */
  stepsSinceUse: number;
  /**
   * The consumption mark: the first later message in which the agent itself used the object's
   * content (wrote one of its anchors: a path, an identifier, a value), when it has.
   */
  consumedAt?: number;
  isError: boolean;
  /** For tool outputs: the call that produced it, on one line. */
  call?: string;
  /** The first characters of the payload, on one line. */
  head: string;
}

export interface LedgerRowOptions {
  /** Messages from this index on are the latest turn. */
  protectFrom: number;
  /** Characters of payload head to show (default 120). */
  headChars?: number;
}

/** Why an object is out of every planner's reach, mirroring the harness's own checks. */
export function protectionOf(object: LedgerObject, protectFrom: number): LedgerRow['protection'] {
  if (object.kind === 'system') return 'system';
  if (object.pinned) return 'pinned';
  if (object.messageIndex >= protectFrom || object.span.end > protectFrom) return 'latest-turn';
  return undefined;
}

/** The first later message of the agent's own that refers to the object: its consumption mark. */
export function consumptionOf(ledger: Ledger, object: LedgerObject): number | undefined {
  return object.references.find((index) => ledger.messages[index]?.role === 'assistant');
}

/** One row per object, in transcript order. */
export function ledgerRows(ledger: Ledger, state: ViewState, options: LedgerRowOptions): LedgerRow[] {
  const stepsAfter = assistantStepsAfter(ledger);
  const headChars = options.headChars ?? 120;
  const counter = ledger.options.tokenCounter;
  return ledger.objects.map((object) => {
    const entry = state[object.id];
    const lastUse = object.references.at(-1) ?? object.messageIndex;
    const live = liveTokens(ledger, object);
    const protection = protectionOf(object, options.protectFrom);
    const consumedAt = consumptionOf(ledger, object);
    return {
      id: object.id,
      kind: object.kind,
      tokens: entry ? counter.count(entry.replacement) : live,
      state: entry?.operation ?? 'live',
      ...(protection ? { protection } : {}),
      stepsSinceUse: stepsAfter[lastUse + 1] ?? 0,
      ...(consumedAt === undefined ? {} : { consumedAt }),
      isError: object.isError,
      ...(isToolOutput(object) ? { call: oneLine(describeCall(object), 160) } : {}),
      head: oneLine(objectText(ledger, object), headChars),
    };
  });
}
