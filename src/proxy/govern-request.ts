/**
 * The governance step of a governed request: ask the governor for the view of the session that
 * fits the window with what the request needs beyond its messages (tool definitions,
 * instructions, the output reserve) and put it in the body, or, when that fails, serve the
 * request ungoverned (fail open) or refuse it.
 */
import type { ElementReading } from '../adapters/read-resume.js';
import { toSelfGcError } from '../core/errors.js';
import type { Governor, ProjectResult } from '../core/governor/governor-types.js';
import { countMessageTokens } from '../core/ledger.js';
import { withoutRecoveryRoute } from '../core/render-replacement.js';
import type { Message } from '../core/transcript.js';
import { AGENT_MODE, GOVERNOR } from '../core/tuning.js';
import { withinDeadline } from '../stores/within-deadline.js';
import { PROXY_TOOL_PREFIX } from './agent-tools.js';
import type { ProxySettings } from './proxy-options.js';
import { type RequestReserve, reserveOf } from './request-reserve.js';
import type { RequestTrace } from './request-trace.js';
import type { SessionIdentity } from './session-identity.js';
import { type LaneReason, OVER_WINDOW, reduceStatelessly, TOKENS_BOUND_HEADER } from './stateless-lane.js';
import { hasRecoveryPointers } from './transparent-recovery.js';
import type { JsonObject, ToolDefinition, WireDialect } from './wire-dialect.js';

/** The proxy's own warning: the reserve alone fills the window, so no view can fit. */
export const RESERVE_OVER_WINDOW = 'reserve-over-window';
/** The proxy left its recovery tools out of the request: they would have taken the view's least room. */
export const RECOVERY_WITHHELD = 'recovery-withheld';

export interface GovernedBody {
  /**
   * The body to send, or undefined to send the client's bytes unchanged (the input's `body`
   * itself, when governance left the transcript as it came, is sent as those bytes too).
   */
  body: JsonObject | undefined;
  /** The governor and its answer, when governance ran. */
  governor?: Governor;
  result?: ProjectResult;
  /**
   * Tokens the conversation may take in any request sent for this one: the view's room plus the
   * room kept free for the pages recovery appends.
   */
  conversationRoom?: number;
  /**
   * Counts what governance only bounded and prepares the next call (`ProjectResult.settle` and
   * `afterSend`): run it once the body is sent.
   */
  settle?: () => void;
  /** The proxy's tools stay out of this request: with them, the view would have less than its least room. */
  toolsWithheld?: true;
  /**
   * The stateless lane took the request (`throughLane`): earlier requests of its conversation may
   * have gone governed, whether or not the lane changed this one.
   */
  lane?: true;
}

export interface GovernInput {
  dialect: WireDialect;
  body: JsonObject;
  model: string;
  transcript: Message[];
  /** How the body's conversation was read into `transcript` (see `WireDialect.writeTranscript`). */
  read?: ElementReading;
  identity: SessionIdentity;
  trace: Pick<RequestTrace, 'arm' | 'entry'>;
  /** The client's request headers (the window may depend on them). */
  requestHeaders: Headers;
  /** The `x-selfgc-*` headers of the answer (filled in here). */
  headers: Headers;
  /** Tools the proxy may add to the body after governance (recovery). */
  proxyTools: readonly ToolDefinition[];
  /**
   * Whether the proxy answers recovery calls for this request. When it does not, the view's
   * recovery pointers become plain keys: a fold promises only a route the client has.
   */
  recoveryRoute: boolean;
  /** The agent-driven mode: the view ends with the context ledger, and the window keeps room for it. */
  agentTools?: boolean;
  signal: AbortSignal;
  /** Send the request through the stateless lane instead of governing it (it is over budget). */
  lane?: LaneReason;
  /** `transcriptChain(transcript)`, when the transcript cache knows it. */
  chain?: readonly string[];
}

export type GovernSettings = Pick<
  ProxySettings,
  'failOpen' | 'metrics' | 'now' | 'governorFor' | 'windowFor' | 'tokenCounterFor' | 'reserveOutput'
> & {
  /** Governance that takes longer is left to finish on its own; the request takes the stateless lane. */
  governanceTimeBudgetMs?: number | undefined;
};

/** Governance ran past its time budget. */
class OverTimeBudget extends Error {}

/** `work`, or a rejection with `OverTimeBudget` once `budgetMs` have passed (work goes on, unheard). */
function withinBudget<T>(work: Promise<T>, budgetMs: number | undefined): Promise<T> {
  return budgetMs === undefined ? work : withinDeadline(work, budgetMs, () => new OverTimeBudget());
}

/** A request governance did not take, reduced into the window by the stateless lane. */
function throughLane(settings: GovernSettings, input: GovernInput, reason: LaneReason): GovernedBody {
  const governance = reason === 'over-size' || reason === 'over-time' ? 'over-budget' : 'fail-open';
  input.headers.set('x-selfgc-governance', governance);
  input.trace.entry.governance = governance;
  return { body: reduceStatelessly(settings, input, reason), lane: true };
}

export async function governRequest(settings: GovernSettings, input: GovernInput): Promise<GovernedBody> {
  const { dialect, trace, headers } = input;
  const labels = { arm: trace.arm };
  const ungoverned = dialect.ungovernedReason?.(input.body);
  const leave = (reason: string): GovernedBody => {
    headers.set('x-selfgc-governance', reason);
    trace.entry.governance = reason;
    return { body: undefined };
  };
  if (trace.arm !== 'governed' || ungoverned !== undefined) return leave(ungoverned ?? 'off');
  if (input.lane !== undefined) return throughLane(settings, input, input.lane);
  const window = settings.windowFor(input.model, input.requestHeaders);
  const governor = settings.governorFor({ provider: dialect.provider, model: input.model, window });
  if (governor === undefined) return leave('off');
  const started = settings.now();
  let result: ProjectResult;
  let reserve: RequestReserve;
  let { recoveryRoute, agentTools } = input;
  try {
    const reserveWith = (proxyTools: readonly ToolDefinition[]) =>
      reserveOf({
        dialect,
        body: input.body,
        window,
        tokenCounter: settings.tokenCounterFor(dialect.provider),
        ...(settings.reserveOutput === undefined ? {} : { reserveOutput: settings.reserveOutput }),
        proxyTools,
      });
    reserve = reserveWith(input.proxyTools);
    // The proxy's tools (and the agent-driven mode's ledger message) must not take the view's
    // least room: the governor would give the view that room anyway (the room kept for recovered
    // pages first), and a request that fits as the client sent it would go over the window as the
    // proxy sends it. (When what the client sends beside the conversation fills the window, no
    // request fits, with the tools or without.)
    const leastRoom = Math.min(GOVERNOR.minViewTokens, window);
    const ledgerRoom = agentTools ? AGENT_MODE.ledgerMessageTokens : 0;
    if (
      input.proxyTools.length > 0 &&
      window - sentBeside(reserve) - ledgerRoom < leastRoom &&
      sentBeside(reserve) - reserve.proxyToolTokens < window
    ) {
      reserve = reserveWith([]);
      recoveryRoute = false;
      agentTools = false;
    }
    // A view that may get more than the room it has is counted, not bounded, so that a request
    // over the window says so (such a view is small).
    const tight = window - sentBeside(reserve) < leastRoom;
    result = await withinBudget(
      governor.project(input.identity.storeSessionId, input.transcript, {
        signal: input.signal,
        reservedTokens: reserve.total + (agentTools ? AGENT_MODE.ledgerMessageTokens : 0),
        // The ledger message shows the budget: counted, not bounded.
        deferCounting: agentTools !== true && !tight,
        ...(agentTools
          ? { ledgerMessage: { maxTokens: AGENT_MODE.ledgerMessageTokens, toolPrefix: PROXY_TOOL_PREFIX } }
          : {}),
        ...(input.chain === undefined ? {} : { chain: input.chain }),
      }),
      settings.governanceTimeBudgetMs,
    );
  } catch (error) {
    if (error instanceof OverTimeBudget) return throughLane(settings, input, 'over-time');
    const selfGcError = toSelfGcError(error);
    if (!settings.failOpen || input.signal.aborted) throw selfGcError;
    settings.metrics.count('selfgc_proxy_errors_total', { ...labels, code: selfGcError.code });
    settings.metrics.count('selfgc_proxy_fail_open_total', labels);
    trace.entry.error = selfGcError.code;
    trace.entry.detail = selfGcError.message;
    return throughLane(
      settings,
      input,
      selfGcError.code === 'store-failure' ? 'store-unavailable' : 'governance-failed',
    );
  } finally {
    settings.metrics.observe('selfgc_proxy_planner_seconds', labels, (settings.now() - started) / 1000);
  }
  const saved = Math.max(0, result.transcriptTokens - result.viewTokens);
  settings.metrics.count('selfgc_proxy_transcript_tokens_total', labels, result.transcriptTokens);
  settings.metrics.count('selfgc_proxy_tokens_saved_total', labels, saved);
  // What goes upstream in the conversation: the view, and the ledger message after it.
  const viewTokens =
    result.viewTokens +
    (result.ledgerMessage
      ? countMessageTokens(settings.tokenCounterFor(dialect.provider), result.ledgerMessage)
      : 0);
  // The prompt as a whole, before and after: messages plus what the client sends beside them.
  const tokensBefore = result.transcriptTokens + reserve.promptTokens;
  const tokensAfter = viewTokens + reserve.promptTokens;
  headers.set('x-selfgc-tokens-before', String(tokensBefore));
  headers.set('x-selfgc-tokens-after', String(tokensAfter));
  headers.set('x-selfgc-output-reserve', String(reserve.outputTokens));
  headers.set('x-selfgc-governance', result.decision.outcome);
  // The newest messages were not counted before sending: the figures are upper bounds.
  if (result.settle !== undefined) headers.set(TOKENS_BOUND_HEADER, 'true');
  const warnings = new Set(result.warnings.map((warning) => warning.code));
  if (recoveryRoute !== input.recoveryRoute) warnings.add(RECOVERY_WITHHELD);
  if (reserve.total >= window) warnings.add(RESERVE_OVER_WINDOW);
  // What stands beside the view may leave it less than its least room: the request is over then.
  else if (result.settle === undefined) {
    const toolsSent = recoveryRoute && (agentTools || hasRecoveryPointers(result.view));
    const beside = sentBeside(reserve) - (toolsSent ? 0 : reserve.proxyToolTokens);
    if (viewTokens + beside > window) warnings.add(OVER_WINDOW);
  }
  if (warnings.size > 0) headers.set('x-selfgc-warnings', [...warnings].join(','));
  Object.assign(trace.entry, {
    tokensBefore,
    tokensAfter,
    outputReserve: reserve.outputTokens,
    governance: result.decision.outcome,
    ...(result.settle === undefined ? {} : { tokensBound: true }),
    ...(warnings.size > 0 ? { warnings: [...warnings] } : {}),
  });
  if (result.divergence) {
    settings.metrics.count('selfgc_proxy_divergences_total', labels);
    trace.entry.divergedAt = result.divergence.at;
    trace.entry.droppedStates = result.divergence.dropped.length;
  }
  if (result.commits.length > 0) {
    // Usually one; a window rescue after the planner's commit makes two.
    const ids = result.commits.map((commit) => commit.commitId).join(', ');
    settings.metrics.count('selfgc_proxy_commits_total', labels, result.commits.length);
    headers.set('x-selfgc-commit', ids);
    trace.entry.commit = ids;
  }
  const conversationRoom = Math.max(0, window - reserve.total + reserve.recoveryTokens);
  const view = recoveryRoute ? result.view : withoutRecoveryRoute(result.view);
  // The ledger goes last: the prefix before it is the one the provider cached.
  const sent = result.ledgerMessage ? [...view, result.ledgerMessage] : view;
  // A view that is the transcript as read leaves the body as it came: it is not written again.
  const asCame = isTheTranscript(sent, input.transcript) && dialect.sendsAsCame?.(input.body) !== false;
  return {
    body: asCame ? input.body : dialect.writeTranscript(input.body, sent, input.read),
    governor,
    result: { ...result, view, viewTokens },
    conversationRoom,
    ...afterSending(result),
    ...(recoveryRoute === input.recoveryRoute ? {} : { toolsWithheld: true as const }),
  };
}

/** What goes upstream beside the view: the reserve less the room kept for recovered pages. */
function sentBeside(reserve: RequestReserve): number {
  return reserve.total - reserve.recoveryTokens;
}

/** `ProjectResult.settle` and `afterSend`, as one step to run once the body is sent. */
function afterSending({ settle, afterSend }: ProjectResult): { settle?: () => void } {
  const steps = [settle, afterSend].filter((step) => step !== undefined);
  if (steps.length === 0) return {};
  return {
    settle: () => {
      for (const step of steps) step();
    },
  };
}

/** Whether `view` holds the transcript's own messages, all of them and only them, in order. */
function isTheTranscript(view: readonly Message[], transcript: readonly Message[]): boolean {
  return view.length === transcript.length && view.every((message, index) => message === transcript[index]);
}
