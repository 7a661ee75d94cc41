/**
 * What each kind of object allows, one row per kind: which operations the harness applies to it,
 * what it occupies while live, and what its replacement costs beside itself. Rehearsal, planners
 * and the agent's ledger read these rules here instead of switching on the kind themselves.
 */
import type { Ledger, LedgerObject, ObjectKind } from './ledger.js';
import { spanTokens } from './ledger-measures.js';
import type { OperationKind } from './operations.js';
import { MESSAGE_OVERHEAD_TOKENS } from './tokens.js';

export interface KindRules {
  /** Why `operation` does not apply to `object` of this kind, or undefined when it does. */
  refuses(object: LedgerObject, operation: OperationKind): string | undefined;
  /** Tokens the object occupies in the view while live. */
  liveTokens(ledger: Ledger, object: LedgerObject): number;
  /** Tokens a non-empty replacement takes beside its own text (one that is a message of its own). */
  replacementOverhead: number;
  /** Whether a pruned object may take its call shell with it (see `PlannedOperation.dropShell`). */
  dropsShell: boolean;
}

const ownTokens = (_ledger: Ledger, object: LedgerObject) => object.tokens;

const toolOutput: KindRules = {
  refuses: () => undefined,
  liveTokens: ownTokens,
  replacementOverhead: 0,
  dropsShell: true,
};

export const KIND_RULES: Readonly<Record<ObjectKind, KindRules>> = {
  /** The instructions: never edited; only a copy that restates an earlier one word for word may go. */
  system: {
    refuses: (object, operation) =>
      object.restates !== undefined && operation === 'prune'
        ? undefined
        : 'system prompts are never edited; only one that restates an earlier one is pruned',
    liveTokens: ownTokens,
    replacementOverhead: 0,
    dropsShell: false,
  },
  /**
   * A user request and the work after it: folds whole or by span (the request stays), prunes
   * whole; its replacement is a message of its own.
   */
  conversation: {
    refuses: (_object, operation) =>
      operation === 'mask' ? 'mask applies to a single tool output' : undefined,
    liveTokens: spanTokens,
    replacementOverhead: MESSAGE_OVERHEAD_TOKENS,
    dropsShell: false,
  },
  /** A tool result: folds, masks (when long and repetitive) and prunes, with or without its call. */
  function: toolOutput,
  /**
   * Instructions the agent loaded (a skill, a rules file it read): a tool result like any other,
   * whose pin the pin rule decides (a rules file's latest read is pinned; an earlier read of the
   * same file, superseded by it, is not).
   */
  skill: toolOutput,
};

/** The rules of an object's kind. */
export function rulesOf(object: LedgerObject): KindRules {
  return KIND_RULES[object.kind];
}

/** Tokens an object occupies in the view while live: a conversation its whole span. */
export function liveTokens(ledger: Ledger, object: LedgerObject): number {
  return rulesOf(object).liveTokens(ledger, object);
}
