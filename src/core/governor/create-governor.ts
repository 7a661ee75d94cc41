/**
 * The governor: trigger → fork → plan → rehearse → (cache rule) → commit → view.
 */
import { type CommitOutcome, commitRehearsal } from '../commit-plan.js';
import { countMessageTokens, indexTranscript, type Ledger } from '../ledger.js';
import { parseObjectPayload, payloadText } from '../object-payload.js';
import { type ObjectState, type PlannedOperation, supersedeOperations } from '../operations.js';
import { createEmbeddedPlanner } from '../planners/embedded-planner.js';
import type { Planner, PlanResult } from '../planners/planner.js';
import { projectView, type View } from '../project-view.js';
import { latestTurnStart, type Rehearsal, rehearsePlan } from '../rehearse-plan.js';
import { readSessionState, type SessionState } from '../session-state.js';
import type { CommitRecord } from '../store.js';
import { approximateTokenCounter } from '../tokens.js';
import type { Message, Warning } from '../transcript.js';
import { defaultPricing, weighCommit } from './cache-cost.js';
import { planFallback } from './fallback-plan.js';
import type {
  AgentPlanResult,
  GovernanceDecision,
  Governor,
  GovernorOptions,
  ProjectResult,
} from './governor-types.js';
import { createPinRule } from './pins.js';
import { chooseTrigger } from './triggers.js';
import { validateGovernorOptions } from './validate-governor-options.js';

/** Ledgers kept in memory between calls, so each call indexes only what was appended. */
function createLedgerCache(options: GovernorOptions) {
  const ledgers = new Map<string, Ledger>();
  const ledgerOptions = {
    tokenCounter: options.tokenCounter ?? approximateTokenCounter,
    pin: createPinRule(options.pins),
  };
  return (sessionId: string, messages: readonly Message[]): Ledger => {
    const cached = ledgers.get(sessionId);
    const known = cached?.messages.length ?? 0;
    // Same object or same JSON at the seam: the new transcript continues the cached one.
    const continues =
      cached !== undefined &&
      known <= messages.length &&
      (known === 0 ||
        cached.messages[known - 1] === messages[known - 1] ||
        JSON.stringify(cached.messages[known - 1]) === JSON.stringify(messages[known - 1]));
    if (cached && continues) {
      if (messages.length > known) cached.append(messages.slice(known));
      return cached;
    }
    const ledger = indexTranscript(messages, ledgerOptions);
    ledgers.set(sessionId, ledger);
    if (ledgers.size > 1000) ledgers.delete(ledgers.keys().next().value!);
    return ledger;
  };
}

export function createGovernor(options: GovernorOptions): Governor {
  validateGovernorOptions(options);
  // The fallback below does the last resort, with span folds before prunes.
  const embedded = createEmbeddedPlanner();
  const planner: Planner = options.planner ?? embedded;
  const ledgerFor = createLedgerCache(options);
  // Time of the latest call per session (the most recent thousand sessions).
  const lastCalls = new Map<string, number>();
  const now = options.now ?? Date.now;
  const pricing = typeof options.cache === 'object' ? options.cache : defaultPricing(options.provider);
  const blind = options.cache === 'blind';
  const softPressure = options.triggers?.softPressure ?? 0.7;
  const targetShare = options.triggers?.target ?? 0.4;
  const minBatch = Math.floor(options.window * (options.triggers?.minBatch ?? 0.05));
  const project = { showIds: options.showIds === true };
  // A span fold's anchor index is bounded by its size: up to a fifth of the window (measured
  // on the dev sessions: a tenth lost the names long sessions quote later; a quarter or a third
  // cost more cache writes and overflowed the window; see the README's results).
  const rehearse = {
    project,
    spanAnchorTokens: Math.max(200, Math.floor(options.window / 5)),
  };

  const runPlanner = async (
    ledger: Ledger,
    state: SessionState,
    viewTokens: number,
    target: number,
    signal?: AbortSignal,
  ) => {
    const input = {
      ledger,
      state: state.objects,
      protectFrom: latestTurnStart(ledger),
      viewTokens,
      targetTokens: target,
      window: options.window,
      ...(signal ? { signal } : {}),
    };
    const warnings: Warning[] = [];
    let result: PlanResult;
    try {
      result = await planner.plan(input);
    } catch (error) {
      warnings.push({
        code: 'planner-failed',
        message: `${planner.name} planner failed (${error instanceof Error ? error.message : String(error)}); used the embedded planner`,
      });
      result = await embedded.plan(input);
    }
    return { result, warnings };
  };

  const commit = (
    sessionId: string,
    ledger: Ledger,
    snapshot: { version: number; state: SessionState },
    rehearsal: Rehearsal,
    trigger: string,
  ) => commitRehearsal({ store: options.store, sessionId, now, trigger }, ledger, snapshot, rehearsal);

  return {
    async project(sessionId, messages, callOptions = {}): Promise<ProjectResult> {
      const ledger = ledgerFor(sessionId, messages);
      // The cache clock: every call refreshes the provider's cache, not only those that govern.
      const callTime = lastTimestamp(messages) ?? now();
      const previousCall = lastCalls.get(sessionId);
      lastCalls.delete(sessionId);
      lastCalls.set(sessionId, callTime);
      if (lastCalls.size > 1000) lastCalls.delete(lastCalls.keys().next().value!);
      let snapshot = await readSessionState(options.store, sessionId);
      const warnings: Warning[] = [];
      let view = projectView(ledger, snapshot.state.objects, project);
      const transcriptTokens = ledger.totalTokens;
      const trigger = chooseTrigger({
        ledger,
        state: snapshot.state,
        viewTokens: view.tokens,
        window: options.window,
        softPressure,
        options: options.triggers ?? {},
        force: callOptions.force === true,
      });
      let decision: GovernanceDecision = {
        trigger: trigger.trigger,
        outcome: trigger.skip ?? 'below-threshold',
      };
      const commits: CommitRecord[] = [];
      if (!trigger.skip && trigger.trigger !== 'none') {
        const target = Math.floor(options.window * targetShare);
        const { result, warnings: planWarnings } = await runPlanner(
          ledger,
          snapshot.state,
          view.tokens,
          target,
          callOptions.signal,
        );
        warnings.push(...planWarnings, ...(result.warnings ?? []));
        let rehearsal = rehearsePlan(ledger, snapshot.state.objects, result.plan, rehearse);
        let deepened = false;
        if (
          rehearsal.tokensAfter > options.window ||
          (options.triggers?.deep !== false && rehearsal.tokensAfter > target)
        ) {
          // The planner alone cannot fit the window: one deep commit (planner and fallback
          // together, down to the target) breaks the cache once instead of twice.
          const plannerLeft = rehearsal.tokensAfter;
          rehearsal = deepen(
            ledger,
            snapshot.state.objects,
            rehearsal,
            `${result.plan.planner}+fallback`,
            target,
            3,
          );
          deepened = rehearsal.tokensAfter < plannerLeft;
          if (deepened) {
            warnings.push({
              code: 'fallback-reduction',
              message: `the ${result.plan.planner} planner left ${plannerLeft} tokens; the fallback reduction took the view to ${rehearsal.tokensAfter}`,
            });
          }
        }
        const overflow = rehearsal.tokensAfter > options.window || trigger.trigger === 'overflow';
        const economics = weighCommit(
          {
            tokensBefore: rehearsal.tokensBefore,
            tokensAfter: rehearsal.tokensAfter,
            cachedPrefixTokens: prefixTokens(ledger, view, rehearsal.earliestEdit),
            futureCalls: expectedFutureCalls(
              ledger,
              view.tokens,
              options.window,
              trigger.trigger === 'overflow',
            ),
            gcTokens: (result.cost?.inputTokens ?? 0) + (result.cost?.outputTokens ?? 0) * 4,
            cacheWarm: isCacheWarm(snapshot.state, previousCall, callTime, pricing.ttlMs),
          },
          pricing,
        );
        const freed = rehearsal.tokensBefore - rehearsal.tokensAfter;
        // Small edits wait until together they are worth breaking the cache for.
        const batchReady = blind || overflow || freed >= minBatch;
        const worthIt = freed > 0 && batchReady && (blind || overflow || economics.worthIt);
        decision = {
          trigger: trigger.trigger,
          outcome:
            freed <= 0 ? 'nothing-to-free' : worthIt ? (deepened ? 'fallback' : 'committed') : 'deferred',
          cache: { saving: economics.saving, breakCost: economics.breakCost, gcCost: economics.gcCost },
        };
        let outcome: CommitOutcome | undefined;
        if (worthIt) outcome = await commit(sessionId, ledger, snapshot, rehearsal, trigger.trigger);
        if (outcome?.status === 'committed' || outcome?.status === 'duplicate') {
          snapshot = { version: outcome.version, state: outcome.state };
          if (outcome.status === 'committed') commits.push(outcome.record);
        } else if (outcome?.status === 'conflict') {
          warnings.push({
            code: 'commit-conflict',
            message: 'another writer committed first; using its state',
          });
          snapshot = await readSessionState(options.store, sessionId);
        }
        view = projectView(ledger, snapshot.state.objects, project);
        snapshot = await recordRun(sessionId, snapshot, ledger, freed > 0 && worthIt, callTime);
      }
      // Hard guarantee: the view fits. The planner did not get there: reduce deterministically;
      // and when the latest turn alone is too big, fold its largest outputs (recoverable with
      // expand) rather than send a request the provider would refuse.
      const rescues = [
        {
          run: fitWindow,
          code: 'fallback-reduction',
          say: (before: number, committed: CommitRecord) =>
            `planner left ${before} tokens, over the ${options.window}-token window; the fallback reduction committed ${committed.commitId}`,
        },
        {
          run: foldLatestTurn,
          code: 'latest-turn-folded',
          say: (before: number, committed: CommitRecord) =>
            `the view needed ${before} tokens with the latest turn whole, more than the ${options.window}-token window; the latest turn's largest outputs folded (${committed.operations.map((entry) => entry.objectId).join(', ')}), expand recovers them`,
        },
      ];
      for (const rescue of rescues) {
        if (view.tokens <= options.window) break;
        const before = view.tokens;
        const outcome = await rescue.run(sessionId, ledger, snapshot);
        if (!outcome) continue;
        commits.push(outcome.record);
        snapshot = { version: outcome.version, state: outcome.state };
        view = projectView(ledger, snapshot.state.objects, project);
        decision = { ...decision, outcome: 'fallback' };
        warnings.push({ code: rescue.code, message: rescue.say(before, outcome.record) });
      }
      if (view.tokens > options.window) {
        let latestTurn = 0;
        for (let index = latestTurnStart(ledger); index < ledger.messages.length; index += 1)
          latestTurn += ledger.messageTokens[index] ?? 0;
        warnings.push({
          code: 'over-window',
          message: `the view needs ${view.tokens} tokens after every reduction, more than the ${options.window}-token window; the latest turn alone is ${latestTurn} tokens`,
        });
      }
      return {
        view: view.items.map((item) => item.message),
        transcriptTokens,
        viewTokens: view.tokens,
        ...(commits.length > 0 ? { commit: commits[commits.length - 1]! } : {}),
        commits,
        decision,
        warnings,
      };
    },
    async expand(sessionId, objectId) {
      const record = await options.store.getPayload(sessionId, objectId);
      return record
        ? payloadText(parseObjectPayload(record.payload, `sidecar ${sessionId}/${objectId}`))
        : undefined;
    },
    async searchContext(sessionId, query, limit = 5) {
      const hits = await options.store.searchPayloads(sessionId, query, { limit });
      return hits.map((hit) => ({ objectId: hit.objectId, snippet: hit.snippet }));
    },
    async applyAgentPlan(sessionId, messages, plan): Promise<AgentPlanResult> {
      const ledger = ledgerFor(sessionId, messages);
      const snapshot = await readSessionState(options.store, sessionId);
      const rehearsal = rehearsePlan(ledger, snapshot.state.objects, plan, rehearse);
      const outcome = await commit(sessionId, ledger, snapshot, rehearsal, 'request');
      const warnings: Warning[] = [];
      if (outcome.status === 'conflict')
        warnings.push({ code: 'commit-conflict', message: 'another writer committed first; try again' });
      if (outcome.status === 'duplicate')
        warnings.push({ code: 'commit-duplicate', message: 'this plan was already committed' });
      return {
        accepted: rehearsal.accepted.map(({ operation, tokensBefore, tokensAfter }) => ({
          objectId: operation.objectId,
          operation: operation.operation,
          tokensBefore,
          tokensAfter,
        })),
        rejected: rehearsal.rejected.map(({ operation, reason, detail }) => ({
          objectId: operation.objectId,
          reason,
          detail,
        })),
        ...(outcome.status === 'committed' ? { commit: outcome.record } : {}),
        warnings,
      };
    },
  };

  /**
   * Go on from a rehearsal with the fallback, down to the target, in one plan: the fallback
   * estimates, rehearsal measures, so it plans again on what was measured (a few rounds). The
   * first rounds keep the last `keepSteps` steps whole; later ones may take everything before the
   * latest turn, or the next calls would overflow and commit one after another. Prunes come in
   * only when span folds leave the view over the window (then down to the target, so that the
   * next calls do not overflow at once); under the window the target is reached with span folds
   * alone, which stay recoverable.
   */
  function deepen(
    ledger: Ledger,
    state: SessionState['objects'],
    first: Rehearsal,
    planner: string,
    target: number,
    keepSteps: number,
  ): Rehearsal {
    let rehearsal = first;
    let operations = first.plan.operations;
    for (let round = 0; round < 6 && rehearsal.tokensAfter > target; round += 1) {
      const keep = round < 2 ? keepSteps : 0;
      let more = planFallback(ledger, rehearsal.stateAfter, rehearsal.tokensAfter, target, keep, false);
      if (more.length === 0 && rehearsal.tokensAfter > options.window)
        more = planFallback(ledger, rehearsal.stateAfter, rehearsal.tokensAfter, target, keep);
      if (more.length === 0 && keep > 0) continue;
      if (more.length === 0) break;
      operations = supersedeOperations(operations, more);
      rehearsal = rehearsePlan(ledger, state, { planner, operations }, rehearse);
    }
    // Still over: the indexes of folded work share the fifth of the window that bounds one, and
    // each pass takes from that bound the share of the indexes the overflow needs (and a tenth
    // more), since what an index holds under a bound is known only once it is rendered.
    let bound = rehearse.spanAnchorTokens;
    for (let pass = 0; pass < 4 && rehearsal.tokensAfter > options.window; pass += 1) {
      const spans = Object.entries(rehearsal.stateAfter).filter(([, entry]) => entry.spanEnd !== undefined);
      if (spans.length === 0) break;
      const indexTokens = spans.reduce((sum, [, entry]) => sum + (entry.tokens ?? 0), 0);
      const kept = 1 - (rehearsal.tokensAfter - options.window) / Math.max(1, indexTokens);
      const shared = Math.min(bound, rehearse.spanAnchorTokens / spans.length);
      bound = Math.floor(shared * Math.max(0, Math.min(0.9, kept)));
      const tightened = tighten(ledger, state, rehearsal, spans, bound);
      if (tightened.tokensAfter >= rehearsal.tokensAfter) break;
      rehearsal = tightened;
    }
    return rehearsal;
  }

  /**
   * Fold the work of the requests `spans` names (those folded in `rehearsal`) again, each index
   * bounded by `bound` tokens: for when nothing else is left to fold or prune and the view is still over the window
   * (requests that state rules are pinned, each keeping the index of its work; a latest step that
   * fills most of the window). Measured on the dev sessions at a 16k window: over-window calls
   * 6 → 0.
   */
  function tighten(
    ledger: Ledger,
    state: SessionState['objects'],
    rehearsal: Rehearsal,
    spans: ReadonlyArray<[string, ObjectState]>,
    bound: number,
  ): Rehearsal {
    const operations = supersedeOperations(
      rehearsal.plan.operations,
      spans.map(([objectId, entry]) => ({
        objectId,
        operation: 'fold' as const,
        spanEnd: entry.spanEnd!,
        reason: 'fallback: the indexes of folded work shrink to fit the window',
      })),
    );
    return rehearsePlan(
      ledger,
      state,
      { planner: rehearsal.plan.planner, operations },
      { ...rehearse, spanAnchorTokens: bound },
    );
  }

  async function fitWindow(
    sessionId: string,
    ledger: Ledger,
    snapshot: { version: number; state: SessionState },
  ) {
    const state = snapshot.state.objects;
    const start = rehearsePlan(ledger, state, { planner: 'fallback', operations: [] }, rehearse);
    const rehearsal = deepen(ledger, state, start, 'fallback', Math.floor(options.window * targetShare), 0);
    if (rehearsal.accepted.length === 0) return undefined;
    const outcome = await commit(sessionId, ledger, snapshot, rehearsal, 'overflow');
    return outcome.status === 'committed' ? outcome : undefined;
  }

  /**
   * Last resort when the latest turn alone is over the window: fold its outputs, largest first,
   * until the view fits (or nothing is left to fold).
   */
  async function foldLatestTurn(
    sessionId: string,
    ledger: Ledger,
    snapshot: { version: number; state: SessionState },
  ) {
    const state = snapshot.state.objects;
    const from = latestTurnStart(ledger);
    const outputs = ledger.objects
      .filter((object) => object.kind === 'function' && object.messageIndex >= from && !state[object.id])
      .sort((a, b) => b.tokens - a.tokens);
    const allowLatest = { ...rehearse, protectFrom: ledger.messages.length };
    const operations: PlannedOperation[] = [];
    let rehearsal: Rehearsal | undefined;
    for (const object of outputs) {
      if (object.pinned) continue;
      operations.push({
        objectId: object.id,
        operation: 'fold',
        reason: 'the latest turn alone is over the window',
      });
      rehearsal = rehearsePlan(ledger, state, { planner: 'fallback', operations }, allowLatest);
      if (rehearsal.tokensAfter <= options.window) break;
    }
    if (!rehearsal || rehearsal.accepted.length === 0) return undefined;
    const outcome = await commit(sessionId, ledger, snapshot, rehearsal, 'overflow');
    return outcome.status === 'committed' ? outcome : undefined;
  }

  async function recordRun(
    sessionId: string,
    snapshot: { version: number; state: SessionState },
    ledger: Ledger,
    committed: boolean,
    callTime: number,
  ) {
    const state: SessionState = {
      ...snapshot.state,
      triggers: {
        ...snapshot.state.triggers,
        lastRunAt: ledger.messages.length,
        fruitlessRuns: committed ? 0 : snapshot.state.triggers.fruitlessRuns + 1,
        lastCallTime: callTime,
      },
    };
    const written = await options.store.writeState(sessionId, state, snapshot.version);
    return written.status === 'written' ? { version: written.version, state } : snapshot;
  }
}

/**
 * View tokens before transcript message `end`: the prefix that stays cached. Counted on the view
 * the commit starts from, so that objects folded by earlier commits count at their folded size.
 */
function prefixTokens(ledger: Ledger, view: View, end: number | undefined): number {
  if (end === undefined) return view.tokens;
  let total = 0;
  for (const item of view.items) {
    if (item.source >= end) break;
    total += item.tokens ?? countMessageTokens(ledger.options.tokenCounter, item.message);
  }
  return total;
}

/**
 * Calls still to come that a commit saves on: as many as have been made so far, within reason
 * (the session is half done). A commit the window does not force yet saves only until the
 * window would force one anyway, at the transcript's average growth per call; that horizon
 * counts twice, since a deep commit now also puts the next one further off. Measured on the dev
 * sessions at a 32k window: 24 fewer commits (139 of 163) at the same cost and no-impact; on the
 * bundled sample (sessions of 16 calls) the commits at a session's end that never paid back
 * went away (cost 1.016 → 0.963 of none).
 */
function expectedFutureCalls(ledger: Ledger, viewTokens: number, window: number, forced: boolean): number {
  let calls = 0;
  for (const message of ledger.messages) if (message.role === 'assistant') calls += 1;
  const expected = Math.min(40, Math.max(4, calls));
  if (forced) return expected;
  const growth = Math.max(1, ledger.totalTokens / Math.max(1, calls));
  const untilForced = Math.max(1, Math.ceil((window - viewTokens) / growth));
  return Math.min(expected, 2 * untilForced);
}

function lastTimestamp(messages: readonly Message[]): number | undefined {
  const value = messages.at(-1)?.providerData?.timestamp;
  if (typeof value === 'number') return value;
  if (typeof value === 'string') {
    const parsed = Date.parse(value);
    return Number.isNaN(parsed) ? undefined : parsed;
  }
  return undefined;
}

/**
 * The cache is warm when the previous call was within the TTL. `previous`: the latest call this
 * governor saw for the session, or the one the state recorded at its last governance run (another
 * instance may have served calls since; the later of the two counts).
 */
function isCacheWarm(
  state: SessionState,
  previous: number | undefined,
  current: number,
  ttlMs: number,
): boolean {
  const latest = Math.max(
    previous ?? Number.NEGATIVE_INFINITY,
    state.triggers.lastCallTime ?? Number.NEGATIVE_INFINITY,
  );
  if (latest === Number.NEGATIVE_INFINITY) return true;
  return current - latest < ttlMs;
}
