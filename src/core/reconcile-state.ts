/**
 * Reconciliation: stored state checked against the transcript a client sends now. A pure
 * append keeps everything. A divergence — an edited or elided message, a truncated history,
 * another conversation under the same session id — invalidates every state bound past it:
 * those objects are live again in this view, their payloads are no longer offered for recovery
 * (the sidecar keeps them, under keys no new content can take), and the trigger bookkeeping
 * goes back to where the transcripts still agree.
 */
import { clientOutputSince, type Ledger, type LedgerObject } from './ledger.js';
import { type ContentBinding, isSpanFold, type ObjectState, type ViewState } from './operations.js';
import { foldKey, sidecarKey } from './render-replacement.js';
import { DEVELOPMENT_LEDGER_IDS, LEDGER_IDS, type SessionState, withoutDeferral } from './session-state.js';

export interface Reconciliation {
  /** The state that holds for this transcript. */
  state: SessionState;
  /** Ids of object states that no longer hold. */
  dropped: string[];
  /** Keys of payloads no longer offered for recovery: they were shown for other content. */
  droppedPayloads: string[];
  /**
   * Where the transcripts surely still agree, when they diverged: the furthest end of a state or
   * payload that holds (below an older numbering's first difference). Every key offered past it
   * was dropped here; `divergedAt` may lie elsewhere, measured against what an in-memory ledger
   * last saw.
   */
  agreed?: number;
  /**
   * Where the transcript stopped agreeing with the one of the last governance run, when it
   * did (`undefined` for a pure append). A lower bound when only the stored state was known.
   */
  divergedAt?: number;
  /**
   * Where the ids of a state an older version wrote stopped naming what they name now, when
   * that left something out (`LEDGER_IDS`).
   */
  renumberedFrom?: number;
}

/** Whether the transcript holds the content `binding` was made for. */
export function holds(ledger: Ledger, binding: ContentBinding | undefined): boolean {
  return binding !== undefined && binding.end > 0 && ledger.chain[binding.end - 1] === binding.link;
}

/** The binding of the transcript's first `end` messages. */
export function bindingAt(ledger: Ledger, end: number): ContentBinding {
  return { end, link: ledger.chain[end - 1] ?? '' };
}

/**
 * The messages a state of `objectId` covers, in this ledger: a span fold up to its end, a whole
 * conversation its span, anything else its payload message. Undefined when no such object.
 */
export function coveredEnd(ledger: Ledger, objectId: string, entry: ObjectState): number | undefined {
  const object = ledger.get(objectId);
  if (!object) return undefined;
  if (isSpanFold(entry)) return entry.spanEnd;
  return object.kind === 'conversation' ? object.span.end : object.messageIndex + 1;
}

function stateHolds(ledger: Ledger, objectId: string, entry: ObjectState): boolean {
  // A span fold ends inside its conversation's span, after the request: one stored for another
  // object of that id (another numbering, another store's) would make no view.
  const span = ledger.get(objectId)?.span;
  if (
    isSpanFold(entry) &&
    (span === undefined || entry.spanEnd <= span.start + 1 || entry.spanEnd > span.end)
  )
    return false;
  return coveredEnd(ledger, objectId, entry) === entry.binding?.end && holds(ledger, entry.binding);
}

/**
 * Whether a payload's binding holds, and its key still names what ends where the binding does:
 * an object (a conversation its span, an output its message), or a span fold (`id@spanEnd`)
 * inside its conversation. As the states are checked (`stateHolds`), so that no key offers bytes
 * another object of its id left.
 */
function payloadHolds(ledger: Ledger, key: string, binding: ContentBinding): boolean {
  if (!holds(ledger, binding)) return false;
  // The key as this ledger shows it (`foldKey`): a tag the session's keys no longer carry, or
  // lack, names no payload here.
  const base = withoutTag(key);
  const at = base.lastIndexOf('@');
  const id = at >= 0 ? base.slice(0, at) : base;
  const spanEnd = at >= 0 ? Number(base.slice(at + 1)) : undefined;
  const object = ledger.get(id);
  if (object === undefined || foldKey(ledger, id, spanEnd) !== key) return false;
  if (spanEnd !== undefined) {
    const { span } = object;
    return spanEnd === binding.end && spanEnd > span.start + 1 && spanEnd <= span.end;
  }
  return (object.kind === 'conversation' ? object.span.end : object.messageIndex + 1) === binding.end;
}

/** A recovery key without its tag (`Ledger.keyTag`): ids hold no `~`. */
function withoutTag(key: string): string {
  const at = key.lastIndexOf('~');
  return at < 0 ? key : key.slice(0, at);
}

/**
 * The state of `state` that holds for `ledger`. `knownDivergence`: where the caller saw this
 * transcript part from the previous one it indexed (an in-memory ledger), if it did.
 */
export function reconcileState(
  ledger: Ledger,
  stored: SessionState,
  knownDivergence?: number,
): Reconciliation {
  const { state, renumberedFrom, droppedIds } = underLedgerIds(ledger, stored);
  const payloads: Record<string, ContentBinding> = {};
  const contentDropped: string[] = [];
  // How far the transcripts surely agree: every binding that holds says so up to its end.
  let agreed = 0;
  for (const [key, binding] of Object.entries(state.payloads)) {
    if (payloadHolds(ledger, key, binding)) {
      payloads[key] = binding;
      agreed = Math.max(agreed, binding.end);
    } else contentDropped.push(key);
  }
  // Keys another numbering gave are dropped too: they were offered for content of their own.
  const droppedPayloads = [
    ...Object.keys(stored.payloads).filter((key) => !(key in state.payloads)),
    ...contentDropped,
  ];
  const objects: Record<string, ObjectState> = {};
  const dropped: string[] = [...droppedIds];
  // A state shows its payload's key: it holds only while that key still offers the payload (the
  // key another tagging gave it offers nothing now).
  let keyed: Set<string> | undefined;
  const keyHolds = (id: string, entry: ObjectState) => {
    if (foldKey(ledger, id, entry.spanEnd) in payloads) return true;
    keyed ??= new Set(Object.keys(state.payloads).map(withoutTag));
    return !keyed.has(sidecarKey(id, entry.spanEnd));
  };
  for (const [id, entry] of Object.entries(state.objects)) {
    if (stateHolds(ledger, id, entry) && keyHolds(id, entry)) {
      objects[id] = entry;
      agreed = Math.max(agreed, entry.binding?.end ?? 0);
    } else dropped.push(id);
  }
  const headHolds = state.head === undefined || holds(ledger, state.head);
  const contentHolds = headHolds && dropped.length === droppedIds.length && contentDropped.length === 0;
  if (contentHolds && renumberedFrom === undefined) return { state, dropped, droppedPayloads };
  const divergedAt = Math.min(
    knownDivergence ?? (contentHolds ? Number.POSITIVE_INFINITY : agreed),
    renumberedFrom ?? Number.POSITIVE_INFINITY,
  );
  const clamp = (value: number) => Math.min(value, divergedAt);
  const reconciled: SessionState = {
    ...state,
    objects: objects as ViewState,
    payloads,
    triggers: {
      // What a deferred plan could reach was measured on the other content.
      ...withoutDeferral(state.triggers),
      lastRunAt: clamp(state.triggers.lastRunAt),
      lastCommitAt: clamp(state.triggers.lastCommitAt),
      fruitlessRuns: 0,
    },
  };
  delete reconciled.head;
  return {
    state: reconciled,
    dropped,
    droppedPayloads,
    agreed: Math.min(agreed, renumberedFrom ?? Number.POSITIVE_INFINITY),
    divergedAt,
    ...(renumberedFrom === undefined ? {} : { renumberedFrom }),
  };
}

/**
 * `state` under this version's numbering (`LEDGER_IDS`). A state written before it may name by
 * another number every tool output from the first object a later numbering counts on: an output
 * a client attached to a request (since version 3), or a message a client sent inside the work
 * (`clientOutputSince`), which an older version took for a request, so that every request from
 * the first such message on may be named otherwise too. What it bound past there under such ids
 * (states, payloads, a pending plan) is left out, and `renumberedFrom` says where, when that left
 * anything out. Before there every numbering agrees, and system ids never move.
 */
function underLedgerIds(
  ledger: Ledger,
  state: SessionState,
): { state: SessionState; renumberedFrom?: number; droppedIds: string[] } {
  if (state.ids === LEDGER_IDS) return { state, droppedIds: [] };
  const stamped: SessionState = { ...state, ids: LEDGER_IDS };
  const first = (test: (object: LedgerObject) => boolean) =>
    ledger.objects.find(test)?.messageIndex ?? Number.POSITIVE_INFINITY;
  const development = state.ids !== undefined && DEVELOPMENT_LEDGER_IDS.has(state.ids);
  const counted = (since: number) => development || (state.ids ?? 0) < since;
  // The first output of a kind the state's numbering took for a request; under a development
  // numbering, the second request too, which it may have taken for an output.
  const requests = ledger.objects.filter((object) => object.kind === 'conversation');
  const reports = Math.min(
    first((object) => {
      const since = clientOutputSince(ledger, object);
      return since !== undefined && counted(since);
    }),
    development ? (requests[1]?.messageIndex ?? Number.POSITIVE_INFINITY) : Number.POSITIVE_INFINITY,
  );
  const outputs = Math.min(
    reports,
    counted(3) ? first((object) => object.attachedTo !== undefined) : Number.POSITIVE_INFINITY,
  );
  // Where ids of each kind stop agreeing: tool outputs at `outputs`, requests at `reports`.
  const holdsAt = (key: string, binding: ContentBinding | undefined) => {
    const end = binding?.end ?? 0;
    if (key.startsWith('function:') || key.startsWith('skill:')) return end <= outputs;
    return key.startsWith('conversation:') ? end <= reports : true;
  };
  const objects = Object.entries(state.objects);
  const payloads = Object.entries(state.payloads);
  const droppedIds = objects.filter(([id, entry]) => !holdsAt(id, entry.binding)).map(([id]) => id);
  const pendingHolds =
    state.pending === undefined ||
    state.pending.plan.operations.every((operation) => holdsAt(operation.objectId, state.pending!.binding));
  if (droppedIds.length === 0 && pendingHolds && payloads.every(([key, binding]) => holdsAt(key, binding)))
    return { state: stamped, droppedIds };
  const { pending, ...rest } = stamped;
  return {
    state: {
      ...rest,
      objects: Object.fromEntries(objects.filter(([id, entry]) => holdsAt(id, entry.binding))) as ViewState,
      payloads: Object.fromEntries(payloads.filter(([key, binding]) => holdsAt(key, binding))),
      ...(pending !== undefined && pendingHolds ? { pending } : {}),
    },
    renumberedFrom: outputs,
    droppedIds,
  };
}
