/**
 * Self-GC in cut mode: the embedded planner through the real harness (rehearsal, projection),
 * and the oracle, which knows which anchors the continuation will use. `selfgc-llm` shares the
 * planner input and the harness (`cutPlannerInput`, `applyPlan`).
 */
import type { GovernorOptions } from '../../core/governor/governor-types.js';
import { isToolOutput, type Ledger } from '../../core/ledger.js';
import type { Plan, PlannedOperation, ViewState } from '../../core/operations.js';
import { type EmbeddedPlannerOptions, planEmbedded } from '../../core/planners/embedded-planner.js';
import type { PlannerInput } from '../../core/planners/planner.js';
import { projectView } from '../../core/project-view.js';
import { planAgain, reduceToTarget } from '../../core/reduce-to-target.js';
import {
  createVerdictMemo,
  latestTurnStart,
  type Rehearsal,
  type RehearseOptions,
  rehearsePlan,
} from '../../core/rehearse-plan.js';
import { objectText } from '../../core/render-replacement.js';
import { CUT_MODE } from '../../core/tuning.js';
import { defaultEntryModel, type EntryModel } from '../../core/valuator/entry-model.js';
import { continuationAnchors } from '../judges/anchor-judge.js';
import type { StrategyInput, StrategyOutput, SyncStrategy } from './strategy.js';

/** Rehearse a plan on the prefix with no earlier state, and project the view it gives. */
export function applyPlan(ledger: Ledger, plan: Plan, rehearse: RehearseOptions = {}): StrategyOutput {
  const rehearsal = rehearsePlan(ledger, {}, plan, rehearse);
  const view = projectView(ledger, rehearsal.stateAfter);
  return {
    items: view.items,
    tokens: view.tokens,
    state: rehearsal.stateAfter,
    rehearsal: rehearsalOf(rehearsal),
  };
}

/** What a strategy's output says of its rehearsal (for the latest-turn audit). */
function rehearsalOf(rehearsal: Rehearsal): NonNullable<StrategyOutput['rehearsal']> {
  return { operations: rehearsal.plan.operations.length, rejected: rehearsal.rejected };
}

/** What a planner is asked in cut mode: the prefix, nothing committed, the keep share as the target. */
export function cutPlannerInput(input: StrategyInput): PlannerInput {
  const { ledger } = input;
  const state: ViewState = {};
  // `auto`: the planner's own judgement, without pressure. A budget is pressure.
  const target =
    input.keep === 'auto' ? Number.POSITIVE_INFINITY : Math.floor(ledger.totalTokens * input.keep);
  return {
    ledger,
    state,
    protectFrom: latestTurnStart(ledger),
    viewTokens: ledger.totalTokens,
    targetTokens: target,
    window: Number.POSITIVE_INFINITY,
  };
}

/** How a plan is rehearsed in cut mode: under a budget a span fold's index takes a share of it. */
export function cutRehearseOptions(
  input: StrategyInput,
  foldAnchors: RehearseOptions['foldAnchors'] = 'auto',
  entryModel: EntryModel | 'none' = defaultEntryModel(),
): RehearseOptions {
  return {
    foldAnchors,
    ...(entryModel === 'none' ? {} : { entryModel }),
    ...(input.keep === 'auto'
      ? {}
      : { spanAnchorTokens: Math.floor(input.ledger.totalTokens * input.keep * CUT_MODE.spanIndexShare) }),
  };
}

export interface SelfGcStrategyOptions extends EmbeddedPlannerOptions {
  foldAnchors?: RehearseOptions['foldAnchors'];
  /** The valuator model for fold indexes (default the shipped one, as the governor's). */
  entryModel?: EntryModel | 'none';
}

/**
 * The embedded planner's options in cut mode: the budget is a hard target here, as the window is
 * for the governor's fallback, so the recent work may fold too rather than the target be missed.
 */
export const CUT_PLANNER_OPTIONS: EmbeddedPlannerOptions = { foldRecentWork: true };

export function createSelfGcStrategy(options: SelfGcStrategyOptions = {}, name = 'selfgc'): SyncStrategy {
  return {
    name,
    run(input) {
      const plannerInput = cutPlannerInput(input);
      const { entryModel, foldAnchors, ...planner } = options;
      const plannerOptions = { ...CUT_PLANNER_OPTIONS, ...planner };
      // Nothing is committed in cut mode: every round rehearses from the same empty state.
      const committed: ViewState = {};
      const rehearse = {
        ...cutRehearseOptions(input, foldAnchors, entryModel),
        verdicts: createVerdictMemo(),
      };
      const operations = planEmbedded(plannerInput, plannerOptions);
      const first = rehearsePlan(input.ledger, committed, { planner: 'embedded', operations }, rehearse);
      // The planner estimates what each fold's index keeps; rehearsal renders it. While the
      // measured view is over the budget, plan again on what was measured, as the governor's
      // deep reduction does.
      const rehearsal = reduceToTarget(first, {
        target: plannerInput.targetTokens,
        rounds: CUT_MODE.replanRounds,
        round(measured) {
          const more = planEmbedded(
            { ...plannerInput, state: measured.stateAfter, viewTokens: measured.tokensAfter },
            plannerOptions,
          );
          if (more.length === 0) return { rehearsal: measured, done: true };
          return { rehearsal: planAgain(input.ledger, committed, measured, more, 'embedded', rehearse) };
        },
      });
      const view = projectView(input.ledger, rehearsal.stateAfter);
      return {
        items: view.items,
        tokens: view.tokens,
        state: rehearsal.stateAfter,
        rehearsal: rehearsalOf(rehearsal),
      };
    },
  };
}

/**
 * Self-GC's variants that differ from `selfgc` only in how the governor commits, by name: in
 * session mode the governor runs with these options; in cut mode, where nothing is committed,
 * each is `selfgc` itself and is not run again.
 */
export const SELFGC_COMMIT_VARIANTS: Readonly<Record<string, Pick<GovernorOptions, 'commitPolicy'>>> = {
  'selfgc-paper': { commitPolicy: 'paper' },
};

/** Upper bound: prune every object whose payload holds none of the anchors the continuation uses. */
export const oracleStrategy: SyncStrategy = {
  name: 'oracle',
  upperBound: true,
  run(input) {
    const { ledger } = input;
    const needed = [...continuationAnchors(input.continuation ?? [])];
    const operations: PlannedOperation[] = [];
    for (const object of ledger.objects) {
      if (object.pinned || !isToolOutput(object)) continue;
      // The call leaves with its result, so its arguments count too.
      const textValue = `${object.callArguments ?? ''}\n${objectText(ledger, object)}`;
      if (!needed.some((anchor) => textValue.includes(anchor))) {
        operations.push({
          objectId: object.id,
          operation: 'prune',
          reason: 'oracle: the continuation needs nothing from it',
        });
      }
    }
    return applyPlan(ledger, { planner: 'oracle', operations }, { tombstones: false });
  },
};
