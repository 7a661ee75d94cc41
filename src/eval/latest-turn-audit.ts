/**
 * The latest-turn audit: the harness refuses any operation on the latest turn (the agent is
 * still working on it), so a plan may aim there but no state in effect may cover it. This reads
 * the states themselves, not the harness's verdicts, so a harness that let one through is seen.
 */
import type { Ledger } from '../core/ledger.js';
import type { ObjectState, ViewState } from '../core/operations.js';
import { latestTurnStart } from '../core/rehearse-plan.js';
import type { CommitRecord } from '../core/store.js';
import type { Warning } from '../core/transcript.js';
import type { CommitAuditOutcome, PlanAuditOutcome } from './aggregate-judge.js';
import type { StrategyOutput } from './strategies/strategy.js';

/**
 * Whether the state of object `id` hides a message at or after `from`: the object's own message,
 * or for a request the messages its fold or prune removes (up to `spanEnd` for a span fold).
 */
export function touchesLatestTurn(ledger: Ledger, id: string, entry: ObjectState, from: number): boolean {
  const object = ledger.get(id);
  if (!object) return false;
  if (object.messageIndex >= from) return true;
  return object.kind === 'conversation' && (entry.spanEnd ?? object.span.end) > from;
}

function countTouching(ledger: Ledger, state: ViewState, ids: Iterable<string>): number {
  const from = latestTurnStart(ledger);
  let count = 0;
  for (const id of ids) {
    const entry = state[id];
    if (entry && touchesLatestTurn(ledger, id, entry, from)) count += 1;
  }
  return count;
}

/** The audit of one cut-mode plan, when the strategy planned through the harness. */
export function planAuditOf(ledger: Ledger, output: StrategyOutput): PlanAuditOutcome | undefined {
  if (!output.rehearsal) return undefined;
  const state = output.state ?? {};
  return {
    operations: output.rehearsal.operations,
    refused: output.rehearsal.rejected.filter((rejection) => rejection.reason === 'latest-turn').length,
    applied: countTouching(ledger, state, Object.keys(state)),
  };
}

/** The code of the governor's warning when its last resort folded the latest turn. */
const WINDOW_RESCUE_CODE = 'latest-turn-folded';

/** The audit of the commits one governed model call made, against that call's latest turn. */
export function commitAuditOf(
  ledger: Ledger,
  commits: readonly CommitRecord[],
  state: ViewState | undefined,
  warnings: readonly Warning[],
): CommitAuditOutcome {
  const operations = commits.flatMap((commit) => commit.operations);
  const touching = countTouching(
    ledger,
    state ?? {},
    new Set(operations.map((operation) => operation.objectId)),
  );
  const rescue = warnings.some((warning) => warning.code === WINDOW_RESCUE_CODE);
  return {
    commits: commits.length,
    operations: operations.length,
    applied: rescue ? 0 : touching,
    windowRescue: rescue ? touching : 0,
  };
}
