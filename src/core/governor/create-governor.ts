/**
 * The governor: trigger → fork → plan → rehearse → (cache rule) → commit → view.
 */
import { commitRehearsal } from '../commit-plan.js';
import { commonPrefixLength, transcriptChain } from '../content-hash.js';
import { renderLedgerMessageWithin } from '../gc-tools/render-ledger-message.js';
import { countMessageTokens, createLedger, isToolOutput, type Ledger } from '../ledger.js';
import { pinnedTokens } from '../ledger-measures.js';
import { parseObjectPayload, payloadText } from '../object-payload.js';
import type { PlannedOperation } from '../operations.js';
import { createEmbeddedPlanner } from '../planners/embedded-planner.js';
import type { Planner, PlanResult } from '../planners/planner.js';
import { projectView, type View } from '../project-view.js';
import { bindingAt, reconcileState } from '../reconcile-state.js';
import { createVerdictMemo, latestTurnStart, type Rehearsal, rehearsePlan } from '../rehearse-plan.js';
import { foldKey } from '../render-replacement.js';
import {
  payloadKey,
  readSessionState,
  type SessionState,
  sidecarKeyCandidates,
  type TriggerBookkeeping,
  withoutDeferral,
} from '../session-state.js';
import type { CommitRecord } from '../store.js';
import { approximateTokenCounter } from '../tokens.js';
import type { Message, Warning } from '../transcript.js';
import { DEEP_REDUCTION, EMBEDDED_PLANNER, GOVERNOR } from '../tuning.js';
import { entryFeaturizer } from '../valuator/entry-features.js';
import { defaultEntryModel } from '../valuator/entry-model.js';
import { defaultPricing, weighCommit } from './cache-cost.js';
import { breakEvenGrowth, commitsNow } from './commit-policy.js';
import { type CallLimits, deepen, reduceWithFallback } from './deep-reduction.js';
import type {
  AgentPlanResult,
  GovernanceDecision,
  Governor,
  GovernorOptions,
  ProjectResult,
} from './governor-types.js';
import { describeRejected, planToHold, revalidatePendingPlan } from './pending-plan.js';
import { createPinRule } from './pins.js';
import { chooseTrigger } from './triggers.js';
import { validateGovernorOptions, validateProjectInput } from './validate-governor-options.js';

/** Ledgers kept in memory, most recently used last. */
const CACHED_LEDGERS = 1000;

/**
 * Ledgers kept in memory between calls, so each call indexes only what was appended. A cached
 * ledger is reused only when the new transcript continues it message for message (by the
 * content chain); anything else — an edit, a truncation — is indexed from scratch, and the index
 * where the two parted is reported. They are kept by session and first message, so another
 * conversation under the same id (a side request) does not take the place of the session's own.
 */
function createLedgerCache(options: GovernorOptions) {
  const ledgers = new Map<string, Ledger>();
  const ledgerOptions = {
    tokenCounter: options.tokenCounter ?? approximateTokenCounter,
    pin: createPinRule(options.pins),
  };
  /**
   * `bounded`: messages appended to a cached ledger take the counter's bound until `settle` (see
   * `Ledger.append`); a ledger indexed anew counts, so a bound stands for one request's messages.
   */
  return (
    sessionId: string,
    messages: readonly Message[],
    known?: readonly string[],
    bounded = false,
  ): { ledger: Ledger; divergedAt?: number } => {
    const chain = known?.length === messages.length ? known : transcriptChain(messages);
    const key = `${sessionId}\u0000${chain[0] ?? ''}`;
    const cached = ledgers.get(key);
    ledgers.delete(key);
    let divergedAt: number | undefined;
    if (cached) {
      const shared = commonPrefixLength(cached.chain, chain);
      if (shared === cached.messages.length) {
        // The view carries the client's own message objects (cache breakpoints move each turn).
        cached.adoptMessages(messages);
        cached.append(messages.slice(shared), chain.slice(shared), { bounded });
        // A call that counts finds nothing left uncounted by an earlier one.
        if (!bounded) cached.settle();
        ledgers.set(key, cached);
        return { ledger: cached };
      }
      divergedAt = shared;
    }
    const ledger = createLedger(ledgerOptions);
    ledger.append(messages, chain);
    ledgers.set(key, ledger);
    if (ledgers.size > CACHED_LEDGERS) ledgers.delete(ledgers.keys().next().value!);
    return divergedAt === undefined ? { ledger } : { ledger, divergedAt };
  };
}

type Snapshot = { version: number; state: SessionState };
type Divergence = NonNullable<ProjectResult['divergence']>;

/** What one governance run works from. */
interface GovernRun {
  sessionId: string;
  ledger: Ledger;
  limits: CallLimits;
  snapshot: Snapshot;
  view: View;
  trigger: GovernanceDecision['trigger'];
  cacheWarm: boolean;
  warnings: Warning[];
  signal?: AbortSignal;
}

/** What one governance run leaves: the state to go on from, its decision, its commits. */
interface Governed {
  snapshot: Snapshot;
  decision: GovernanceDecision;
  commits: CommitRecord[];
  /** Set when the cost rule deferred the plan under a warm cache (`TriggerBookkeeping.deferral`). */
  deferral?: NonNullable<TriggerBookkeeping['deferral']>;
}

/** The snapshot without its pending plan (a run that takes the plan up). */
function withoutPending(snapshot: Snapshot): Snapshot {
  if (snapshot.state.pending === undefined) return snapshot;
  const { pending: _taken, ...state } = snapshot.state;
  return { ...snapshot, state };
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
  const commitPolicy = options.commitPolicy ?? 'cost';
  const softPressure = options.triggers?.softPressure ?? GOVERNOR.softPressure;
  const targetShare = options.triggers?.target ?? GOVERNOR.target;
  const project = { showIds: options.showIds === true };
  const entryModel =
    options.entryModel === 'none' ? {} : { entryModel: options.entryModel ?? defaultEntryModel() };
  const limitsFor = (reservedTokens = 0): CallLimits => {
    const window = Math.max(
      Math.min(GOVERNOR.minViewTokens, options.window),
      options.window - reservedTokens,
    );
    return {
      window,
      target: Math.floor(window * targetShare),
      minBatch: Math.floor(window * (options.triggers?.minBatch ?? GOVERNOR.minBatch)),
      // Indexes that together overflow the window share this bound (see shrinkIndexes) before
      // anything is pruned.
      rehearse: {
        project,
        spanAnchorTokens: Math.max(GOVERNOR.spanIndexMinTokens, Math.floor(window * GOVERNOR.spanIndexShare)),
        ...entryModel,
        // One call rehearses its plans again and again as they deepen.
        verdicts: createVerdictMemo(),
      },
    };
  };

  const runPlanner = async (
    ledger: Ledger,
    state: SessionState,
    viewTokens: number,
    limits: CallLimits,
    signal?: AbortSignal,
  ) => {
    const input = {
      ledger,
      state: state.objects,
      protectFrom: latestTurnStart(ledger),
      viewTokens,
      targetTokens: limits.target,
      window: limits.window,
      ...(project.showIds ? { showIds: true } : {}),
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
    snapshot: Snapshot,
    rehearsal: Rehearsal,
    trigger: string,
    pendingSince?: number,
  ) =>
    commitRehearsal(
      {
        store: options.store,
        sessionId,
        now,
        trigger,
        ...(pendingSince === undefined ? {} : { pendingSince }),
      },
      ledger,
      snapshot,
      rehearsal,
    );

  /** The cache clock: every call refreshes the provider's cache, not only those that govern. */
  const noteCall = (sessionId: string, messages: readonly Message[]) => {
    const callTime = lastTimestamp(messages) ?? now();
    const previousCall = lastCalls.get(sessionId);
    lastCalls.delete(sessionId);
    lastCalls.set(sessionId, callTime);
    if (lastCalls.size > 1000) lastCalls.delete(lastCalls.keys().next().value!);
    return { callTime, previousCall };
  };

  /**
   * The stored state that holds for the transcript `ledger` indexes. Where keys had been offered
   * for content this transcript no longer holds, the session's keys are tagged from where the two
   * surely agree (`Ledger.keyTag`), lower than before if need be, and reconciled again: no key is
   * ever offered for two contents. A divergence is said in a warning. The reconciled state is not
   * written back here: the run's own write (a commit, or the record of a run) stores it, so a
   * request that governs nothing (another conversation's side request under the same session id)
   * leaves the state it does not match as it was.
   */
  const reconciledIn = (
    ledger: Ledger,
    stored: Snapshot,
    warnings: Warning[],
    knownDivergence?: number,
  ): { snapshot: Snapshot; divergence?: Divergence } => {
    ledger.keysTaggedFrom = stored.state.keysTaggedFrom;
    let reconciliation = reconcileState(ledger, stored.state, knownDivergence);
    const { agreed } = reconciliation;
    if (
      agreed !== undefined &&
      reconciliation.droppedPayloads.length > 0 &&
      agreed < (ledger.keysTaggedFrom ?? Number.POSITIVE_INFINITY)
    ) {
      ledger.keysTaggedFrom = agreed;
      reconciliation = reconcileState(ledger, stored.state, reconciliation.divergedAt);
    }
    const from = ledger.keysTaggedFrom;
    const state =
      from === undefined ? reconciliation.state : { ...reconciliation.state, keysTaggedFrom: from };
    // On a pure append, the stored state (under this version's ids, which the run's write records).
    const snapshot = { version: stored.version, state };
    if (reconciliation.divergedAt === undefined) return { snapshot };
    const divergence = { at: reconciliation.divergedAt, dropped: reconciliation.dropped };
    const renumbered = reconciliation.renumberedFrom === divergence.at;
    warnings.push({
      code: 'transcript-diverged',
      messageIndex: divergence.at,
      message: renumbered
        ? `an older version numbered the objects from message ${divergence.at} on otherwise; ${divergence.dropped.length} object states it made there no longer apply`
        : `the transcript differs from the one governed before at message ${divergence.at}; ${divergence.dropped.length} object states made for the other content no longer apply`,
    });
    return { snapshot, divergence };
  };

  /** The transcript's ledger and the stored state that holds for it (`reconciledIn`). */
  const readLedgerAndState = async (
    sessionId: string,
    messages: readonly Message[],
    warnings: Warning[],
    chain?: readonly string[],
    bounded?: boolean,
  ): Promise<{ ledger: Ledger; snapshot: Snapshot; divergence?: Divergence }> => {
    const stored = await readSessionState(options.store, sessionId);
    const { ledger, divergedAt } = ledgerFor(sessionId, messages, chain, bounded);
    return { ledger, ...reconciledIn(ledger, stored, warnings, divergedAt) };
  };

  /** The first of `keys` the sidecar holds a record under. */
  const firstPayload = async (sessionId: string, keys: readonly string[]) => {
    for (const key of keys) {
      const record = await options.store.getPayload(sessionId, key);
      if (record !== undefined) return record;
    }
    return undefined;
  };

  /** Sidecar keys of what this state's view can recover, by the key the view shows. */
  const recoverableOf = (state: SessionState): Record<string, string> =>
    Object.fromEntries(
      Object.entries(state.payloads).map(([key, binding]) => [key, payloadKey(key, binding)]),
    );

  return {
    async project(sessionId, messages, callOptions = {}): Promise<ProjectResult> {
      validateProjectInput(sessionId, messages);
      const limits = limitsFor(callOptions.reservedTokens);
      const { callTime, previousCall } = noteCall(sessionId, messages);
      const warnings: Warning[] = [];
      const reconciled = await readLedgerAndState(
        sessionId,
        messages,
        warnings,
        callOptions.chain,
        callOptions.deferCounting === true,
      );
      const { ledger } = reconciled;
      let snapshot = reconciled.snapshot;
      let view = projectView(ledger, snapshot.state.objects, project);
      const cacheWarm = isCacheWarm(snapshot.state, previousCall, callTime, pricing.ttlMs);
      const triggerAt = (viewTokens: number) =>
        chooseTrigger({
          ledger,
          state: snapshot.state,
          viewTokens,
          window: limits.window,
          softPressure,
          options: options.triggers ?? {},
          force: callOptions.force === true,
          cacheWarm,
        });
      let trigger = triggerAt(view.tokens);
      // On bounds no trigger means none on counts (bounds are never below them, and no trigger
      // fires for fewer tokens); anything else is decided on counts.
      if (trigger.trigger !== 'none' && ledger.boundedMessages > 0) {
        ledger.settle();
        view = projectView(ledger, snapshot.state.objects, project);
        trigger = triggerAt(view.tokens);
      }
      const transcriptTokens = ledger.totalTokens;
      let decision: GovernanceDecision = {
        trigger: trigger.trigger,
        outcome: trigger.skip ?? 'below-threshold',
      };
      const commits: CommitRecord[] = [];
      if (!trigger.skip && trigger.trigger !== 'none') {
        const governed = await governOnce({
          sessionId,
          ledger,
          limits,
          snapshot,
          view,
          trigger: trigger.trigger,
          cacheWarm,
          warnings,
          ...(callOptions.signal ? { signal: callOptions.signal } : {}),
        });
        decision = governed.decision;
        commits.push(...governed.commits);
        view = projectView(ledger, governed.snapshot.state.objects, project);
        snapshot = await recordRun(sessionId, governed, ledger, callTime);
      } else if (trigger.skip === 'below-break-even') {
        snapshot = await keepCallTime(sessionId, snapshot, callTime);
      }
      const fitted = await fitTheWindow(sessionId, ledger, limits, snapshot, view, warnings);
      if (fitted.commits.length > 0) decision = { ...decision, outcome: 'fallback' };
      commits.push(...fitted.commits);
      const ledgerMessage = callOptions.ledgerMessage
        ? renderLedgerMessageWithin(
            ledger,
            fitted.snapshot.state.objects,
            limits.window,
            callOptions.ledgerMessage.maxTokens,
            { ...project, ...callOptions.ledgerMessage },
          )
        : undefined;
      return {
        view: fitted.view.items.map((item) => item.message),
        transcriptTokens,
        viewTokens: fitted.view.tokens,
        ...(commits.length > 0 ? { commit: commits[commits.length - 1]! } : {}),
        commits,
        decision,
        warnings,
        recoverable: recoverableOf(fitted.snapshot.state),
        ...(reconciled.divergence ? { divergence: reconciled.divergence } : {}),
        ...(ledger.boundedMessages > 0 ? { settle: () => ledger.settle() } : {}),
        ...(entryModel.entryModel === undefined ? {} : { afterSend: () => entryFeaturizer(ledger) }),
        ...(ledgerMessage ? { ledgerMessage } : {}),
      };
    },
    async expand(sessionId, key, scope) {
      const sidecarKey = scope
        ? scope[key]
        : recoverableOf((await readSessionState(options.store, sessionId)).state)[key];
      if (sidecarKey === undefined) return undefined;
      const record = await firstPayload(sessionId, sidecarKeyCandidates(sidecarKey));
      return record
        ? payloadText(parseObjectPayload(record.payload, `sidecar ${sessionId}/${key}`))
        : undefined;
    },
    async searchContext(sessionId, query, limit = 5, scope) {
      const recoverable = scope ?? recoverableOf((await readSessionState(options.store, sessionId)).state);
      // Each sidecar key a key's payload may stand under (`sidecarKeyCandidates`), and its place.
      const shownAs = new Map<string, { key: string; earlier: string[] }>();
      for (const [key, sidecarKey] of Object.entries(recoverable)) {
        const candidates = sidecarKeyCandidates(sidecarKey);
        candidates.forEach((candidate, index) => {
          shownAs.set(candidate, { key, earlier: candidates.slice(0, index) });
        });
      }
      // The sidecar may hold other content under this session id: only this conversation's counts.
      const hits = await options.store.searchPayloads(sessionId, query, { limit: limit * 4 });
      const hitKeys = new Set(hits.map((hit) => hit.objectId));
      const found: Array<{ objectId: string; snippet: string }> = [];
      for (const hit of hits) {
        const shown = shownAs.get(hit.objectId);
        if (shown === undefined) continue;
        // An earlier version's record counts only where no later one stands for its key.
        if (shown.earlier.some((key) => hitKeys.has(key))) continue;
        if ((await firstPayload(sessionId, shown.earlier)) !== undefined) continue;
        found.push({ objectId: shown.key, snippet: hit.snippet });
        if (found.length === limit) break;
      }
      return found;
    },
    async applyAgentPlan(sessionId, messages, plan): Promise<AgentPlanResult> {
      const limits = limitsFor();
      const warnings: Warning[] = [];
      const { ledger, snapshot } = await readLedgerAndState(sessionId, messages, warnings);
      const rehearsal = rehearsePlan(ledger, snapshot.state.objects, plan, limits.rehearse);
      const outcome = await commit(sessionId, ledger, snapshot, rehearsal, 'request');
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
          key: foldKey(ledger, operation.objectId, operation.spanEnd),
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
   * One governance run. A plan held pending from an earlier run comes first: re-validated, and
   * committed when the commit policy takes it at this boundary; otherwise it is dropped and the
   * planner plans afresh. A fresh plan the policy defers may itself be held for the next run.
   */
  async function governOnce(run: GovernRun): Promise<Governed> {
    const { ledger, limits, warnings } = run;
    const held = run.snapshot.state.pending;
    // This run takes the pending plan up, whatever becomes of it.
    const start = { ...run, snapshot: withoutPending(run.snapshot) };
    let dropped: number | undefined;
    if (held) {
      const since = held.binding.end;
      const check = revalidatePendingPlan(ledger, start.snapshot.state.objects, held, limits.rehearse);
      let reason = check.status === 'dropped' ? check.reason : '';
      if (check.status === 'valid') {
        if (check.dropped.length > 0) {
          warnings.push({
            code: 'pending-operations-dropped',
            message: `${check.dropped.length} operation(s) of the plan held since message ${since} no longer apply: ${describeRejected(check.dropped)}`,
          });
        }
        const settled = await settle(start, { plan: check.plan }, since);
        const { outcome } = settled.decision;
        if (outcome !== 'deferred' && outcome !== 'nothing-to-free') {
          return { ...settled, decision: { ...settled.decision, pending: { since, status: 'committed' } } };
        }
        reason = outcome === 'deferred' ? 'the commit rule deferred it again' : 'it frees nothing now';
      }
      warnings.push({
        code: 'pending-plan-dropped',
        message: `the plan held since message ${since} was dropped: ${reason}; planned afresh`,
      });
      dropped = since;
    }
    const { result, warnings: planWarnings } = await runPlanner(
      ledger,
      start.snapshot.state,
      run.view.tokens,
      limits,
      run.signal,
    );
    warnings.push(...planWarnings, ...(result.warnings ?? []));
    const settled = await settle(start, result);
    const pending =
      settled.decision.outcome === 'deferred'
        ? planToHold(ledger, settled.planned, result.cost, commitPolicy)
        : undefined;
    if (pending) {
      return {
        ...settled,
        snapshot: { ...settled.snapshot, state: { ...settled.snapshot.state, pending } },
        decision: { ...settled.decision, pending: { since: pending.binding.end, status: 'held' } },
      };
    }
    return dropped === undefined
      ? settled
      : { ...settled, decision: { ...settled.decision, pending: { since: dropped, status: 'dropped' } } };
  }

  /**
   * Rehearse a plan, go deeper with the fallback when it alone leaves the view over the target,
   * weigh it by the commit policy, and commit when that says so. `pendingSince`: the plan was
   * held pending since that transcript length, and this run is its boundary.
   */
  async function settle(
    run: GovernRun,
    result: PlanResult,
    pendingSince?: number,
  ): Promise<Governed & { planned: Rehearsal }> {
    const { ledger, limits, warnings } = run;
    let snapshot = run.snapshot;
    const planned = rehearsePlan(ledger, snapshot.state.objects, result.plan, limits.rehearse);
    let rehearsal = planned;
    let deepened = false;
    if (
      rehearsal.tokensAfter > limits.window ||
      (options.triggers?.deep !== false && rehearsal.tokensAfter > limits.target)
    ) {
      // The planner alone cannot fit the window: one deep commit (planner and fallback
      // together, down to the target) breaks the cache once instead of twice.
      const plannerLeft = rehearsal.tokensAfter;
      rehearsal = deepen(
        ledger,
        limits,
        snapshot.state.objects,
        rehearsal,
        `${result.plan.planner}+fallback`,
        DEEP_REDUCTION.keepSteps,
      );
      // The fallback's work shows in the plan; the view may end above what the planner left,
      // since the indexes of what it folded take back the room under the window.
      deepened = rehearsal.plan.planner !== planned.plan.planner;
      if (deepened) {
        const grown =
          rehearsal.tokensAfter > plannerLeft ? ', its indexes grown into the room under the window' : '';
        warnings.push({
          code: 'fallback-reduction',
          message: `the ${result.plan.planner} planner left ${plannerLeft} tokens; the fallback reduction took the view to ${rehearsal.tokensAfter}${grown}`,
        });
      }
    }
    const economics = weighCommit(
      {
        tokensBefore: rehearsal.tokensBefore,
        tokensAfter: rehearsal.tokensAfter,
        cachedPrefixTokens: prefixTokens(ledger, run.view, rehearsal.earliestEdit),
        futureCalls: expectedFutureCalls(ledger, run.view.tokens, limits.window, run.trigger === 'overflow'),
        ...(result.cost ? { gc: result.cost } : {}),
        cacheWarm: run.cacheWarm,
      },
      pricing,
    );
    const freed = rehearsal.tokensBefore - rehearsal.tokensAfter;
    const commitNow = commitsNow({
      policy: commitPolicy,
      tokensBefore: rehearsal.tokensBefore,
      freed,
      forced: blind || rehearsal.tokensAfter > limits.window || run.trigger === 'overflow',
      held: pendingSince !== undefined,
      minBatch: limits.minBatch,
      pays: economics.worthIt,
    });
    const decision: GovernanceDecision = {
      trigger: run.trigger,
      outcome:
        freed <= 0 ? 'nothing-to-free' : commitNow ? (deepened ? 'fallback' : 'committed') : 'deferred',
      cache: { saving: economics.saving, breakCost: economics.breakCost, gcCost: economics.gcCost },
    };
    const commits: CommitRecord[] = [];
    if (!commitNow) {
      const shortfall =
        decision.outcome === 'deferred' && commitPolicy === 'cost' && run.cacheWarm
          ? breakEvenGrowth(economics, freed, limits.minBatch)
          : 0;
      const deferral =
        shortfall > 0
          ? { reach: prefixTokens(ledger, run.view, latestTurnStart(ledger)), shortfall }
          : undefined;
      return { snapshot, decision, commits, planned, ...(deferral ? { deferral } : {}) };
    }
    const outcome = await commit(run.sessionId, ledger, snapshot, rehearsal, run.trigger, pendingSince);
    if (outcome.status === 'committed' || outcome.status === 'duplicate') {
      snapshot = { version: outcome.version, state: outcome.state };
      if (outcome.status === 'committed') commits.push(outcome.record);
    } else if (outcome.status === 'conflict') {
      warnings.push({ code: 'commit-conflict', message: 'another writer committed first; using its state' });
      snapshot = reconciledIn(
        ledger,
        await readSessionState(options.store, run.sessionId),
        warnings,
      ).snapshot;
    }
    return { snapshot, decision, commits, planned };
  }

  /**
   * Hard guarantee: the view fits. When the planner did not get there, reduce deterministically;
   * when the latest turn alone is too big, fold its largest outputs (recoverable with expand)
   * rather than send a request the provider would refuse.
   */
  async function fitTheWindow(
    sessionId: string,
    ledger: Ledger,
    limits: CallLimits,
    start: Snapshot,
    startView: View,
    warnings: Warning[],
  ): Promise<{ snapshot: Snapshot; view: View; commits: CommitRecord[] }> {
    let snapshot = start;
    let view = startView;
    const commits: CommitRecord[] = [];
    const rescues = [
      {
        run: fitWindow,
        code: 'fallback-reduction',
        say: (before: number, committed: CommitRecord) =>
          `planner left ${before} tokens, over the ${limits.window}-token window; the fallback reduction committed ${committed.commitId}`,
      },
      {
        run: foldLatestTurn,
        code: 'latest-turn-folded',
        say: (before: number, committed: CommitRecord) =>
          `the view needed ${before} tokens with the latest turn whole, more than the ${limits.window}-token window; the latest turn's largest outputs folded (${committed.operations.map((entry) => entry.objectId).join(', ')}), expand recovers them`,
      },
    ];
    for (const rescue of rescues) {
      if (view.tokens <= limits.window) break;
      const before = view.tokens;
      const outcome = await rescue.run(sessionId, ledger, limits, snapshot);
      if (!outcome) continue;
      commits.push(outcome.record);
      snapshot = { version: outcome.version, state: outcome.state };
      view = projectView(ledger, snapshot.state.objects, project);
      warnings.push({ code: rescue.code, message: rescue.say(before, outcome.record) });
    }
    if (view.tokens > limits.window) {
      let latestTurn = 0;
      for (let index = latestTurnStart(ledger); index < ledger.messages.length; index += 1)
        latestTurn += ledger.messageTokens[index] ?? 0;
      warnings.push({
        code: 'over-window',
        message: `the view needs ${view.tokens} tokens after every reduction, more than the ${limits.window}-token window; the latest turn alone is ${latestTurn} tokens, and what is pinned (instructions, requests that state rules) ${pinnedTokens(ledger)}`,
      });
    }
    return { snapshot, view, commits };
  }

  async function fitWindow(sessionId: string, ledger: Ledger, limits: CallLimits, snapshot: Snapshot) {
    const rehearsal = reduceWithFallback(ledger, limits, snapshot.state.objects);
    if (rehearsal.accepted.length === 0) return undefined;
    const outcome = await commit(sessionId, ledger, snapshot, rehearsal, 'overflow');
    return outcome.status === 'committed' ? outcome : undefined;
  }

  /**
   * Last resort when the latest turn alone is over the window: fold its outputs (those a client
   * attached to its requests too), largest first, until the view fits (or nothing is left to fold).
   */
  async function foldLatestTurn(sessionId: string, ledger: Ledger, limits: CallLimits, snapshot: Snapshot) {
    const state = snapshot.state.objects;
    const from = latestTurnStart(ledger);
    // Copies of outputs a client attached to the turn (Claude Code's files re-read after its
    // compaction) fold before the turn's own results, which the agent's next step reads; largest
    // first in each.
    const outputs = ledger.objects
      .filter((object) => isToolOutput(object) && object.messageIndex >= from && !state[object.id])
      .sort(
        (a, b) =>
          Number(a.attachedTo === undefined) - Number(b.attachedTo === undefined) || b.tokens - a.tokens,
      );
    const allowLatest = { ...limits.rehearse, protectFrom: ledger.messages.length };
    const operations: PlannedOperation[] = [];
    let rehearsal: Rehearsal | undefined;
    for (const object of outputs) {
      // A fold of an output smaller than that is about as big as it.
      if (object.pinned || object.tokens < EMBEDDED_PLANNER.minTokens) continue;
      operations.push({
        objectId: object.id,
        operation: 'fold',
        reason: 'the latest turn alone is over the window',
      });
      rehearsal = rehearsePlan(ledger, state, { planner: 'fallback', operations }, allowLatest);
      if (rehearsal.tokensAfter <= limits.window) break;
    }
    if (!rehearsal || rehearsal.accepted.length === 0) return undefined;
    const outcome = await commit(sessionId, ledger, snapshot, rehearsal, 'overflow');
    return outcome.status === 'committed' ? outcome : undefined;
  }

  /**
   * A skip that may last many calls still keeps the stored cache clock within half a TTL of this
   * call: a governor that has not seen the session (another instance or worker) reads it from the
   * state, and would take a warm cache for a cold one and break it.
   */
  async function keepCallTime(sessionId: string, snapshot: Snapshot, callTime: number) {
    const stored = snapshot.state.triggers.lastCallTime;
    if (stored !== undefined && callTime - stored <= pricing.ttlMs / 2) return snapshot;
    const state: SessionState = {
      ...snapshot.state,
      triggers: { ...snapshot.state.triggers, lastCallTime: callTime },
    };
    const written = await options.store.writeState(sessionId, state, snapshot.version);
    return written.status === 'written' ? { version: written.version, state } : snapshot;
  }

  async function recordRun(sessionId: string, governed: Governed, ledger: Ledger, callTime: number) {
    const { snapshot } = governed;
    const triggers = withoutDeferral(snapshot.state.triggers);
    const state: SessionState = {
      ...snapshot.state,
      ...(ledger.messages.length > 0 ? { head: bindingAt(ledger, ledger.messages.length) } : {}),
      triggers: {
        ...triggers,
        lastRunAt: ledger.messages.length,
        fruitlessRuns: governed.commits.length > 0 ? 0 : triggers.fruitlessRuns + 1,
        lastCallTime: callTime,
        ...(governed.deferral ? { deferral: governed.deferral } : {}),
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
 * counts twice, since a deep commit now also puts the next one further off (commits near a
 * session's end, which never pay back, wait).
 */
function expectedFutureCalls(ledger: Ledger, viewTokens: number, window: number, forced: boolean): number {
  let calls = 0;
  for (const message of ledger.messages) if (message.role === 'assistant') calls += 1;
  const expected = Math.min(GOVERNOR.futureCalls.max, Math.max(GOVERNOR.futureCalls.min, calls));
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
