/**
 * Operations, plans and the per-object state they leave. Everything here is plain data: the
 * harness (`rehearse-plan.ts`, `commit-plan.ts`) gives it meaning.
 */
import type { RemovingOperation } from './store.js';

/** What a planner may ask for one object. `keep` is the default and changes nothing. */
export type OperationKind = RemovingOperation | 'expand' | 'keep';

/** One proposed operation. */
export interface PlannedOperation {
  /** Id of an existing object (`function:bash:7`). Unknown ids are rejected at rehearsal. */
  objectId: string;
  operation: OperationKind;
  /** Why — recorded in the commit and shown by `selfgc inspect`. */
  reason: string;
  /** For `fold`: a summary the planner wrote; the harness still appends anchors and the pointer. */
  summary?: string;
  /**
   * For `prune` of a tool output, as a last resort: the assistant message that made the call
   * leaves the view too (text included) once all its calls are pruned this way. Its exact bytes
   * stay in the sidecar with the output.
   */
  dropShell?: boolean;
  /**
   * For `fold` of a conversation: fold only the work that followed the request, up to this
   * message index (exclusive), keeping the request and the later steps. Works on a running
   * conversation, and on a pinned one (the pin protects the request, not the steps after it).
   */
  spanEnd?: number;
  /**
   * For a span fold: the bound of its index in tokens, where a reduction shares one among spans.
   * With it, a span already folded that far is rendered again at this bound, larger or smaller.
   */
  indexTokens?: number;
}

/** A list of operations from one planner. */
export interface Plan {
  /** Who proposed it: `embedded`, `llm`, `agent`, `fallback`, ... */
  planner: string;
  operations: PlannedOperation[];
}

/**
 * Where committed state is bound in the transcript: the last message it covers and the content
 * chain's link there (`Ledger.chain`). The state holds for a transcript only while that link
 * is the same, that is while every message up to `end` is the same content.
 */
export interface ContentBinding {
  /** Exclusive end of the messages the state covers. */
  end: number;
  /** `Ledger.chain[end - 1]` when the state was committed. */
  link: string;
}

/** What every committed state of an object holds. */
interface StateCommon {
  /** Exactly what the view shows in the object's place (a tombstone for prune; may be empty). */
  replacement: string;
  /** Commit that set this state. */
  commitId: string;
  /**
   * Tokens of `replacement`, counted once at rehearsal so that projection never re-counts it.
   * Absent in states written before it existed: projection counts those.
   */
  tokens?: number;
  /**
   * The content this state was committed for. Every stored state has one (the commit sets it);
   * states a rehearsal proposes do not yet.
   */
  binding?: ContentBinding;
}

/** An object folded whole: a header, the index of what it held and a recovery pointer. */
export interface FoldState extends StateCommon {
  operation: 'fold';
  keepRequest?: never;
  spanEnd?: never;
  dropShell?: never;
}

/**
 * A span fold: the request stays verbatim, the work after it up to `spanEnd` (exclusive, a step
 * boundary) is one folded message; its recovery key is `<conversation id>@<spanEnd>`.
 */
export interface SpanFoldState extends StateCommon {
  operation: 'fold';
  keepRequest: true;
  spanEnd: number;
  dropShell?: never;
}

/** A long repetitive output shown by its head, structure lines and tail. */
export interface MaskState extends StateCommon {
  operation: 'mask';
  keepRequest?: never;
  spanEnd?: never;
  dropShell?: never;
}

/** A pruned object: a tombstone, or nothing when its call shell leaves with it. */
export interface PruneState extends StateCommon {
  operation: 'prune';
  /** A pruned output whose call shell leaves with it (see `PlannedOperation.dropShell`). */
  dropShell?: boolean;
  keepRequest?: never;
  spanEnd?: never;
}

/** The committed state of one object that is not live. Absent from the map means live. */
export type ObjectState = FoldState | SpanFoldState | MaskState | PruneState;

/** Whether a state is a span fold (the request stays, the work after it folded). */
export function isSpanFold(state: ObjectState | undefined): state is SpanFoldState {
  return state?.keepRequest === true;
}

/** Committed object states by object id: together with the ledger, this determines the view. */
export type ViewState = Readonly<Record<string, ObjectState>>;

/** Why the harness refused an operation. */
export type RejectionReason =
  | 'unknown-object'
  | 'pinned'
  | 'latest-turn'
  | 'open-conversation'
  | 'not-maskable'
  | 'not-applicable'
  | 'no-op'
  | 'covered'
  | 'duplicate';

export interface RejectedOperation {
  operation: PlannedOperation;
  reason: RejectionReason;
  detail: string;
}

/** An operation the harness accepted, with what it will put in the view. */
export interface AcceptedOperation {
  operation: PlannedOperation;
  /** The state after it; undefined for `expand` (the object becomes live again). */
  state: ObjectState | undefined;
  /** Tokens of the object's span in the view before and after this operation alone. */
  tokensBefore: number;
  tokensAfter: number;
}

/**
 * The operations of a plan that deepens: `more` appended, each taking the place of an earlier
 * operation on the same object (a span fold that goes further, a fold that becomes a prune).
 */
export function supersedeOperations(
  operations: readonly PlannedOperation[],
  more: readonly PlannedOperation[],
): PlannedOperation[] {
  const replaced = new Set(more.map((operation) => operation.objectId));
  return [...operations.filter((operation) => !replaced.has(operation.objectId)), ...more];
}
